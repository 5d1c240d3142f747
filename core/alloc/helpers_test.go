package alloc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// TestMain keeps the tests' git, and the git the package runs, away from
// the configuration of the user and of the machine, and gives commits an
// identity. It runs before any test, so no test races with it.
func TestMain(m *testing.M) {
	for k, v := range map[string]string{
		"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@wt.invalid",
		"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@wt.invalid",
	} {
		os.Setenv(k, v)
	}
	os.Exit(m.Run())
}

// fixture is a repository set up by Init in a temporary directory: its
// canonical checkout (dir) on main, at one commit (base).
type fixture struct {
	t    *testing.T
	ctx  context.Context
	top  string // the temporary directory, symlinks resolved
	dir  string // the canonical checkout
	base string // main's commit
	r    *Repo
}

// newFixture makes the repository and runs Init with change.
func newFixture(t *testing.T, change PolicyChange) *fixture {
	t.Helper()
	top, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: context.Background(), top: top, dir: filepath.Join(top, "repo")}
	runGit(t, top, "init", "-q", "-b", "main", f.dir)
	runGit(t, f.dir, "commit", "-q", "--allow-empty", "-m", "one")
	f.base = runGit(t, f.dir, "rev-parse", "HEAD")
	res, err := Init(f.ctx, f.dir, change)
	if err != nil {
		t.Fatal(err)
	}
	if res.Code != decision.StoreInitialized {
		t.Fatalf("Init: %+v", res)
	}
	if f.r, err = Open(f.ctx, f.dir); err != nil {
		t.Fatal(err)
	}
	return f
}

// runGit runs git in dir and returns its output, trimmed.
func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// git runs git in the canonical checkout.
func (f *fixture) git(args ...string) string {
	f.t.Helper()
	return runGit(f.t, f.dir, args...)
}

// path is a path beside the canonical checkout.
func (f *fixture) path(name string) string { return filepath.Join(f.top, name) }

// allocate allocates a feature worktree of task for owner at path name.
func (f *fixture) allocate(task, owner, name string) store.Allocation {
	f.t.Helper()
	res, err := f.r.Allocate(f.ctx, Request{TaskKey: task, Owner: owner, Path: f.path(name)})
	if err != nil {
		f.t.Fatalf("allocate %s: %v", task, err)
	}
	return res.Allocation
}

// write runs fn in a write section of the store.
func (f *fixture) write(fn func(tx *store.Tx) error) {
	f.t.Helper()
	if err := f.r.Store.Write(fn); err != nil {
		f.t.Fatal(err)
	}
}

// setPolicy changes the policy, failing the test on a refusal.
func (f *fixture) setPolicy(c PolicyChange) {
	f.t.Helper()
	if _, err := f.r.SetPolicy(f.ctx, c); err != nil {
		f.t.Fatal(err)
	}
}

// allocations are the store's allocation records.
func (f *fixture) allocations() []store.Allocation {
	f.t.Helper()
	var all []store.Allocation
	if err := f.r.Store.Read(func(tx *store.Tx) (err error) { all, err = tx.Allocations(); return err }); err != nil {
		f.t.Fatal(err)
	}
	return all
}

// journals are the store's journals in flight.
func (f *fixture) journals() []store.Journal {
	f.t.Helper()
	var js []store.Journal
	if err := f.r.Store.Read(func(tx *store.Tx) (err error) { js, err = tx.Journals(); return err }); err != nil {
		f.t.Fatal(err)
	}
	return js
}

// events are the events of events.jsonl, oldest first.
func (f *fixture) events() []store.Event {
	f.t.Helper()
	file, err := os.Open(filepath.Join(f.r.Store.Root(), "events.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	defer file.Close()
	var out []store.Event
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		var e store.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			f.t.Fatalf("events.jsonl: %v: %s", err, sc.Bytes())
		}
		out = append(out, e)
	}
	return out
}

// eventNames are the names of the events, oldest first.
func (f *fixture) eventNames() []string {
	f.t.Helper()
	var names []string
	for _, e := range f.events() {
		names = append(names, e.Event)
	}
	return names
}

// deadActor is the identity of a process of another boot: never live.
var deadActor = proc.Identity{BootID: "00000000-0000-4000-8000-000000000000", PID: 4242, StartTicks: 1}

// plan writes the journal of an allocate that planned a for its worktree
// and was interrupted by the end of actor.
func (f *fixture) plan(a store.Allocation, actor proc.Identity) store.Journal {
	f.t.Helper()
	payload, err := json.Marshal(a)
	if err != nil {
		f.t.Fatal(err)
	}
	now := store.Now()
	j := store.Journal{TransactionID: ids.New(), Operation: OpAllocate, Phase: phasePrepared, Actor: actor,
		Target: a.WorktreePath, Payload: payload, CreatedAt: now, UpdatedAt: now}
	f.write(func(tx *store.Tx) error { return tx.PutJournal(&j) })
	return j
}

// planned is an allocation plan of task on branch (nil: detached) at the
// path name, from main's commit.
func (f *fixture) planned(task, name string, branch *string) store.Allocation {
	now := store.Now()
	return store.Allocation{AllocationID: ids.New(), TaskKey: task, Owner: "alice", Role: store.RoleFeature,
		Lifecycle: store.Active, WorktreePath: f.path(name), Branch: branch, BaseCommit: f.base,
		ExternalBindings: []string{}, CreatedAt: now, UpdatedAt: now}
}

// wantCode fails the test unless err carries decision code.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := decision.CodeOf(err); got != code {
		t.Fatalf("got %q (%v), want %s", got, err, code)
	}
}

// fact is the fact key of a decision error (nil when none).
func fact(err error, key string) any {
	var de *decision.Error
	if !errors.As(err, &de) {
		return nil
	}
	return de.Facts[key]
}

func ptr[T any](v T) *T { return &v }

// self is this process as a lease holder: live while the test runs.
func self(t *testing.T) proc.Holder {
	t.Helper()
	id, err := proc.Self()
	if err != nil {
		t.Skip("this process cannot be described:", err)
	}
	return proc.Holder{ClientID: "test", PID: id.PID, BootID: id.BootID, StartTicks: id.StartTicks}
}

// writeFile writes content to the file at p, making its directory.
func writeFile(p, content string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), 0o644)
}

// sameJSON reports whether a and b encode alike (a nil and an empty list
// are one value in a record).
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}
