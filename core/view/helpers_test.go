package view

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// TestMain keeps the tests' git, and the git the views run, away from the
// configuration of the user and of the machine, and gives commits an
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

func newFixture(t *testing.T, change alloc.PolicyChange) *fixture {
	t.Helper()
	top, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: context.Background(), top: top, dir: filepath.Join(top, "repo")}
	runGit(t, top, "init", "-q", "-b", "main", f.dir)
	runGit(t, f.dir, "commit", "-q", "--allow-empty", "-m", "one")
	f.base = runGit(t, f.dir, "rev-parse", "HEAD")
	if _, err := alloc.Init(f.ctx, f.dir, change); err != nil {
		t.Fatal(err)
	}
	if f.r, err = alloc.Open(f.ctx, f.dir); err != nil {
		t.Fatal(err)
	}
	return f
}

// runGit runs git in dir and returns its output, trimmed.
func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (f *fixture) git(args ...string) string {
	f.t.Helper()
	return runGit(f.t, f.dir, args...)
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
