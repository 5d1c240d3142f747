package hooks

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wttest"
)

// gitProcess starts a git that waits on its stdin (a committing git
// stands in for it), and ends it when the test does.
func gitProcess(t *testing.T, dir string) proc.Identity {
	t.Helper()
	cmd := exec.Command("git", "-C", dir, "cat-file", "--batch")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	id, err := proc.Describe(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// passLine is the first line of the pass in the git dir of checkout dir
// ("" when there is none).
func passLine(t *testing.T, dir string) string {
	t.Helper()
	gd := gittest.Git(t, dir, "rev-parse", "--absolute-git-dir")
	b, err := os.ReadFile(filepath.Join(gd, PassFile))
	if os.IsNotExist(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return line
}

// TestPreCommitPass: an entitled commit in the task's own worktree leaves
// a pass naming the committing git process, the ref, the lease and the
// ledger; any other allowance leaves none.
func TestPreCommitPass(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	wt := a.WorktreePath
	g := gitProcess(t, wt)

	v, err := PreCommit(wt, me, g.PID)
	wantVerdict(t, v, err, decision.WriterLeaseRequired, false)
	if got := passLine(t, wt); got != "" {
		t.Fatalf("a refused commit left a pass: %q", got)
	}

	l := f.Lease(a, wttest.Self(t), nil)
	// A parent that is not git gets no pass.
	v, err = PreCommit(wt, me, me)
	wantVerdict(t, v, err, decision.Entitled, true)
	if got := passLine(t, wt); got != "" {
		t.Fatalf("a pass for a process that is not git: %q", got)
	}
	v, err = PreCommit(wt, me, g.PID)
	wantVerdict(t, v, err, decision.Entitled, true)
	want := fmt.Sprintf("v2 %s %d %d refs/heads/wt/T-1 %s 1 test %s", g.BootID, g.PID, g.StartTicks, l.LeaseID,
		store.LedgerPath(f.R.Store.Root(), a.AllocationID))
	if got := passLine(t, wt); got != want {
		t.Fatalf("pass:\n got %q\nwant %q", got, want)
	}
	// The next pass is written over it.
	l2 := f.Lease(a, wttest.Self(t), nil)
	if _, err := PreCommit(wt, me, g.PID); err != nil {
		t.Fatal(err)
	}
	if got := passLine(t, wt); got != strings.Replace(want, l.LeaseID, l2.LeaseID, 1) {
		t.Fatalf("pass rewritten:\n got %q\nwant the lease %s", got, l2.LeaseID)
	}

	// Allowed, but not to the task's own branch: no pass.
	v, err = PreCommit(f.Dir, me, g.PID)
	wantVerdict(t, v, err, decision.Unmanaged, true)
	if got := passLine(t, f.Dir); got != "" {
		t.Errorf("the canonical checkout got a pass: %q", got)
	}
	if _, err := PreCommit(gittest.Outside(t), me, g.PID); decision.CodeOf(err) != decision.NotAGitRepository {
		t.Errorf("outside a repository: %v", err)
	}
}

// TestPreCommitWarnNoPass: a warned commit is allowed without a pass, so
// that its reference transaction is judged (and warned) too.
func TestPreCommitWarnNoPass(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{Enforcement: ptr(store.EnforcementWarn)})
	a := f.Allocate("T-1", "", "t1")
	g := gitProcess(t, a.WorktreePath)
	v, err := PreCommit(a.WorktreePath, me, g.PID)
	wantVerdict(t, v, err, decision.WriterLeaseRequired, true)
	if got := passLine(t, a.WorktreePath); got != "" {
		t.Errorf("a warned commit left a pass: %q", got)
	}
}

// TestPreCommitBranchMissing: a commit on a task branch that git no longer
// has, though the ledger records its tip, would start an empty history:
// TASK_BRANCH_MISSING, even for the writer.
func TestPreCommitBranchMissing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	f.Lease(a, wttest.Self(t), nil)
	g := gitProcess(t, a.WorktreePath)
	f.Git("update-ref", "-d", "refs/heads/wt/T-1")
	v, err := PreCommit(a.WorktreePath, me, g.PID)
	wantVerdict(t, v, err, decision.TaskBranchMissing, false)
	if !strings.Contains(v.Reason, "wt's ledger records its tip "+f.Base[:7]) || !strings.Contains(v.Refusal.Hint, f.Base) {
		t.Errorf("%q / %q", v.Reason, v.Refusal.Hint)
	}
	if got := passLine(t, a.WorktreePath); got != "" {
		t.Errorf("a pass for a missing branch: %q", got)
	}
}

// TestPostCheckout: a switch of a feature worktree off its task branch is
// reported after the fact (HEAD_OFF_TASK_BRANCH, and an event); anything
// else reports nothing.
func TestPostCheckout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	r := f.Allocate("R-1", store.RoleAudit, "audit")
	_, plain, _ := gittest.Repo(t)
	for _, dir := range []string{a.WorktreePath, f.Dir, r.WorktreePath, plain} {
		if d, warn, err := PostCheckout(dir); d != nil || warn || err != nil {
			t.Errorf("%s: %v %v %v", dir, d, warn, err)
		}
	}
	if _, _, err := PostCheckout(gittest.Outside(t)); decision.CodeOf(err) != decision.NotAGitRepository {
		t.Errorf("outside a repository: %v", err)
	}
	if got := f.events(); strings.Contains(strings.Join(got, " "), "head_left_task_branch") {
		t.Fatalf("events before any switch: %v", got)
	}

	gittest.Git(t, a.WorktreePath, "switch", "-q", "-c", "side")
	d, warn, err := PostCheckout(a.WorktreePath)
	if err != nil || d == nil || d.Code != decision.HeadOffTaskBranch || warn {
		t.Fatalf("switched off: %v %v %v", d, warn, err)
	}
	ev := f.events()
	if len(ev) == 0 || ev[len(ev)-1] != "head_left_task_branch" {
		t.Errorf("events: %v", ev)
	}
	f.SetPolicy(policy.Change{Enforcement: ptr(store.EnforcementWarn)})
	gittest.Git(t, a.WorktreePath, "switch", "-q", "--detach")
	if d, warn, err := PostCheckout(a.WorktreePath); err != nil || d == nil || d.Code != decision.HeadOffTaskBranch || !warn {
		t.Errorf("detached, under warn: %v %v %v", d, warn, err)
	}
}
