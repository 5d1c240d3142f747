package maint

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// A crash is simulated by leaving what an apply killed at that point
// leaves: its journal at the last phase it recorded, with the git work of
// the next step done or not.

// prunePlanned is the dry run of prune on worktree name.
func (f *fixture) prunePlanned(name string) PruneResult {
	f.t.Helper()
	res, err := Prune(f.ctx, f.r, f.path(name), "rev", "")
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

// crashedPrune leaves the journal of an apply of dry killed in phase.
func (f *fixture) crashedPrune(dry PruneResult, phase string) store.Journal {
	f.t.Helper()
	return f.plantJournal(opPrune, dry.Plan.TargetPath, phase, pruneJournal{Plan: dry.Plan, PlanID: dry.PlanID})
}

// TestPruneResume: an apply killed at any point is finished by the same
// apply run again, which says where it resumed; the release is never
// made twice.
func TestPruneResume(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i, c := range []struct {
		name  string
		phase string
		// crash does what the killed apply did after its last recorded phase.
		crash func(dry PruneResult)
	}{
		{"before git ran", PhasePrepared, func(PruneResult) {}},
		{"after git removed it", PhasePrepared, func(dry PruneResult) {
			f.git(f.main, "worktree", "prune")
		}},
		{"within git's removal", PhasePrepared, func(dry PruneResult) {
			// git deletes the admin dir file by file: gitdir first.
			if err := os.Remove(filepath.Join(dry.Plan.AdminPath, "gitdir")); err != nil {
				t.Fatal(err)
			}
		}},
		{"after the removal was recorded", PhaseRemoved, func(PruneResult) {
			f.git(f.main, "worktree", "prune")
		}},
		{"after the release was recorded", PhaseReleased, func(dry PruneResult) {
			f.git(f.main, "worktree", "prune")
			f.write(func(tx *store.Tx) error {
				p := dry.Plan
				return release(tx, "prune", p.AllocationID, p.ExpectedRecordVersion, p.Owner, p.WorktreeKey)
			})
		}},
	} {
		name := fmt.Sprintf("r%d", i)
		a := f.prunable(fmt.Sprintf("R-%d", i), name, "")
		dry := f.prunePlanned(name)
		j := f.crashedPrune(dry, c.phase)
		c.crash(dry)

		_, err := Prune(f.ctx, f.r, f.path(name), "rev", "")
		wttest.WantCode(t, err, decision.InterruptedTx)
		if !strings.Contains(said(err), "--apply "+dry.PlanID) {
			t.Errorf("%s: the dry run does not say how to finish: %s", c.name, said(err))
		}
		done, err := Prune(f.ctx, f.r, f.path(name), "rev", dry.PlanID)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if done.Code != decision.RegistrationPruned || done.ResumedFrom != c.phase || done.TransactionID != j.TransactionID {
			t.Errorf("%s: %+v", c.name, done)
		}
		f.wantPruned(a, name)
		_, err = Prune(f.ctx, f.r, f.path(name), "rev", dry.PlanID)
		wttest.WantCode(t, err, decision.GCAlreadyApplied)
	}
}

// TestPruneResumeRefusals: an interrupted apply is finished only as
// planned: by the same plan id and owner, in a phase prune knows, with the
// records and git as the plan left them; every refusal leaves the journal.
func TestPruneResumeRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	other := strings.Repeat("0", 64)
	for i, c := range []struct {
		name  string
		phase string
		owner string
		apply string // "" for the plan's id
		crash func(dry PruneResult, j *store.Journal)
		code  string
	}{
		{"another plan id", PhasePrepared, "rev", other, nil, decision.GCPlanDrift},
		{"another owner", PhasePrepared, "mallory", "", nil, decision.ActiveOwner},
		{"an unknown phase", "HALF_DONE", "rev", "", nil, decision.GCPlanDrift},
		{"an unreadable journal", PhasePrepared, "rev", "", func(_ PruneResult, j *store.Journal) {
			j.Payload = []byte(`{"plan": 1}`)
		}, decision.InvalidMetadata},
		{"the checkout came back", PhasePrepared, "rev", "", func(dry PruneResult, _ *store.Journal) {
			if err := os.Mkdir(dry.Plan.TargetPath, 0o755); err != nil {
				t.Fatal(err)
			}
		}, decision.PathReappeared},
		{"listed after its removal was recorded", PhaseRemoved, "rev", "", nil, decision.GCPlanDrift},
		{"the allocation changed", PhasePrepared, "rev", "", func(dry PruneResult, _ *store.Journal) {
			f.write(func(tx *store.Tx) error {
				a, err := tx.Allocation(dry.Plan.AllocationID)
				if err != nil {
					return err
				}
				a.Owner = "someone"
				return tx.PutAllocation(&a)
			})
		}, decision.GCPlanDrift},
		{"its HEAD is no longer kept", PhasePrepared, "rev", "", func(dry PruneResult, _ *store.Journal) {
			f.git(f.main, "update-ref", "refs/heads/main", f.git(f.main, "commit-tree", "-m", "rewritten", "HEAD^{tree}"))
		}, decision.MissingRetainedRef},
	} {
		name := fmt.Sprintf("r%d", i)
		f.prunable(fmt.Sprintf("R-%d", i), name, "")
		dry := f.prunePlanned(name)
		j := freshJournal()
		pl, _ := json.Marshal(pruneJournal{Plan: dry.Plan, PlanID: dry.PlanID})
		j.Operation, j.Target, j.Phase, j.Payload = opPrune, dry.Plan.TargetPath, c.phase, pl
		if c.crash != nil {
			c.crash(dry, &j)
		}
		f.write(func(tx *store.Tx) error { return tx.PutJournal(&j) })
		apply := c.apply
		if apply == "" {
			apply = dry.PlanID
		}
		_, err := Prune(f.ctx, f.r, dry.Plan.TargetPath, c.owner, apply)
		if decision.CodeOf(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
		js := f.journals()
		if len(js) != 1 || js[0].TransactionID != j.TransactionID || js[0].Phase != c.phase {
			t.Errorf("%s: the journal is not left as it was: %+v", c.name, js)
		}
		if _, err := os.Lstat(dry.Plan.AdminPath); err != nil {
			t.Errorf("%s: a refused resume removed the admin dir: %v", c.name, err)
		}
		// Out of the way of the next case; and main back where it was.
		f.write(func(tx *store.Tx) error { return tx.FinishJournal(j, "TEST", []byte(`{}`), store.Now()) })
		f.git(f.main, "update-ref", "refs/heads/main", dry.Plan.PreservingOID)
	}
}

// TestJournalMatching: two journals on one target are a mess a person
// looks at (INTERRUPTED_TRANSACTION); the rest are the others.
func TestJournalMatching(t *testing.T) {
	t.Parallel()
	r := testRepo(t)
	put := func(op, target string) store.Journal {
		j := freshJournal()
		j.Operation, j.Target = op, target
		if err := r.Store.Write(func(tx *store.Tx) error { return tx.PutJournal(&j) }); err != nil {
			t.Fatal(err)
		}
		return j
	}
	mine := put(opPrune, "/a")
	put(opFinish, "/a")
	put(opPrune, "/b")
	err := r.Store.Read(func(tx *store.Tx) error {
		j, others, err := journalFor(tx, "/a")
		if err != nil {
			return err
		}
		if j == nil || j.TransactionID != mine.TransactionID || len(others) != 2 {
			t.Errorf("journalFor /a: %+v, %d others", j, len(others))
		}
		if j, _, err := journalFor(tx, "/c"); err != nil || j != nil {
			t.Errorf("journalFor /c: %+v %v", j, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	put(opPrune, "/a")
	err = r.Store.Read(func(tx *store.Tx) error {
		_, _, err := journalFor(tx, "/a")
		return err
	})
	wttest.WantCode(t, err, decision.InterruptedTx)
}

// TestResumeCommand: the command that finishes an interrupted prune or
// finish is the same apply; a journal without a readable plan has none.
func TestResumeCommand(t *testing.T) {
	t.Parallel()
	id := strings.Repeat("a", 64)
	pj, _ := json.Marshal(pruneJournal{Plan: PrunePlan{Owner: "rev"}, PlanID: id})
	fj, _ := json.Marshal(finishJournal{Plan: FinishPlan{Owner: "alice"}, PlanID: id})
	for _, c := range []struct {
		j    store.Journal
		want string
	}{
		{store.Journal{Operation: opPrune, Target: "/w/r 1", Payload: pj}, "wt-admin --repo /repo prune '/w/r 1' --owner rev --apply " + id},
		{store.Journal{Operation: opFinish, Target: "/w/w1", Payload: fj}, "wt-admin --repo /repo finish /w/w1 --owner alice --apply " + id},
		{store.Journal{Operation: opPrune, Target: "/w/r1", Payload: []byte(`{}`)}, ""},
		{store.Journal{Operation: opFinish, Target: "/w/r1", Payload: []byte(`not json`)}, ""},
		{store.Journal{Operation: "allocate", Target: "/w/r1", Payload: pj}, ""},
	} {
		got, ok := ResumeCommand("/repo", c.j)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%s: %q %t, want %q", c.j.Operation, got, ok, c.want)
		}
	}
	if journalPlanID(store.Journal{Payload: pj}) != id || journalPlanID(store.Journal{Payload: []byte(`{}`)}) != "PLAN_ID" {
		t.Error("journalPlanID")
	}
}

// TestFinishTornRemoval: a removal git left half-done (no gitdir) is
// finished; an admin dir git still uses is drift; none is nothing to do.
func TestFinishTornRemoval(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	admin := filepath.Join(dir, "worktrees", "w1")
	if err := finishTornRemoval("/gone", admin); err != nil {
		t.Fatalf("no admin dir: %v", err)
	}
	if err := os.MkdirAll(admin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(admin, "gitdir"), []byte("/gone/.git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wttest.WantCode(t, finishTornRemoval("/gone", admin), decision.GCPlanDrift)
	if _, err := os.Lstat(filepath.Join(admin, "gitdir")); err != nil {
		t.Fatal("drift removed the admin dir")
	}
	if err := os.Remove(filepath.Join(admin, "gitdir")); err != nil {
		t.Fatal(err)
	}
	if err := finishTornRemoval("/gone", admin); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(admin); !os.IsNotExist(err) {
		t.Fatalf("the torn admin dir remains: %v", err)
	}
}

// finishPlanned is the dry run of finish of worktree name, owned by
// alice, archiving.
func (f *fixture) finishPlanned(name string) FinishResult {
	f.t.Helper()
	res, err := Finish(f.ctx, f.r, FinishRequest{Path: f.path(name), Owner: "alice", Archive: true})
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

// TestFinishResume: a finish killed at any point is finished by the same
// apply run again: archive refs already made are kept, a worktree already
// removed is not removed again, the branch is deleted, and the release is
// made once (a branch moved meanwhile is TestFinishResumeRefusals').
func TestFinishResume(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i, c := range []struct {
		name  string
		phase string
		crash func(p FinishPlan)
	}{
		{"before anything", PhasePrepared, func(FinishPlan) {}},
		{"after the archive ref was made", PhasePrepared, func(p FinishPlan) {
			f.git(f.main, "update-ref", p.Archive[0].Ref, p.Archive[0].OID)
		}},
		{"after the archive was recorded", PhaseArchived, func(p FinishPlan) {
			f.git(f.main, "update-ref", p.Archive[0].Ref, p.Archive[0].OID)
		}},
		{"after git removed the worktree", PhaseArchived, func(p FinishPlan) {
			f.git(f.main, "update-ref", p.Archive[0].Ref, p.Archive[0].OID)
			f.git(f.main, "worktree", "remove", p.TargetPath)
		}},
		{"after the removal was recorded", PhaseRemoved, func(p FinishPlan) {
			f.git(f.main, "update-ref", p.Archive[0].Ref, p.Archive[0].OID)
			f.git(f.main, "worktree", "remove", p.TargetPath)
		}},
		{"after the branch went", PhaseRemoved, func(p FinishPlan) {
			f.git(f.main, "update-ref", p.Archive[0].Ref, p.Archive[0].OID)
			f.git(f.main, "worktree", "remove", p.TargetPath)
			f.git(f.main, "branch", "-q", "-D", p.Branch)
		}},
		{"after the release was recorded", PhaseReleased, func(p FinishPlan) {
			f.git(f.main, "update-ref", p.Archive[0].Ref, p.Archive[0].OID)
			f.git(f.main, "worktree", "remove", p.TargetPath)
			f.git(f.main, "branch", "-q", "-D", p.Branch)
			f.write(func(tx *store.Tx) error {
				return release(tx, "finish", p.AllocationID, p.ExpectedRecordVersion, p.Owner, p.WorktreeKey)
			})
		}},
	} {
		name, task := fmt.Sprintf("w%d", i), fmt.Sprintf("T-%d", i)
		a := f.allocate(task, "alice", "", name, "")
		work := f.commit(f.path(name), "work")
		dry := f.finishPlanned(name)
		if len(dry.Plan.Archive) != 1 {
			t.Fatalf("%s: plan %+v", c.name, dry.Plan)
		}
		j := f.plantJournal(opFinish, dry.Plan.TargetPath, c.phase, finishJournal{Plan: dry.Plan, PlanID: dry.PlanID})
		c.crash(dry.Plan)

		_, err := Finish(f.ctx, f.r, FinishRequest{Task: task, Owner: "alice"})
		wttest.WantCode(t, err, decision.InterruptedTx)
		if !strings.Contains(said(err), "--apply "+dry.PlanID) {
			t.Errorf("%s: the dry run does not say how to finish: %s", c.name, said(err))
		}
		done, err := Finish(f.ctx, f.r, FinishRequest{Path: f.path(name), Owner: "alice", Apply: dry.PlanID})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if done.Code != decision.TaskFinished || done.ResumedFrom != c.phase || done.TransactionID != j.TransactionID {
			t.Errorf("%s: %+v", c.name, done)
		}
		if f.ref(dry.Plan.Archive[0].Ref) != work || f.ref("refs/heads/"+dry.Plan.Branch) != "" || f.listed(f.path(name)) {
			t.Errorf("%s: the work is not archived, or the task remains", c.name)
		}
		if got := f.allocation(a.AllocationID); got.Lifecycle != store.Released || got.RecordVersion != a.RecordVersion+1 {
			t.Errorf("%s: allocation %+v", c.name, got)
		}
		if js := f.journals(); len(js) != 0 {
			t.Errorf("%s: journals left: %+v", c.name, js)
		}
	}
}

// TestFinishResumeRefusals: what changed since the plan stops the resumed
// apply at the step it concerns, and nothing of the task's work is lost:
// a branch that moved is kept, a worktree with new changes stays.
func TestFinishResumeRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	other := strings.Repeat("0", 64)
	for i, c := range []struct {
		name  string
		phase string
		owner string
		apply string // "" for the plan's id
		crash func(p FinishPlan, j *store.Journal)
		code  string
		// kept is true when the worktree must still be there.
		kept bool
	}{
		{"another plan id", PhasePrepared, "alice", other, nil, decision.GCPlanDrift, true},
		{"another owner", PhasePrepared, "bob", "", nil, decision.OwnerMismatch, true},
		{"an unknown phase", "HALF_DONE", "alice", "", nil, decision.GCPlanDrift, true},
		{"an unreadable journal", PhasePrepared, "alice", "", func(_ FinishPlan, j *store.Journal) {
			j.Payload = []byte(`{"plan": {"contract": "other"}}`)
		}, decision.InvalidMetadata, true},
		{"the allocation changed", PhasePrepared, "alice", "", func(p FinishPlan, _ *store.Journal) {
			f.write(func(tx *store.Tx) error {
				a, err := tx.Allocation(p.AllocationID)
				if err != nil {
					return err
				}
				a.Lifecycle = store.Retained
				return tx.PutAllocation(&a)
			})
		}, decision.GCPlanDrift, true},
		{"an archive ref taken", PhasePrepared, "alice", "", func(p FinishPlan, _ *store.Journal) {
			f.git(f.main, "update-ref", p.Archive[0].Ref, p.PublicationOID)
		}, decision.GCPlanDrift, true},
		{"new changes", PhaseArchived, "alice", "", func(p FinishPlan, _ *store.Journal) {
			if err := os.WriteFile(filepath.Join(p.TargetPath, "late.txt"), []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, decision.WorktreeDirty, true},
		{"a new commit", PhaseArchived, "alice", "", func(p FinishPlan, _ *store.Journal) {
			f.commit(p.TargetPath, "late work")
		}, decision.GCPlanDrift, true},
		{"the branch moved after the removal", PhaseRemoved, "alice", "", func(p FinishPlan, _ *store.Journal) {
			f.git(f.main, "worktree", "remove", p.TargetPath)
			f.git(f.main, "update-ref", "refs/heads/"+p.Branch, p.PublicationOID)
		}, decision.GCPlanDrift, false},
	} {
		name, task := fmt.Sprintf("w%d", i), fmt.Sprintf("T-%d", i)
		f.allocate(task, "alice", "", name, "")
		f.commit(f.path(name), "work")
		dry := f.finishPlanned(name)
		j := freshJournal()
		pl, _ := json.Marshal(finishJournal{Plan: dry.Plan, PlanID: dry.PlanID})
		j.Operation, j.Target, j.Phase, j.Payload = opFinish, dry.Plan.TargetPath, c.phase, pl
		if c.crash != nil {
			c.crash(dry.Plan, &j)
		}
		f.write(func(tx *store.Tx) error { return tx.PutJournal(&j) })
		apply := c.apply
		if apply == "" {
			apply = dry.PlanID
		}
		branch := f.ref("refs/heads/" + dry.Plan.Branch)
		_, err := Finish(f.ctx, f.r, FinishRequest{Path: dry.Plan.TargetPath, Owner: c.owner, Apply: apply})
		if decision.CodeOf(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
		if f.listed(dry.Plan.TargetPath) != c.kept {
			t.Errorf("%s: worktree listed %t, want %t", c.name, !c.kept, c.kept)
		}
		if got := f.ref("refs/heads/" + dry.Plan.Branch); got == "" || got != branch {
			t.Errorf("%s: the branch is %q, was %q", c.name, got, branch)
		}
		if js := f.journals(); len(js) != 1 || js[0].TransactionID != j.TransactionID {
			t.Errorf("%s: the journal is gone: %+v", c.name, js)
		}
		f.write(func(tx *store.Tx) error { return tx.FinishJournal(j, "TEST", []byte(`{}`), store.Now()) })
	}
}
