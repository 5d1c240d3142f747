package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// pruneSetup makes a repository with a feature worktree w1 (which prune must
// leave alone) and a retained audit r1 whose checkout was deleted, and
// returns the dry run's plan id.
func pruneSetup(t *testing.T, bin string) (top, repo, plan string) {
	t.Helper()
	top, repo = newRepo(t, bin)
	for _, args := range [][]string{
		{"allocate", "--task", "T-1", "--owner", "alice", filepath.Join(top, "w1")},
		{"allocate", "--task", "R-1", "--owner", "rev", "--role", "audit", filepath.Join(top, "r1")},
		{"retain", filepath.Join(top, "r1"), "--owner", "rev"},
	} {
		if out, code := admin(t, bin, repo, "", args...); code != 0 {
			t.Fatalf("%v: %d %s", args, code, out)
		}
	}
	if err := os.RemoveAll(filepath.Join(top, "r1")); err != nil {
		t.Fatal(err)
	}
	return top, repo, dryRunPlan(t, bin, repo, "prune", filepath.Join(top, "r1"), "--owner", "rev")
}

// dryRunPlan runs a plan-then-apply command's dry run and returns its plan id.
func dryRunPlan(t *testing.T, bin, repo string, args ...string) string {
	t.Helper()
	out, code := admin(t, bin, repo, "", append(args, "--json")...)
	if code != 0 {
		t.Fatalf("dry run %v: %d %s", args, code, out)
	}
	var env struct {
		Decision struct {
			PlanID string `json:"plan_id"`
		} `json:"decision"`
	}
	if err := json.Unmarshal([]byte(out), &env); err != nil || len(env.Decision.PlanID) != 64 {
		t.Fatalf("dry run output: %v %s", err, out)
	}
	return env.Decision.PlanID
}

// pruneState is what prune leaves: every record (ids, times and payloads
// dropped; record versions kept), receipts by operation and outcome, git's
// worktrees, admin dirs and refs.
func pruneState(t *testing.T, repo string) string {
	t.Helper()
	top := filepath.Dir(repo)
	lines := records(repo, []string{"allocations", "bindings", "registrations", "leases", "journal", "receipts"})
	lines = append(lines, "git: "+git(t, repo, "worktree", "list", "--porcelain"))
	ents, _ := os.ReadDir(filepath.Join(repo, ".git", "worktrees"))
	for _, e := range ents {
		lines = append(lines, "admin dir: "+e.Name())
	}
	lines = append(lines, "refs: "+git(t, repo, "for-each-ref", "--format=%(refname) %(objectname)"))
	return normalized(lines, top)
}

// TestPruneCrashRecovery kills prune's apply at every journal point and
// runs it again with the same plan id: it finishes, says from which phase,
// and leaves exactly what an uninterrupted apply leaves; a third run answers
// GC_ALREADY_APPLIED.
func TestPruneCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := buildCrashAdmin(t)
	top, repo, plan := pruneSetup(t, bin)
	r1 := filepath.Join(top, "r1")
	if out, code := admin(t, bin, repo, "", "prune", r1, "--owner", "rev", "--apply", plan); code != 0 || !strings.Contains(out, "REGISTRATION_PRUNED") {
		t.Fatalf("reference apply: %d %s", code, out)
	}
	want := pruneState(t, repo)
	if !strings.Contains(want, `"lifecycle":"RELEASED"`) || !strings.Contains(want, `"owner":"unassigned"`) || strings.Contains(want, "admin dir: r1") {
		t.Fatalf("the reference apply did not prune:\n%s", want)
	}

	for _, point := range []string{"prune:prepared", "prune:git-removed", "prune:worktree-removed", "prune:record-released", "prune:released-recorded"} {
		t.Run(point, func(t *testing.T) {
			top, repo, plan := pruneSetup(t, bin)
			r1 := filepath.Join(top, "r1")
			out, code := admin(t, bin, repo, point, "prune", r1, "--owner", "rev", "--apply", plan)
			if code != -int(syscall.SIGKILL) {
				t.Fatalf("apply did not die at %s: %d %s", point, code, out)
			}
			if ents, _ := os.ReadDir(filepath.Join(repo, ".git", "wt", "journal")); len(ents) != 1 {
				t.Fatalf("after the crash the journal holds %d entries, want 1", len(ents))
			}
			// The dry run names the interrupted apply and how to finish it.
			out, code = admin(t, bin, repo, "", "prune", r1, "--owner", "rev")
			if code != 1 || !strings.Contains(out, "INTERRUPTED_TRANSACTION") || !strings.Contains(out, "--apply "+plan) {
				t.Fatalf("dry run after the crash: %d %s", code, out)
			}
			out, code = admin(t, bin, repo, "", "prune", r1, "--owner", "rev", "--apply", plan)
			if code != 0 || !strings.Contains(out, "REGISTRATION_PRUNED") || !strings.Contains(out, "resumed from phase") {
				t.Fatalf("apply after the crash: %d %s", code, out)
			}
			if got := pruneState(t, repo); got != want {
				t.Fatalf("state after recovery differs from an uninterrupted apply:\n got: %s\nwant: %s", got, want)
			}
			out, code = admin(t, bin, repo, "", "prune", r1, "--owner", "rev", "--apply", plan)
			if code != 1 || !strings.Contains(out, "GC_ALREADY_APPLIED") {
				t.Fatalf("third apply: %d %s", code, out)
			}
		})
	}
}

// TestPruneRace runs two applies of one plan at once: one prunes, the other
// is refused with GC_ALREADY_APPLIED, and the state is that of one apply.
func TestPruneRace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := buildCrashAdmin(t)
	top, repo, plan := pruneSetup(t, bin)
	r1 := filepath.Join(top, "r1")
	type result struct {
		out  string
		code int
	}
	results := make([]result, 2)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, code := admin(t, bin, repo, "", "prune", r1, "--owner", "rev", "--apply", plan)
			results[i] = result{out, code}
		}()
	}
	wg.Wait()
	won, refused := 0, 0
	for _, r := range results {
		switch {
		case r.code == 0 && strings.Contains(r.out, "REGISTRATION_PRUNED"):
			won++
		case r.code == 1 && strings.Contains(r.out, "GC_ALREADY_APPLIED"):
			refused++
		default:
			t.Errorf("unexpected outcome: %d %s", r.code, r.out)
		}
	}
	if won != 1 || refused != 1 {
		t.Fatalf("%d won, %d refused; want one of each", won, refused)
	}
	got := pruneState(t, repo)
	if !strings.Contains(got, `"lifecycle":"RELEASED"`) || strings.Contains(got, "journal:") || strings.Count(got, `receipts: {"operation":"registration-prune"`) != 1 {
		t.Fatalf("state after the race:\n%s", got)
	}
}

// TestPruneRemovalTorn: git killed part-way through `git worktree remove`
// leaves the planned admin dir with HEAD and index but no gitdir. Running
// the same apply again finishes the removal (it answered GC_PLAN_DRIFT for
// ever before), and the state is an uninterrupted prune's.
func TestPruneRemovalTorn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := buildCrashAdmin(t)
	top0, repo0, plan0 := pruneSetup(t, bin)
	if out, code := admin(t, bin, repo0, "", "prune", filepath.Join(top0, "r1"), "--owner", "rev", "--apply", plan0); code != 0 {
		t.Fatalf("reference apply: %d %s", code, out)
	}
	want := pruneState(t, repo0)

	top, repo, plan := pruneSetup(t, bin)
	if _, code := admin(t, bin, repo, "prune:prepared", "prune", filepath.Join(top, "r1"), "--owner", "rev", "--apply", plan); code != -int(syscall.SIGKILL) {
		t.Fatalf("apply did not die at prune:prepared: %d", code)
	}
	adminDir := filepath.Join(repo, ".git", "worktrees", "r1")
	if err := os.Remove(filepath.Join(adminDir, "gitdir")); err != nil {
		t.Fatal(err)
	}
	out, code := admin(t, bin, repo, "", "prune", filepath.Join(top, "r1"), "--owner", "rev", "--apply", plan)
	if code != 0 || !strings.Contains(out, "REGISTRATION_PRUNED") {
		t.Fatalf("apply after a torn removal: %d %s", code, out)
	}
	if exists(adminDir) {
		t.Error("the torn admin dir is still there")
	}
	if got := pruneState(t, repo); got != want {
		t.Errorf("state:\n%s\n\nwant (uninterrupted):\n%s", got, want)
	}
}
