package maint

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// finish runs a dry run and, when it plans, the apply of its plan id.
func (f *fixture) finish(req FinishRequest) (FinishResult, FinishResult, error) {
	f.t.Helper()
	dry, err := Finish(f.ctx, f.r, req)
	if err != nil {
		return dry, FinishResult{}, err
	}
	if dry.Code != decision.FinishReady || !dry.DryRun {
		f.t.Fatalf("dry run: %+v", dry)
	}
	req.Apply = dry.PlanID
	done, err := Finish(f.ctx, f.r, req)
	return dry, done, err
}

// TestFinishMerged: a clean task whose branch main contains is finished:
// its worktree removed (never forced), its branch deleted, its allocation
// released; run again, the apply is GC_ALREADY_APPLIED.
func TestFinishMerged(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.allocate("T-1", "alice", "", "w1", "")
	dry, done, err := f.finish(FinishRequest{Path: f.path("w1"), Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	p := dry.Plan
	if p.Checkout != CheckoutPresent || p.Branch != "wt/T-1" || !p.DeleteBranch || len(p.Archive) != 0 ||
		p.PublicationRef != "refs/heads/main" || p.AllocationID != a.AllocationID || p.Head != f.ref("main") {
		t.Fatalf("plan: %+v", p)
	}
	if done.Code != decision.TaskFinished || done.TransactionID == "" || done.ResumedFrom != "" {
		t.Fatalf("apply: %+v", done)
	}
	if f.listed(f.path("w1")) || f.ref("refs/heads/wt/T-1") != "" {
		t.Fatal("the worktree or the branch remains")
	}
	if _, err := os.Stat(f.path("w1")); !os.IsNotExist(err) {
		t.Fatalf("the checkout remains: %v", err)
	}
	got := f.allocation(a.AllocationID)
	if got.Lifecycle != store.Released || got.Owner != unassignedOwner || got.RecordVersion != a.RecordVersion+1 {
		t.Fatalf("allocation after finish: %+v", got)
	}
	if js := f.journals(); len(js) != 0 {
		t.Fatalf("journals left: %+v", js)
	}
	_, err = Finish(f.ctx, f.r, FinishRequest{Path: f.path("w1"), Owner: "alice", Apply: dry.PlanID})
	wttest.WantCode(t, err, decision.GCAlreadyApplied)
	_, err = Finish(f.ctx, f.r, FinishRequest{Task: "T-1", Owner: "alice"})
	wttest.WantCode(t, err, decision.GCAlreadyApplied)
	// The task key is free again.
	f.allocate("T-1", "alice", "", "w1b", "")
}

// TestFinishUnmerged: work main lacks refuses a finish (UNMERGED_COMMITS)
// and nothing is touched; with --archive it is kept under
// refs/wt/archive/<task>/<n> (the next free n) before the branch goes.
func TestFinishUnmerged(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.allocate("T-1", "alice", "", "w1", "")
	f.commit(f.path("w1"), "one")
	work := f.commit(f.path("w1"), "two")
	_, err := Finish(f.ctx, f.r, FinishRequest{Path: f.path("w1"), Owner: "alice"})
	wttest.WantCode(t, err, decision.UnmergedCommits)
	if d, _ := decision.As(err); d.Facts["unmerged"] == nil {
		t.Fatalf("no unmerged fact: %+v", d)
	}
	if !f.listed(f.path("w1")) || f.ref("refs/heads/wt/T-1") != work {
		t.Fatal("a refused finish touched the task")
	}
	// An archive ref of an earlier finish of the same task is not reused.
	f.git(f.main, "update-ref", "refs/wt/archive/T-1/1", f.ref("main"))
	dry, done, err := f.finish(FinishRequest{Task: "T-1", Owner: "alice", Archive: true})
	if err != nil {
		t.Fatal(err)
	}
	want := ArchivedRef{Ref: "refs/wt/archive/T-1/2", OID: work, Commits: 2}
	if len(dry.Plan.Archive) != 1 || dry.Plan.Archive[0] != want {
		t.Fatalf("archive plan %+v, want %+v", dry.Plan.Archive, want)
	}
	if done.Code != decision.TaskFinished {
		t.Fatalf("apply: %+v", done)
	}
	if f.ref("refs/wt/archive/T-1/2") != work || f.ref("refs/heads/wt/T-1") != "" || f.listed(f.path("w1")) {
		t.Fatal("the work is not kept under the archive ref, or the task remains")
	}
}

// TestFinishHeadAndBranchApart: a HEAD off the task branch is archived
// too: one ref when one tip contains the other, two when they diverge.
func TestFinishHeadAndBranchApart(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.allocate("T-1", "alice", "", "w1", "")
	w1 := f.path("w1")
	first := f.commit(w1, "one")
	second := f.commit(w1, "two")
	f.git(w1, "checkout", "-q", "--detach", first)
	dry, err := Finish(f.ctx, f.r, FinishRequest{Path: w1, Owner: "alice", Archive: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Plan.Archive) != 1 || dry.Plan.Archive[0].OID != second {
		t.Fatalf("HEAD behind the branch: archive %+v, want one ref at %s", dry.Plan.Archive, second)
	}
	side := f.commit(w1, "side")
	dry, err = Finish(f.ctx, f.r, FinishRequest{Path: w1, Owner: "alice", Archive: true})
	if err != nil {
		t.Fatal(err)
	}
	if a := dry.Plan.Archive; len(a) != 2 || a[0].OID != second || a[1].OID != side || a[1].Ref != "refs/wt/archive/T-1/2" {
		t.Fatalf("diverged: archive %+v", a)
	}
}

// TestFinishRefusals: each precondition of a finish refuses with its code,
// and leaves the task as it was.
func TestFinishRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.allocate("T-1", "alice", "", "w1", "")
	w1 := f.path("w1")
	for _, c := range []struct {
		name string
		req  FinishRequest
		code string
	}{
		{"path and task", FinishRequest{Path: w1, Task: "T-1", Owner: "alice"}, decision.Usage},
		{"neither", FinishRequest{Owner: "alice"}, decision.Usage},
		{"no owner", FinishRequest{Path: w1}, decision.InvalidOwner},
		{"a bad task key", FinishRequest{Task: "no spaces", Owner: "alice"}, decision.InvalidTaskKey},
		{"a bad plan id", FinishRequest{Path: w1, Owner: "alice", Apply: "abc"}, decision.Usage},
		{"another owner", FinishRequest{Path: w1, Owner: "bob"}, decision.OwnerMismatch},
		{"an unknown task", FinishRequest{Task: "T-9", Owner: "alice"}, decision.InvalidTarget},
		{"the canonical checkout", FinishRequest{Path: f.main, Owner: "alice"}, decision.InvalidTarget},
	} {
		_, err := Finish(f.ctx, f.r, FinishRequest{Path: c.req.Path, Task: c.req.Task, Owner: c.req.Owner, Apply: c.req.Apply})
		if decision.CodeOf(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}

	// Uncommitted and untracked changes.
	if err := os.WriteFile(filepath.Join(w1, "new.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Finish(f.ctx, f.r, FinishRequest{Path: w1, Owner: "alice"})
	wttest.WantCode(t, err, decision.WorktreeDirty)
	if d, _ := decision.As(err); len(d.Facts["changes"].([]string)) != 1 {
		t.Fatalf("changes: %+v", d.Facts)
	}
	if err := os.Remove(filepath.Join(w1, "new.txt")); err != nil {
		t.Fatal(err)
	}

	// The task branch checked out elsewhere.
	f.git(f.main, "checkout", "-q", "--ignore-other-worktrees", "wt/T-1")
	_, err = Finish(f.ctx, f.r, FinishRequest{Path: w1, Owner: "alice"})
	wttest.WantCode(t, err, decision.WorktreeInUse)
	f.git(f.main, "checkout", "-q", "main")

	// A lock on the worktree.
	f.git(f.main, "worktree", "lock", "--reason", "busy", w1)
	_, err = Finish(f.ctx, f.r, FinishRequest{Path: w1, Owner: "alice"})
	wttest.WantCode(t, err, decision.WorktreeInUse)
	f.git(f.main, "worktree", "unlock", w1)

	// A writer lease.
	f.write(func(tx *store.Tx) error {
		return tx.PutLease(&store.Lease{LeaseID: "00000000-0000-4000-8000-000000000001", AllocationID: a.AllocationID,
			WorktreePath: w1, Owner: "alice", AcquiredAt: store.Now(), RenewedAt: store.Now()})
	})
	_, err = Finish(f.ctx, f.r, FinishRequest{Path: w1, Owner: "alice"})
	wttest.WantCode(t, err, decision.LeasePresent)
	f.write(func(tx *store.Tx) error { return tx.RemoveLease(a.AllocationID) })

	// No publication branch.
	f.git(f.main, "checkout", "-q", "--detach")
	f.git(f.main, "branch", "-q", "-m", "main", "trunk")
	_, err = Finish(f.ctx, f.r, FinishRequest{Path: w1, Owner: "alice"})
	wttest.WantCode(t, err, decision.MissingRetainedRef)
	f.git(f.main, "branch", "-q", "-m", "trunk", "main")

	// Every refusal left the task as it was: registered, its branch at
	// its base, its record unchanged, no journal.
	if !f.listed(w1) || f.git(f.main, "rev-parse", "refs/heads/wt/T-1") != a.BaseCommit {
		t.Errorf("a refusal changed the worktree or its branch")
	}
	if got := f.allocation(a.AllocationID); got.RecordVersion != a.RecordVersion || got.Lifecycle != a.Lifecycle {
		t.Errorf("a refusal changed the record: %+v, was %+v", got, a)
	}
	if js := f.journals(); len(js) != 0 {
		t.Errorf("a refusal left journals: %+v", js)
	}
	// Still finishable after all of it.
	if _, _, err := f.finish(FinishRequest{Path: w1, Owner: "alice"}); err != nil {
		t.Fatal(err)
	}
}

// TestFinishLanded: work wt-admin land landed rebased (not an ancestor of
// main, but in it all the same, its landing record says) needs no
// archive; without that record it is unmerged.
func TestFinishLanded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.allocate("T-1", "alice", "", "w1", "")
	f.commit(f.main, "main moves on")
	work := f.commit(f.path("w1"), "work")
	f.git(f.main, "cherry-pick", "--allow-empty", "--keep-redundant-commits", work)
	_, err := Finish(f.ctx, f.r, FinishRequest{Task: "T-1", Owner: "alice"})
	wttest.WantCode(t, err, decision.UnmergedCommits)
	landing := store.Landing{Meta: store.Meta{SchemaVersion: store.SchemaVersion}, AllocationID: a.AllocationID, TaskKey: "T-1",
		State: store.LandingLanded, Source: work, Result: f.ref("main")}
	f.write(func(tx *store.Tx) error { return tx.PutLanding(&landing) })
	dry, done, err := f.finish(FinishRequest{Task: "T-1", Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Plan.Archive) != 0 || !dry.Plan.DeleteBranch || done.Code != decision.TaskFinished || f.ref("refs/heads/wt/T-1") != "" {
		t.Fatalf("plan %+v, apply %+v", dry.Plan, done)
	}
}
