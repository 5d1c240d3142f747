package maint

import (
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// unmanaged adds, behind wt's back, a worktree named name on a new branch
// with a commit of its own, and returns that commit.
func (f *fixture) unmanaged(name, branch string) string {
	f.t.Helper()
	f.git(f.main, "worktree", "add", "-q", "-b", branch, f.path(name))
	return f.commit(f.path(name), "work on "+branch)
}

// adopt runs the dry run and, when it plans, the apply of its plan id.
func (f *fixture) adopt(req AdoptRequest) (AdoptResult, AdoptResult, error) {
	f.t.Helper()
	dry, err := Adopt(f.ctx, f.r, req)
	if err != nil {
		return dry, AdoptResult{}, err
	}
	if dry.Code != decision.AdoptReady || !dry.DryRun {
		f.t.Fatalf("dry run: %+v", dry)
	}
	req.Apply = dry.PlanID
	done, err := Adopt(f.ctx, f.r, req)
	return dry, done, err
}

// TestAdopt: an existing linked worktree becomes a task's, its branch
// kept (or renamed to the task layout's), its records as allocate writes
// them; adopted, it is governed and not adopted twice.
func TestAdopt(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tip := f.unmanaged("u1", "feat")
	dry, done, err := f.adopt(AdoptRequest{Path: f.path("u1"), Task: "T-1", Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	p := dry.Plan
	if p.Branch != "feat" || p.Tip != tip || p.WorktreeKey != "u1" || p.WorktreePath != f.path("u1") || p.Lock != nil || p.RenamedFrom != "" {
		t.Fatalf("plan: %+v", p)
	}
	if done.Code != decision.Adopted || done.AllocationID == "" || done.LeaseID != "" {
		t.Fatalf("apply: %+v", done)
	}
	a := f.allocation(done.AllocationID)
	if a.TaskKey != "T-1" || a.Owner != "alice" || a.Lifecycle != store.Active || a.Branch == nil || *a.Branch != "feat" || a.BaseCommit != tip {
		t.Fatalf("allocation: %+v", a)
	}
	if bound, reg := f.registered("u1"); !bound || !reg {
		t.Fatalf("bound %t, registered %t", bound, reg)
	}
	_, err = Adopt(f.ctx, f.r, AdoptRequest{Path: f.path("u1"), Task: "T-9", Owner: "alice"})
	wttest.WantCode(t, err, decision.InvalidTarget)

	// --rename-branch: the branch takes the task layout's name.
	tip2 := f.unmanaged("u2", "feat2")
	dry, _, err = f.adopt(AdoptRequest{Path: f.path("u2"), Task: "T-2", Owner: "alice", RenameBranch: true})
	if err != nil {
		t.Fatal(err)
	}
	if dry.Plan.RenamedFrom != "feat2" || dry.Plan.Branch != "wt/T-2" {
		t.Fatalf("rename plan: %+v", dry.Plan)
	}
	if f.ref("refs/heads/wt/T-2") != tip2 || f.ref("refs/heads/feat2") != "" {
		t.Fatal("the branch was not renamed")
	}
	// The layout's name taken already.
	f.unmanaged("u3", "feat3")
	f.git(f.main, "branch", "wt/T-3")
	_, err = Adopt(f.ctx, f.r, AdoptRequest{Path: f.path("u3"), Task: "T-3", Owner: "alice", RenameBranch: true})
	wttest.WantCode(t, err, decision.BranchExists)
}

// TestAdoptRefusals: what adopt never takes, each with its code, and a
// plan that changed since the dry run.
func TestAdoptRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.unmanaged("u1", "feat")
	f.git(f.main, "worktree", "add", "-q", "--detach", f.path("d1"))
	f.git(f.main, "worktree", "add", "-q", "-b", "empty", f.path("e1"))
	f.git(f.path("e1"), "checkout", "-q", "--orphan", "unborn")
	f.git(f.main, "worktree", "add", "-q", "-f", f.path("m1"), "main") // main is checked out in repo
	f.allocate("T-1", "alice", "", "w1", "")
	other := newFixture(t)
	other.unmanaged("o1", "feat")
	for _, c := range []struct {
		name string
		req  AdoptRequest
		code string
	}{
		{"a bad task key", AdoptRequest{Path: f.path("u1"), Task: "a b", Owner: "alice"}, decision.InvalidTaskKey},
		{"a bad owner", AdoptRequest{Path: f.path("u1"), Task: "T-2", Owner: ""}, decision.InvalidOwner},
		{"a bad plan id", AdoptRequest{Path: f.path("u1"), Task: "T-2", Owner: "alice", Apply: "abc"}, decision.Usage},
		{"the canonical checkout", AdoptRequest{Path: f.main, Task: "T-2", Owner: "alice"}, decision.InvalidTarget},
		{"another repository's", AdoptRequest{Path: other.path("o1"), Task: "T-2", Owner: "alice"}, decision.InvalidTarget},
		{"a detached HEAD", AdoptRequest{Path: f.path("d1"), Task: "T-2", Owner: "alice"}, decision.InvalidBranch},
		{"a branch with no commit", AdoptRequest{Path: f.path("e1"), Task: "T-2", Owner: "alice"}, decision.InvalidBranch},
		{"the publication branch", AdoptRequest{Path: f.path("m1"), Task: "T-2", Owner: "alice"}, decision.InvalidBranch},
		{"governed already", AdoptRequest{Path: f.path("w1"), Task: "T-2", Owner: "alice"}, decision.InvalidTarget},
		{"a task key in use", AdoptRequest{Path: f.path("u1"), Task: "T-1", Owner: "alice"}, decision.TaskKeyInUse},
		{"a holder not running", AdoptRequest{Path: f.path("u1"), Task: "T-2", Owner: "alice",
			Holder: &proc.Holder{ClientID: "gone", PID: math.MaxInt32, BootID: "x", StartTicks: 1}}, decision.InvalidHolder},
		{"another plan", AdoptRequest{Path: f.path("u1"), Task: "T-2", Owner: "alice", Apply: strings.Repeat("0", 64)}, decision.ResourcePlanMismatch},
	} {
		if _, err := Adopt(f.ctx, f.r, c.req); decision.CodeOf(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
	if bound, _ := f.registered("u1"); bound {
		t.Fatal("a refused adopt bound u1")
	}

	// A running holder named: the adoption grants it the lease. (A process
	// using the worktree, WORKTREE_IN_USE, needs a process other than
	// this one, which a scan counts as its own: adopt.txtar has it.)
	self, err := proc.Self()
	if err != nil {
		t.Fatal(err)
	}
	h := proc.Holder{ClientID: "agent", PID: self.PID, BootID: self.BootID, StartTicks: self.StartTicks}
	_, done, err := f.adopt(AdoptRequest{Path: f.path("u1"), Task: "T-2", Owner: "alice", Holder: &h})
	if err != nil {
		t.Fatal(err)
	}
	if done.LeaseID == "" {
		t.Fatalf("the named holder got no lease: %+v", done)
	}
	f.write(func(tx *store.Tx) error {
		l, ok, err := tx.Lease(done.AllocationID)
		if err != nil || !ok || l.Holder.Identity() != self {
			t.Errorf("lease %+v %t %v", l, ok, err)
		}
		return nil
	})
}

// TestAdoptForeignLock: another tool's git lock is lifted only when the
// pid its reason names is proven gone, or is the named holder.
func TestAdoptForeignLock(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	lock := func(name, reason string) {
		f.unmanaged(name, "b-"+name)
		f.git(f.main, "worktree", "lock", "--reason", reason, f.path(name))
	}
	gone := strconv.Itoa(math.MaxInt32) // above any pid_max: no process has it
	lock("u1", "claude agent 7c1e (pid "+gone+")")
	lock("u2", "in use")
	lock("u3", "pid "+strconv.Itoa(os.Getpid()))
	lock("u4", "pid=0")

	dry, done, err := f.adopt(AdoptRequest{Path: f.path("u1"), Task: "T-1", Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if l := dry.Plan.Lock; l == nil || l.PID != math.MaxInt32 || !strings.Contains(l.Why, "whoever locked it is gone") {
		t.Fatalf("lock plan: %+v", dry.Plan.Lock)
	}
	if done.Code != decision.Adopted {
		t.Fatalf("apply: %+v", done)
	}
	if out := f.git(f.main, "worktree", "list", "--porcelain"); strings.Contains(out, "locked claude") {
		t.Fatal("the lock was not lifted")
	}
	for _, name := range []string{"u2", "u3", "u4"} {
		_, err := Adopt(f.ctx, f.r, AdoptRequest{Path: f.path(name), Task: "T-" + name, Owner: "alice"})
		wttest.WantCode(t, err, decision.ForeignLock)
	}
	// The running pid named as the holder: its lock becomes its lease's.
	self, err := proc.Self()
	if err != nil {
		t.Fatal(err)
	}
	h := proc.Holder{ClientID: "agent", PID: self.PID, BootID: self.BootID, StartTicks: self.StartTicks}
	dry, err = Adopt(f.ctx, f.r, AdoptRequest{Path: f.path("u3"), Task: "T-3", Owner: "alice", Holder: &h})
	if err != nil {
		t.Fatal(err)
	}
	if l := dry.Plan.Lock; l == nil || l.PID != self.PID || !strings.Contains(l.Why, "named as the holder") {
		t.Fatalf("lock plan: %+v", dry.Plan.Lock)
	}
}
