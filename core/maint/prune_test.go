package maint

import (
	"os"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// prunable makes what prune is for: a retained audit (of base, "" for
// main) owned by rev whose checkout is gone.
func (f *fixture) prunable(task, name, base string) store.Allocation {
	f.t.Helper()
	a := f.allocate(task, "rev", "audit", name, base)
	f.retain(name, "rev")
	if err := os.RemoveAll(f.path(name)); err != nil {
		f.t.Fatal(err)
	}
	return f.allocation(a.AllocationID)
}

// registered reports whether the store binds and registers key.
func (f *fixture) registered(key string) (bound, registered bool) {
	f.t.Helper()
	if err := f.r.Store.Read(func(tx *store.Tx) error {
		var err error
		if _, bound, err = tx.Binding(key); err != nil {
			return err
		}
		_, _, registered, err = tx.Registration(key)
		return err
	}); err != nil {
		f.t.Fatal(err)
	}
	return bound, registered
}

// wantPruned fails unless allocation a was released by a prune of
// worktree name: no registration in git or the store, no journal.
func (f *fixture) wantPruned(a store.Allocation, name string) {
	f.t.Helper()
	if f.listed(f.path(name)) {
		f.t.Fatalf("git still lists %s", name)
	}
	if _, err := os.Lstat(gitrepo.AdminDir(f.r.Git.CommonDir, name)); !os.IsNotExist(err) {
		f.t.Fatalf("the admin dir of %s remains: %v", name, err)
	}
	if bound, reg := f.registered(name); bound || reg {
		f.t.Fatalf("%s: bound %t, registered %t", name, bound, reg)
	}
	got := f.allocation(a.AllocationID)
	if got.Lifecycle != store.Released || got.Owner != unassignedOwner || got.RecordVersion != a.RecordVersion+1 {
		f.t.Fatalf("allocation after prune: %+v", got)
	}
	if js := f.journals(); len(js) != 0 {
		f.t.Fatalf("journals left: %+v", js)
	}
}

// TestPrune: the dry run proves the plan; apply with its id removes the
// registration and releases the allocation, other worktrees untouched;
// once done it answers GC_ALREADY_APPLIED.
func TestPrune(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.allocate("T-1", "alice", "", "w1", "")
	a := f.prunable("R-1", "r1", "")
	r1 := f.path("r1")
	dry, err := Prune(f.ctx, f.r, r1, "rev", "")
	if err != nil {
		t.Fatal(err)
	}
	p := dry.Plan
	if dry.Code != decision.PruneReady || !dry.DryRun || p.AllocationID != a.AllocationID || p.WorktreeKey != "r1" ||
		p.ExpectedHead != f.ref("main") || p.PreservingRef != "refs/heads/main" || p.PreservingOID != f.ref("main") ||
		p.ExpectedRecordVersion != a.RecordVersion || p.Contract != PruneContract {
		t.Fatalf("plan: %+v", dry)
	}
	if id, _ := PlanID(p); id != dry.PlanID {
		t.Fatalf("plan id %s is not the plan's %s", dry.PlanID, id)
	}
	done, err := Prune(f.ctx, f.r, r1, "rev", dry.PlanID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Code != decision.RegistrationPruned || done.TransactionID == "" || done.ResumedFrom != "" {
		t.Fatalf("apply: %+v", done)
	}
	f.wantPruned(a, "r1")
	if !f.listed(f.path("w1")) || f.ref("refs/heads/wt/T-1") == "" {
		t.Fatal("another worktree was touched")
	}
	_, err = Prune(f.ctx, f.r, r1, "rev", dry.PlanID)
	wttest.WantCode(t, err, decision.GCAlreadyApplied)
	_, err = Prune(f.ctx, f.r, r1, "rev", "")
	wttest.WantCode(t, err, decision.GCAlreadyApplied)
}

// TestPruneRefusals: each precondition of docs/decisions.md ("Prune")
// refuses with its code, from a real state, and nothing is removed.
func TestPruneRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.git(f.main, "branch", "side")
	f.commit(f.main, "on main")
	f.git(f.main, "checkout", "-q", "side")
	f.commit(f.main, "only on side")
	f.git(f.main, "checkout", "-q", "main")

	f.allocate("T-1", "alice", "", "w1", "") // a task, present
	f.allocate("R-2", "rev", "audit", "r2", "")
	f.retain("r2", "rev") // its checkout still there
	f.allocate("R-3", "rev", "audit", "r3", "")
	f.git(f.path("r3"), "switch", "-q", "-c", "b3")
	f.retain("r3", "rev")
	os.RemoveAll(f.path("r3")) // on a branch
	f.allocate("R-4", "rev", "audit", "r4", "")
	os.RemoveAll(f.path("r4")) // not retained
	f.prunable("R-5", "r5", "")
	f.allocate("R-6", "rev", "audit", "r6", "")
	f.commit(f.path("r6"), "review notes")
	f.retain("r6", "rev")
	os.RemoveAll(f.path("r6")) // HEAD moved
	a7 := f.prunable("R-7", "r7", "")
	f.prunable("R-8", "r8", "side") // main lacks its HEAD
	a9 := f.prunable("R-9", "r9", "")
	f.prunable("R-10", "r10", "")
	f.git(f.main, "worktree", "lock", "--reason", "kept", f.path("r10"))
	// An unmanaged worktree whose checkout is gone.
	f.git(f.main, "worktree", "add", "-q", "--detach", f.path("u1"))
	os.RemoveAll(f.path("u1"))

	for _, c := range []struct {
		name, path, owner, code, msg string
	}{
		{"the canonical checkout", f.main, "rev", decision.PrunableStateInvalid, "canonical checkout"},
		{"a task's present checkout", f.path("w1"), "alice", decision.PrunableStateInvalid, "wt-admin finish --task T-1 --owner alice"},
		{"a present checkout", f.path("r2"), "rev", decision.PrunableStateInvalid, "not prunable"},
		{"a branch checked out", f.path("r3"), "rev", decision.PrunableStateInvalid, "has branch b3 checked out"},
		{"an ACTIVE audit", f.path("r4"), "rev", decision.LifecycleNotReleasable, "wt-admin retain"},
		{"another owner", f.path("r5"), "mallory", decision.ActiveOwner, `owned by "rev"`},
		{"a moved HEAD", f.path("r6"), "rev", decision.TaskEvidencePresent, "moved from its base"},
		{"HEAD not in main", f.path("r8"), "rev", decision.MissingRetainedRef, "not contained in refs/heads/main"},
		{"locked", f.path("r10"), "rev", decision.PrunableStateInvalid, ""}, // TestPruneLockedMessage
		{"not wt's", f.path("u1"), "rev", decision.RecordMissing, "has no allocation"},
		{"not a worktree", f.path("nowhere"), "rev", decision.PrunableStateInvalid, "git lists no worktree"},
		{"no owner", f.path("r5"), "", decision.InvalidOwner, ""},
	} {
		_, err := Prune(f.ctx, f.r, c.path, c.owner, "")
		if decision.CodeOf(err) != c.code || !strings.Contains(said(err), c.msg) {
			t.Errorf("%s: %v, want %s (%q)", c.name, err, c.code, c.msg)
		}
	}
	_, err := Prune(f.ctx, f.r, f.path("r5"), "rev", "abc")
	wttest.WantCode(t, err, decision.Usage)

	// Bound under a second key.
	f.write(func(tx *store.Tx) error {
		return tx.PutBinding(&store.Binding{WorktreeKey: "zz", AllocationID: a9.AllocationID})
	})
	_, err = Prune(f.ctx, f.r, f.path("r9"), "rev", "")
	wttest.WantCode(t, err, decision.BindingDrift)
	f.write(func(tx *store.Tx) error { return tx.RemoveBinding("zz") })

	// A writer lease.
	f.write(func(tx *store.Tx) error {
		return tx.PutLease(&store.Lease{LeaseID: "00000000-0000-4000-8000-000000000007", AllocationID: a7.AllocationID,
			WorktreePath: f.path("r7"), Owner: "rev", AcquiredAt: store.Now(), RenewedAt: store.Now()})
	})
	_, err = Prune(f.ctx, f.r, f.path("r7"), "rev", "")
	wttest.WantCode(t, err, decision.LeasePresent)

	// Every refused target is still registered.
	for _, name := range []string{"r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "u1"} {
		if !f.listed(f.path(name)) {
			t.Errorf("a refusal removed %s", name)
		}
	}
}

// TestPruneApplyDrift: apply recomputes the plan and refuses one that
// changed (GC_PLAN_DRIFT), a checkout that came back (PATH_REAPPEARED),
// and another journal naming the allocation (INTERRUPTED_TRANSACTION).
func TestPruneApplyDrift(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.prunable("R-1", "r1", "")
	f.prunable("R-2", "r2", "")
	a3 := f.prunable("R-3", "r3", "")
	plan := func(name string) string {
		t.Helper()
		res, err := Prune(f.ctx, f.r, f.path(name), "rev", "")
		if err != nil {
			t.Fatal(err)
		}
		return res.PlanID
	}
	p1, p2 := plan("r1"), plan("r2")

	f.commit(f.main, "main moves on")
	p3 := plan("r3")
	_, err := Prune(f.ctx, f.r, f.path("r1"), "rev", p1)
	wttest.WantCode(t, err, decision.GCPlanDrift)
	if d, _ := decision.As(err); d.Facts["plan_id"] != plan("r1") {
		t.Fatalf("the refusal does not give the new plan id: %+v", d.Facts)
	}

	if err := os.Mkdir(f.path("r2"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Prune(f.ctx, f.r, f.path("r2"), "rev", p2)
	wttest.WantCode(t, err, decision.PathReappeared)

	// Another operation's journal names allocation a3.
	f.plantJournal("task-finish", "/elsewhere", PhasePrepared, map[string]string{"allocation_id": a3.AllocationID})
	_, err = Prune(f.ctx, f.r, f.path("r3"), "rev", "")
	wttest.WantCode(t, err, decision.InterruptedTx)
	_, err = Prune(f.ctx, f.r, f.path("r3"), "rev", p3)
	wttest.WantCode(t, err, decision.InterruptedTx)

	for _, name := range []string{"r1", "r2", "r3"} {
		if !f.listed(f.path(name)) {
			t.Errorf("a refused apply removed %s", name)
		}
	}
}

// TestPruneLockedMessage: a locked audit whose checkout is gone is refused
// for its lock, with the lock's reason and the unlock command. (git never
// lists a locked worktree as prunable: the refusal said "its checkout is
// still there" of a checkout that was gone, and never named the lock.)
func TestPruneLockedMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.prunable("R-1", "r1", "")
	f.git(f.main, "worktree", "lock", "--reason", "kept", f.path("r1"))
	_, err := Prune(f.ctx, f.r, f.path("r1"), "rev", "")
	wttest.WantCode(t, err, decision.PrunableStateInvalid)
	if !strings.Contains(said(err), "is locked (kept)") || !strings.Contains(said(err), "worktree unlock") {
		t.Fatalf("the refusal does not name the lock: %s", said(err))
	}
}
