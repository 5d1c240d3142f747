package maint

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
)

// TestMain keeps every git away from the configuration of the user and of
// the machine (gittest.Setenv), before any test runs.
func TestMain(m *testing.M) {
	gittest.Setenv()
	os.Exit(m.Run())
}

// fixture is a real repository set up by wt (alloc.Init), its worktrees
// beside it in one temporary directory.
type fixture struct {
	t    *testing.T
	ctx  context.Context
	dir  string // holds the repository and the worktrees
	main string // the canonical checkout, on branch main
	r    *alloc.Repo
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir, main, _ := gittest.Repo(t)
	f := &fixture{t: t, ctx: context.Background(), dir: dir, main: main}
	if _, err := policy.Init(f.ctx, f.main, policy.Change{}); err != nil {
		t.Fatal(err)
	}
	r, err := alloc.Open(f.ctx, f.main)
	if err != nil {
		t.Fatal(err)
	}
	f.r = r
	return f
}

// git runs git in dir and returns its output, trimmed.
func (f *fixture) git(dir string, args ...string) string {
	f.t.Helper()
	return gittest.Git(f.t, dir, args...)
}

// path is where worktree name lives.
func (f *fixture) path(name string) string { return filepath.Join(f.dir, name) }

// allocate makes a governed worktree named name (its path and key) for
// task, a feature on wt/<task> unless role says audit; base "" is main.
func (f *fixture) allocate(task, owner, role, name, base string) store.Allocation {
	f.t.Helper()
	res, err := f.r.Allocate(f.ctx, alloc.Request{TaskKey: task, Owner: owner, Role: role, Base: base, Path: f.path(name), NewTask: true})
	if err != nil {
		f.t.Fatalf("allocate %s: %v", task, err)
	}
	return res.Allocation
}

// retain makes the allocation at worktree name RETAINED.
func (f *fixture) retain(name, owner string) {
	f.t.Helper()
	if _, err := f.r.Retain(f.ctx, f.path(name), owner, nil); err != nil {
		f.t.Fatalf("retain %s: %v", name, err)
	}
}

// commit makes an empty commit in checkout dir and returns it.
func (f *fixture) commit(dir, msg string) string {
	f.t.Helper()
	f.git(dir, "commit", "-q", "--allow-empty", "-m", msg)
	return f.git(dir, "rev-parse", "HEAD")
}

// ref is the object ref names, "" when it does not exist.
func (f *fixture) ref(name string) string {
	f.t.Helper()
	out, err := exec.Command("git", "-C", f.main, "rev-parse", "-q", "--verify", name).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// worktrees lists the paths git lists.
func (f *fixture) worktrees() []string {
	f.t.Helper()
	var out []string
	for _, l := range strings.Split(f.git(f.main, "worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok {
			out = append(out, p)
		}
	}
	return out
}

// listed reports whether git lists a worktree at path.
func (f *fixture) listed(path string) bool {
	for _, p := range f.worktrees() {
		if p == path {
			return true
		}
	}
	return false
}

// allocation reads allocation id.
func (f *fixture) allocation(id string) store.Allocation {
	f.t.Helper()
	var a store.Allocation
	if err := f.r.Store.Read(func(tx *store.Tx) error {
		var err error
		a, err = tx.Allocation(id)
		return err
	}); err != nil {
		f.t.Fatal(err)
	}
	return a
}

// journals lists the journals in flight.
func (f *fixture) journals() []store.Journal {
	f.t.Helper()
	var js []store.Journal
	if err := f.r.Store.Read(func(tx *store.Tx) error {
		var err error
		js, err = tx.Journals()
		return err
	}); err != nil {
		f.t.Fatal(err)
	}
	return js
}

// write runs fn under the store's exclusive lock, failing the test on an
// error.
func (f *fixture) write(fn func(tx *store.Tx) error) {
	f.t.Helper()
	if err := f.r.Store.Write(fn); err != nil {
		f.t.Fatal(err)
	}
}

// plantJournal leaves the journal a crashed apply of op on target would
// have left in phase, holding payload (a plan and its id).
func (f *fixture) plantJournal(op, target, phase string, payload any) store.Journal {
	f.t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		f.t.Fatal(err)
	}
	j := freshJournal()
	j.Operation, j.Target, j.Phase, j.Payload = op, target, phase, b
	f.write(func(tx *store.Tx) error { return tx.PutJournal(&j) })
	return j
}

// said is a refusal's message and hint, or err's text.
func said(err error) string {
	if d, ok := decision.As(err); ok {
		return d.Message + "\n" + d.Hint
	}
	if err == nil {
		return ""
	}
	return err.Error()
}
