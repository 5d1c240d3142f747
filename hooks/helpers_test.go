package hooks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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

// fixture is a repository set up by policy.Init in a temporary directory:
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
	res, err := policy.Init(f.ctx, f.dir, change)
	if err != nil {
		t.Fatal(err)
	}
	if res.Code != decision.StoreInitialized {
		t.Fatalf("Init: %+v", res)
	}
	if f.r, err = alloc.Open(f.ctx, f.dir); err != nil {
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

// allocate allocates a worktree of task with role ("" for feature) at path name.
func (f *fixture) allocate(task, role, name string) store.Allocation {
	f.t.Helper()
	res, err := f.r.Allocate(f.ctx, alloc.Request{TaskKey: task, Owner: "alice", Role: role, Path: f.path(name), NewTask: true})
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

// setPolicy changes the policy, failing the test on a refusal.
func (f *fixture) setPolicy(c policy.Change) {
	f.t.Helper()
	if _, err := policy.Set(f.ctx, f.r.Git, f.r.Store, c); err != nil {
		f.t.Fatal(err)
	}
}

// lease writes a writer lease of allocation a held by h, matching the
// records; change, if not nil, edits it before it is written.
func (f *fixture) lease(a store.Allocation, h proc.Holder, change func(l *store.Lease)) store.Lease {
	f.t.Helper()
	var l store.Lease
	f.write(func(tx *store.Tx) error {
		repo, err := tx.Repository()
		if err != nil {
			return err
		}
		l = store.Lease{LeaseID: ids.New(), RepositoryID: repo.RepositoryID, AllocationID: a.AllocationID,
			WorktreePath: a.WorktreePath, Owner: a.Owner, Holder: h, Generation: 1,
			AcquiredAt: store.Now(), RenewedAt: store.Now()}
		if change != nil {
			change(&l)
		}
		return tx.PutLease(&l)
	})
	return l
}

// events are the names of the store's events, oldest first.
func (f *fixture) events() []string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.r.Store.Root(), "events.jsonl"))
	if err != nil && !os.IsNotExist(err) {
		f.t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.Index(line, `"event":"`); i >= 0 {
			rest := line[i+len(`"event":"`):]
			out = append(out, rest[:strings.Index(rest, `"`)])
		}
	}
	return out
}

// deadHolder is a holder on another boot: never live.
var deadHolder = proc.Holder{ClientID: "gone", PID: 4242, BootID: "00000000-0000-4000-8000-000000000000", StartTicks: 1}

// self is this process as a holder: live while the test runs, and an
// ancestor (itself) of os.Getpid().
func self(t *testing.T) proc.Holder {
	t.Helper()
	id, err := proc.Self()
	if err != nil {
		t.Skip("this process cannot be described:", err)
	}
	return proc.Holder{ClientID: "test", PID: id.PID, BootID: id.BootID, StartTicks: id.StartTicks}
}

// me is the pid the gate judges for a process that descends from self;
// other is one that does not (this process's parent, which is older).
var me, other = os.Getpid(), os.Getppid()

func ptr[T any](v T) *T { return &v }

// wantVerdict fails the test unless v has the code and allowance given.
func wantVerdict(t *testing.T, v Verdict, err error, code string, allowed bool) {
	t.Helper()
	if err != nil {
		t.Fatalf("error %v (verdict %+v)", err, v)
	}
	if v.Code != code || v.Allowed != allowed {
		t.Fatalf("got code %q allowed %v (%s), want %q allowed %v", v.Code, v.Allowed, v.Reason, code, allowed)
	}
	if (v.Refusal != nil) != (code != decision.Entitled && code != decision.Unmanaged && code != decision.DedicatedRoleGate) {
		t.Fatalf("refusal %v with code %q", v.Refusal, code)
	}
}
