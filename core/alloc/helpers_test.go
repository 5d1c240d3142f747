package alloc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
)

// TestMain keeps every git away from the configuration of the user and of
// the machine (gittest.Setenv), before any test runs.
func TestMain(m *testing.M) {
	gittest.Setenv()
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
func newFixture(t *testing.T, change policy.Change) *fixture {
	t.Helper()
	top, dir, base := gittest.Repo(t)
	f := &fixture{t: t, ctx: context.Background(), top: top, dir: dir, base: base}
	res, err := policy.Init(f.ctx, f.dir, change)
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

// git runs git in the canonical checkout.
func (f *fixture) git(args ...string) string {
	f.t.Helper()
	return gittest.Git(f.t, f.dir, args...)
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
func (f *fixture) setPolicy(c policy.Change) {
	f.t.Helper()
	if _, err := policy.Set(f.ctx, f.r.Git, f.r.Store, c); err != nil {
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

// fact is the fact key of a decision error (nil when none).
func fact(err error, key string) any {
	var de *decision.Error
	if !errors.As(err, &de) {
		return nil
	}
	return de.Facts[key]
}

func ptr[T any](v T) *T { return &v }

// writeFile writes content to the file at p, making its directory.
func writeFile(p, content string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), 0o644)
}
