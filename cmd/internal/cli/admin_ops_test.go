package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/cmd/internal/textout"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wttest"
)

// TestDoctorReportsWhatNeedsAction: in a repository whose gate is not
// installed, doctor exits 1 with its findings, each with its fix, and
// says the same in words.
func TestDoctorReportsWhatNeedsAction(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.Allocate("T-1", "", "w1")
	env := f.json(textout.ExitRefused, decision.DoctorFindings, "doctor")
	findings := list(env.Error, "findings")
	if len(findings) == 0 || str(env.Error, "hint") == "" {
		t.Fatalf("error %v", env.Error)
	}
	first := findings[0].(map[string]any)
	r := f.human(textout.ExitRefused, "doctor")
	if !strings.Contains(r.stdout, "1. ["+str(first, "check")+"] ") || !strings.Contains(r.stderr, "refused: DOCTOR_FINDINGS: ") {
		t.Errorf("stdout: %s\nstderr: %s", r.stdout, r.stderr)
	}
}

// commit makes a commit that adds name in the checkout at dir and returns
// its id.
func commit(t *testing.T, dir, name string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, dir, "add", name)
	gittest.Git(t, dir, "commit", "-q", "-m", "add "+name)
	return gittest.Git(t, dir, "rev-parse", "HEAD")
}

// TestLandChecksItsArgumentsThenLandsAndWhySaysHow: land needs tasks or
// --ready; a task whose tip no gate approved is refused (LAND_UNGATED)
// unless accepted; what lands, why says came by the task's landing.
func TestLandChecksItsArgumentsThenLandsAndWhySaysHow(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.Allocate("T-1", "", "w1")
	tip := commit(t, a.WorktreePath, "one.txt")

	f.json(textout.ExitUsage, decision.Usage, "land")
	f.json(textout.ExitUsage, decision.Usage, "land", "--strategy", "octopus", "--task", "T-1")
	env := f.json(textout.ExitOK, decision.NothingToLand, "land", "--ready")
	if str(env.Decision, "reason") != "the ready queue is empty: nothing to land" {
		t.Errorf("reason %q", str(env.Decision, "reason"))
	}

	env = f.json(textout.ExitRefused, decision.LandUngated, "land", "--task", "T-1")
	if tasks := list(env.Error, "tasks"); len(tasks) != 1 || !strings.Contains(str(env.Error, "hint"), "--accept-ungated --task T-1") {
		t.Errorf("error %v", env.Error)
	}
	if got := f.Git("rev-parse", "main"); got != f.Base {
		t.Fatalf("a refused land moved main to %s", got)
	}

	r := f.human(textout.ExitOK, "land", "--task", "T-1", "--accept-ungated")
	if !strings.Contains(r.stdout, "wt-admin: LANDED: main is at ") || !hasPrefixedLine(r.stdout, "T-1", decision.Landed) {
		t.Errorf("stdout: %s\nstderr: %s", r.stdout, r.stderr)
	}
	landed := f.Git("rev-parse", "main")
	if f.Git("rev-parse", "main^") != f.Base || f.Git("show", "-s", "--format=%s", "main") != "add one.txt" {
		t.Fatalf("main is at %s, not the task's commit on the base", landed)
	}

	f.json(textout.ExitUsage, decision.Usage, "why")
	f.json(textout.ExitUsage, decision.Usage, "why", "no-such-commit")
	env = f.json(textout.ExitOK, decision.WhyShown, "why", "main")
	p := obj(env.Decision, "landing")
	if str(env.Decision, "commit") != landed || str(env.Decision, "from") != "store" || str(p, "task") != "T-1" || p["accepted_ungated"] != true || str(p, "source") != tip {
		t.Errorf("why %v", env.Decision)
	}
	r = f.human(textout.ExitOK, "why", "main")
	if !strings.Contains(r.stdout, "is on main: task T-1 landed it") || !hasPrefixedLine(r.stdout, "task:", "T-1") || !hasPrefixedLine(r.stdout, "test:", "none") {
		t.Errorf("stdout: %s", r.stdout)
	}
	env = f.json(textout.ExitOK, decision.WhyShown, "why", f.Base)
	if env.Decision["landing"] != nil || str(env.Decision, "unseen") == "" {
		t.Errorf("why of the base: %v", env.Decision)
	}
}

// TestWhyInACloneWithoutTheStore: where wt was never set up, why reads
// the notes land --push publishes, on the checked-out branch; with none
// it cannot say (WHY_UNKNOWN), and says where they come from.
func TestWhyInACloneWithoutTheStore(t *testing.T) {
	t.Parallel()
	_, dir, base := gittest.Repo(t)
	env := jsonRun(t, textout.ExitRefused, decision.WhyUnknown, "--repo", dir, "why", "HEAD")
	if msg := str(env.Error, "message"); !strings.Contains(msg, "no wt store") || !strings.Contains(msg, base[:12]+" came onto main") ||
		!strings.Contains(str(env.Error, "hint"), "fetch origin") {
		t.Errorf("error %v", env.Error)
	}
	// --branch names the branch instead.
	gittest.Git(t, dir, "branch", "release")
	env = jsonRun(t, textout.ExitRefused, decision.WhyUnknown, "--repo", dir, "why", "HEAD", "--branch", "release")
	if !strings.Contains(str(env.Error, "message"), "came onto release") {
		t.Errorf("error %v", env.Error)
	}
}

// TestReadyQueuesATaskForLand: the owner marks a task ready; another
// owner is refused.
func TestReadyQueuesATaskForLand(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.Allocate("T-1", "", "w1")
	commit(t, a.WorktreePath, "one.txt")
	f.json(textout.ExitRefused, decision.OwnerMismatch, "ready", "T-1", "--owner", "mallory")
	env := f.json(textout.ExitOK, decision.TaskReady, "ready", "T-1", "--owner", "alice")
	if env.Decision["position"] != 1.0 {
		t.Errorf("ready %v", env.Decision)
	}
	env = f.json(textout.ExitOK, decision.StatusShown, "status")
	if q := list(env.Decision, "ready_queue"); len(q) != 1 || q[0] != "T-1" {
		t.Errorf("ready queue %v", q)
	}
	r := f.human(textout.ExitOK, "status")
	if !strings.Contains(r.stdout, "ready to land, in order: T-1") {
		t.Errorf("status: %s", r.stdout)
	}
}

// TestLandWithATestNeedsWtExec: land --test runs the test under wt-exec;
// with none beside wt-admin or on PATH it is refused before anything
// lands. (It sets PATH: not parallel.)
func TestLandWithATestNeedsWtExec(t *testing.T) {
	f := newFixture(t)
	a := f.Allocate("T-1", "", "w1")
	commit(t, a.WorktreePath, "one.txt")
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(git, filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	env := f.json(textout.ExitRefused, decision.CommandNotFound, "land", "--task", "T-1", "--accept-ungated", "--test", "true")
	if !strings.Contains(str(env.Error, "message"), "wt-exec") {
		t.Errorf("error %v", env.Error)
	}
	if got := f.Git("rev-parse", "main"); got != f.Base {
		t.Errorf("main moved to %s", got)
	}
}

// TestPsShowsWhoIsInEachWorktree: the lease holder (this test process)
// is shown in its worktree; PATH narrows it to one worktree.
func TestPsShowsWhoIsInEachWorktree(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	held := f.Allocate("T-1", "", "w1")
	f.Allocate("T-2", "", "w2")
	f.Lease(held, wttest.Self(t), nil)
	env := f.json(textout.ExitOK, decision.PsShown, "ps")
	if rows := list(env.Decision, "worktrees"); len(rows) != 2 {
		t.Fatalf("rows %v", env.Decision)
	}
	env = f.json(textout.ExitOK, decision.PsShown, "ps", held.WorktreePath)
	rows := list(env.Decision, "worktrees")
	if len(rows) != 1 {
		t.Fatalf("rows %v", rows)
	}
	row := rows[0].(map[string]any)
	found := false
	for _, p := range list(row, "processes") {
		if p.(map[string]any)["pid"] == float64(os.Getpid()) {
			found = true
		}
	}
	if str(row, "path") != held.WorktreePath || obj(row, "lease") == nil || !found {
		t.Errorf("row %v", row)
	}
	r := f.human(textout.ExitOK, "ps")
	if !strings.HasPrefix(r.stdout, "WORKTREE") || !strings.Contains(r.stdout, "nobody (no lease)") {
		t.Errorf("stdout: %s", r.stdout)
	}
	f.json(textout.ExitUsage, decision.Usage, "ps", held.WorktreePath, "extra")
}

// TestQuarantinePutsAsideWhatTheAdminDirShouldNotHold: an executable
// planted in a governed worktree's admin dir is moved under the store; a
// path no live allocation has is refused.
func TestQuarantinePutsAsideWhatTheAdminDirShouldNotHold(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.Allocate("T-1", "", "w1")
	f.json(textout.ExitUsage, decision.Usage, "quarantine")
	f.json(textout.ExitRefused, decision.InvalidTarget, "quarantine", f.Path("nowhere"))
	f.json(textout.ExitRefused, decision.InvalidTarget, "quarantine", f.Dir)
	f.json(textout.ExitOK, decision.AdminDirClean, "quarantine", a.WorktreePath)

	planted := filepath.Join(gitrepo.AdminDir(f.R.Git.CommonDir, a.WorktreeKey), "pre-commit")
	if err := os.WriteFile(planted, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := f.human(textout.ExitOK, "quarantine", a.WorktreePath)
	if !strings.HasPrefix(r.stdout, "wt-admin: ADMIN_DIR_QUARANTINED: put aside 1 file(s)") || !strings.Contains(r.stdout, "put back: ") {
		t.Errorf("stdout: %s", r.stdout)
	}
	if _, err := os.Lstat(planted); !os.IsNotExist(err) {
		t.Errorf("the planted file is still there: %v", err)
	}
	f.json(textout.ExitOK, decision.AdminDirClean, "quarantine", a.WorktreePath)
}

// TestAdoptPlansThenApplies: adopt refuses a bad command line and a
// governed worktree; a worktree made by git is planned (nothing written)
// and then adopted by its plan's id, its branch kept.
func TestAdoptPlansThenApplies(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	gov := f.Allocate("T-1", "", "w1")
	manual := f.Path("manual")
	f.Git("worktree", "add", "-q", "-b", "feature/x", manual)

	for _, args := range [][]string{
		{"adopt", manual},
		{"adopt", manual, "--task", "X-1"},
		{"adopt", manual, "--task", "X-1", "--owner", "bob", "--holder", "123"},
		{"adopt", manual, "--task", "X-1", "--owner", "bob", "--client-id", "c"},
		{"adopt", manual, "--task", "X-1", "--owner", "bob", "--holder", "me", "--client-id", "c"},
	} {
		f.json(textout.ExitUsage, decision.Usage, args...)
	}
	f.json(textout.ExitRefused, decision.InvalidTarget, "adopt", gov.WorktreePath, "--task", "X-1", "--owner", "bob")

	before := f.records()
	env := f.json(textout.ExitOK, decision.AdoptReady, "adopt", manual, "--task", "X-1", "--owner", "bob")
	plan := str(env.Decision, "plan_id")
	if plan == "" || env.Decision["dry_run"] != true || str(obj(env.Decision, "plan"), "branch") != "feature/x" {
		t.Fatalf("dry run %v", env.Decision)
	}
	if f.records() != before {
		t.Fatal("the dry run changed the records")
	}
	r := f.human(textout.ExitOK, "adopt", manual, "--task", "X-1", "--owner", "bob")
	if !strings.Contains(r.stdout, "plan_id "+plan) || !strings.Contains(r.stdout, "--apply "+plan) {
		t.Errorf("stdout: %s", r.stdout)
	}
	f.json(textout.ExitRefused, decision.ResourcePlanMismatch, "adopt", manual, "--task", "X-2", "--owner", "bob", "--apply", plan)

	env = f.json(textout.ExitOK, decision.Adopted, "adopt", manual, "--task", "X-1", "--owner", "bob", "--apply", plan)
	if str(env.Decision, "allocation_id") == "" {
		t.Fatalf("adopted %v", env.Decision)
	}
	env = f.json(textout.ExitOK, decision.StatusShown, "status")
	found := false
	for _, x := range list(env.Decision, "worktrees") {
		row := x.(map[string]any)
		if str(row, "path") == manual {
			found = str(row, "task_key") == "X-1" && str(row, "branch") == "feature/x" && str(row, "owner") == "bob"
		}
	}
	if !found {
		t.Errorf("status does not show %s as task X-1's: %v", manual, env.Decision)
	}
}

// TestMaintenancePlansAndApplies: backfill, prune and finish are dry runs
// that name a plan, and do it when given the plan's id; audit reads the
// branches' moves.
func TestMaintenancePlansAndApplies(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	done := f.Allocate("T-1", "", "w1")
	lost := f.Allocate("T-2", "", "w2")
	gone := f.Allocate("A-1", store.RoleAudit, "a1")

	// backfill: nothing to do, then a binding whose registration was
	// never written.
	f.json(textout.ExitOK, decision.BackfillNothing, "backfill")
	f.Write(func(tx *store.Tx) error { return tx.RemoveRegistration(lost.WorktreeKey) })
	env := f.json(textout.ExitOK, decision.BackfillReady, "backfill")
	plan := str(env.Decision, "plan_id")
	if len(list(env.Decision, "candidates")) != 1 || plan == "" {
		t.Fatalf("backfill %v", env.Decision)
	}
	r := f.human(textout.ExitOK, "backfill")
	if !strings.Contains(r.stdout, "next: wt-admin --repo "+f.Dir+" backfill --apply "+plan) {
		t.Errorf("stdout: %s", r.stdout)
	}
	env = f.json(textout.ExitOK, decision.Backfilled, "backfill", "--apply", plan)
	if env.Decision["written"] != 1.0 {
		t.Errorf("backfill --apply %v", env.Decision)
	}
	f.json(textout.ExitOK, decision.BackfillNothing, "backfill")

	// prune: a retained audit worktree whose checkout is gone.
	f.json(textout.ExitUsage, decision.Usage, "prune", gone.WorktreePath)
	f.json(textout.ExitRefused, decision.PrunableStateInvalid, "prune", gone.WorktreePath, "--owner", "alice")
	f.json(textout.ExitOK, decision.Retained, "retain", gone.WorktreePath, "--owner", "alice")
	if err := os.RemoveAll(gone.WorktreePath); err != nil {
		t.Fatal(err)
	}
	r = f.human(textout.ExitOK, "prune", gone.WorktreePath, "--owner", "alice")
	if !strings.HasPrefix(r.stdout, "wt-admin: REGISTRATION_PRUNE_READY: ") || !strings.Contains(r.stdout, "plan_id ") {
		t.Fatalf("stdout: %s", r.stdout)
	}
	env = f.json(textout.ExitOK, decision.PruneReady, "prune", gone.WorktreePath, "--owner", "alice")
	f.json(textout.ExitOK, decision.RegistrationPruned, "prune", gone.WorktreePath, "--owner", "alice", "--apply", str(env.Decision, "plan_id"))
	if _, err := os.Stat(gitrepo.AdminDir(f.R.Git.CommonDir, gone.WorktreeKey)); !os.IsNotExist(err) {
		t.Errorf("the registration of %s is still there: %v", gone.WorktreePath, err)
	}

	// finish: a task with nothing unmerged.
	f.json(textout.ExitUsage, decision.Usage, "finish", done.WorktreePath)
	f.json(textout.ExitRefused, decision.OwnerMismatch, "finish", done.WorktreePath, "--owner", "bob")
	r = f.human(textout.ExitOK, "finish", "--task", "T-1", "--owner", "alice")
	if !strings.HasPrefix(r.stdout, "wt-admin: TASK_FINISH_READY: task T-1 at "+done.WorktreePath+" can be finished") {
		t.Fatalf("stdout: %s", r.stdout)
	}
	env = f.json(textout.ExitOK, decision.FinishReady, "finish", done.WorktreePath, "--owner", "alice")
	if _, err := os.Stat(done.WorktreePath); err != nil {
		t.Fatalf("the dry run removed the worktree: %v", err)
	}
	f.json(textout.ExitOK, decision.TaskFinished, "finish", done.WorktreePath, "--owner", "alice", "--apply", str(env.Decision, "plan_id"))
	if _, err := os.Stat(done.WorktreePath); !os.IsNotExist(err) {
		t.Errorf("the finished worktree is still there: %v", err)
	}
	if out := f.Git("branch", "--list", "wt/T-1"); out != "" {
		t.Errorf("the finished task's branch is still there: %s", out)
	}
	f.json(textout.ExitRefused, decision.GCAlreadyApplied, "finish", done.WorktreePath, "--owner", "alice", "--apply", str(env.Decision, "plan_id"))

	// audit: every move so far went through wt, none ungated.
	env = f.json(textout.ExitOK, decision.AuditShown, "audit", "--since", "1h")
	if env.Decision["ungated"] != 0.0 {
		t.Errorf("audit %v", env.Decision)
	}
	r = f.human(textout.ExitOK, "audit")
	if !strings.HasPrefix(r.stdout, "wt-admin: AUDIT_SHOWN: ") || !strings.Contains(r.stdout, "task T-2 (wt/T-2 at ") {
		t.Errorf("stdout: %s", r.stdout)
	}
}

// TestFleetCommandsNeedFleetMode: with the coordinator off, fleet status
// and abandon are refused (INVALID_POLICY); a bad task key before that.
func TestFleetCommandsNeedFleetMode(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.json(textout.ExitRefused, decision.InvalidPolicy, "fleet", "status")
	f.json(textout.ExitRefused, decision.InvalidPolicy, "fleet", "abandon", "T-1", "--reason", "gone", "--operator")
	f.json(textout.ExitRefused, decision.InvalidTaskKey, "fleet", "abandon", "no spaces", "--reason", "gone")
}
