package view

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
)

// TestMain keeps every git away from the configuration of the user and of
// the machine (gittest.Env), before any test runs.
func TestMain(m *testing.M) {
	gittest.Setenv()
	os.Exit(m.Run())
}

// fixture is a repository set up by alloc.Init in a temporary directory:
// its canonical checkout (dir) on main, at one commit (base).
type fixture struct {
	t    *testing.T
	ctx  context.Context
	top  string // the temporary directory, symlinks resolved
	dir  string // the canonical checkout
	base string // main's commit
	r    *alloc.Repo
}

func newFixture(t *testing.T, change policy.Change) *fixture {
	t.Helper()
	top, dir, base := gittest.Repo(t)
	f := &fixture{t: t, ctx: context.Background(), top: top, dir: dir, base: base}
	var err error
	if _, err := policy.Init(f.ctx, f.dir, change); err != nil {
		t.Fatal(err)
	}
	if f.r, err = alloc.Open(f.ctx, f.dir); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) git(args ...string) string {
	f.t.Helper()
	return gittest.Git(f.t, f.dir, args...)
}

func (f *fixture) path(name string) string { return filepath.Join(f.top, name) }

// allocate allocates a worktree of task with role at path name.
func (f *fixture) allocate(task, role, name string) store.Allocation {
	f.t.Helper()
	res, err := f.r.Allocate(f.ctx, alloc.Request{TaskKey: task, Owner: "alice", Role: role, Path: f.path(name)})
	if err != nil {
		f.t.Fatalf("allocate %s: %v", task, err)
	}
	return res.Allocation
}

func (f *fixture) write(fn func(tx *store.Tx) error) {
	f.t.Helper()
	if err := f.r.Store.Write(fn); err != nil {
		f.t.Fatal(err)
	}
}

// lease writes a writer lease of allocation a held by h.
func (f *fixture) lease(a store.Allocation, h proc.Holder) store.Lease {
	f.t.Helper()
	l := store.Lease{LeaseID: ids.New(), AllocationID: a.AllocationID, WorktreePath: a.WorktreePath, Owner: a.Owner,
		Holder: h, Generation: 1, AcquiredAt: store.Now(), RenewedAt: store.Now()}
	f.write(func(tx *store.Tx) error { return tx.PutLease(&l) })
	return l
}

// status reads the status view, with what a commit meets from gate.
func (f *fixture) status(gate GateCheck) StatusResult {
	f.t.Helper()
	res, err := Status(f.ctx, f.r, gate)
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

// row is the status row of the worktree at path.
func row(t *testing.T, res StatusResult, path string) Row {
	t.Helper()
	for _, r := range res.Rows {
		if r.Path == path {
			return r
		}
	}
	t.Fatalf("no row of %s in %+v", path, res.Rows)
	return Row{}
}

// codes are the problems' codes, in order; an alarm's is marked with a
// leading "!".
func codes(ps []Problem) []string {
	out := []string{}
	for _, p := range ps {
		c := p.Code
		if p.Alarm {
			c = "!" + c
		}
		out = append(out, c)
	}
	return out
}

// deadHolder is a holder on another boot: never live.
var deadHolder = proc.Holder{ClientID: "gone", PID: 4242, BootID: "00000000-0000-4000-8000-000000000000", StartTicks: 1}

// self is this process as a holder: live while the test runs.
func self(t *testing.T) proc.Holder {
	t.Helper()
	id, err := proc.Self()
	if err != nil {
		t.Skip("this process cannot be described:", err)
	}
	return proc.Holder{ClientID: "test", PID: id.PID, BootID: id.BootID, StartTicks: id.StartTicks}
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := decision.CodeOf(err); got != code {
		t.Fatalf("got %q (%v), want %s", got, err, code)
	}
}
