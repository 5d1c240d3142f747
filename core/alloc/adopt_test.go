package alloc

import (
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// TestAdoptChecks: adopt applies allocate's rules to the task and the
// branch of the worktree it takes over, and refuses the publication
// branch.
func TestAdoptChecks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	f.allocate("T-1", "alice", "w1")
	b := "wt/P-1"
	f.plan(f.planned("P-1", "p1", &b), wttest.Self(t).Identity())
	for _, c := range []struct {
		task, branch string
		newTask      bool
		want         string
	}{
		{"T-2", "feat", false, ""},
		{"T-1", "feat", false, decision.TaskKeyInUse},
		{"P-1", "feat", false, decision.TaskKeyInUse},
		{"t-01", "feat", false, decision.TaskKeySimilar},
		{"t-01", "feat", true, ""},
		{"T-2", "main", false, decision.InvalidBranch},
		{"T-2", "wt/T-1", false, decision.BranchExists},
		{"T-2", b, false, decision.BranchExists},
	} {
		var err error
		f.write(func(tx *store.Tx) error { err = f.r.AdoptChecks(tx, c.task, c.branch, c.newTask); return nil })
		if got := decision.CodeOf(err); got != c.want {
			t.Errorf("AdoptChecks(%s, %s, %v): %v, want %q", c.task, c.branch, c.newTask, err, c.want)
		}
	}
	f.setPolicy(policy.Change{MaxActive: ptr("1")})
	var err error
	f.write(func(tx *store.Tx) error { err = f.r.AdoptChecks(tx, "T-2", "feat", false); return nil })
	wttest.WantCode(t, err, decision.BudgetExhausted)
}

// TestWriteAdopted: an adopted worktree gets the records allocate writes
// (its branch as it is, its tip as its base), an allocation_adopted event
// with the caller's detail, and its ledger's baseline; it then resolves,
// and its branch is guarded.
func TestWriteAdopted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	path := f.path("mine")
	f.git("worktree", "add", "-q", "-b", "feat", path)
	key := keyOf(t, f.r.Git.CommonDir, path)
	var a store.Allocation
	f.write(func(tx *store.Tx) (err error) {
		a, err = f.r.WriteAdopted(tx, "T-9", "carol", path, key, "feat", f.base, map[string]any{"plan_id": "p1"})
		return err
	})
	if a.TaskKey != "T-9" || a.Owner != "carol" || a.Role != store.RoleFeature || a.Lifecycle != store.Active ||
		a.WorktreePath != path || a.WorktreeKey != key || *a.Branch != "feat" || a.BaseCommit != f.base {
		t.Errorf("allocation: %+v", a)
	}
	var tg Target
	f.write(func(tx *store.Tx) (err error) { tg, err = f.r.Resolve(tx, path); return err })
	if tg.Allocation.AllocationID != a.AllocationID {
		t.Errorf("resolved: %+v", tg)
	}
	ev := f.events()
	last := ev[len(ev)-1]
	if last.Event != "allocation_adopted" || last.Detail["plan_id"] != "p1" || last.Detail["branch"] != "feat" || last.Detail["owner"] != "carol" {
		t.Errorf("event: %+v", last)
	}
	led, err := store.ReadLedger(f.r.Store.Root(), a.AllocationID, "refs/heads/feat")
	if err != nil || len(led.Lines) != 1 || led.Lines[0].Via != store.ViaInit || led.Lines[0].New != f.base {
		t.Errorf("ledger: %+v %v", led, err)
	}
	// The branch index names it: the store, not only git, guards it.
	f.write(func(tx *store.Tx) error {
		owner, ok, err := tx.BranchAllocation("refs/heads/feat")
		if err != nil || !ok || owner.AllocationID != a.AllocationID {
			t.Errorf("branch index: %+v %v %v", owner, ok, err)
		}
		return nil
	})
	_, err = f.r.Allocate(f.ctx, Request{TaskKey: "T-10", Owner: "carol", Branch: "feat", Path: f.path("x")})
	wttest.WantCode(t, err, decision.BranchExists)
}
