package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// finishSetup makes a repository with a feature worktree w1 (which finish
// must leave alone) and a task T-2 at t2 with one commit main lacks, and
// returns the archiving dry run's plan id.
func finishSetup(t *testing.T, bin string) (top, repo, plan string) {
	t.Helper()
	top, repo = newRepo(t, bin)
	for _, args := range [][]string{
		{"allocate", "--task", "T-1", "--owner", "alice", filepath.Join(top, "w1")},
		{"allocate", "--task", "T-2", "--owner", "bob", filepath.Join(top, "t2")},
	} {
		if out, code := admin(t, bin, repo, "", args...); code != 0 {
			t.Fatalf("%v: %d %s", args, code, out)
		}
	}
	git(t, filepath.Join(top, "t2"), "commit", "-q", "--allow-empty", "-m", "unmerged work")
	return top, repo, dryRunPlan(t, bin, repo, "finish", "--task", "T-2", "--owner", "bob", "--archive")
}

// TestFinishCrashRecovery kills finish's apply at every journal point and
// runs it again with the same plan id: it finishes, says from which phase,
// and leaves exactly what an uninterrupted apply leaves (the archive ref
// made once, the worktree and branch gone, the allocation RELEASED); a
// third run answers GC_ALREADY_APPLIED.
func TestFinishCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := buildCrashAdmin(t)
	top, repo, plan := finishSetup(t, bin)
	tip := git(t, filepath.Join(top, "t2"), "rev-parse", "HEAD")
	if out, code := admin(t, bin, repo, "", "finish", "--task", "T-2", "--owner", "bob", "--apply", plan); code != 0 || !strings.Contains(out, "TASK_FINISHED") {
		t.Fatalf("reference apply: %d %s", code, out)
	}
	if got := git(t, repo, "rev-parse", "refs/wt/archive/T-2/1"); got != tip {
		t.Fatalf("archive ref at %s, want %s", got, tip)
	}
	want := pruneState(t, repo)
	if strings.Contains(want, "refs/heads/wt/T-2") || strings.Contains(want, "admin dir: t2") ||
		!strings.Contains(want, "refs/heads/wt/T-1") || !strings.Contains(want, "admin dir: w1") || strings.Count(want, `"lifecycle":"RELEASED"`) != 1 {
		t.Fatalf("the reference apply did not finish T-2 alone:\n%s", want)
	}

	points := []string{"finish:prepared", "finish:archived", "finish:git-removed", "finish:worktree-removed",
		"finish:branch-deleted", "finish:record-released", "finish:released-recorded"}
	for _, point := range points {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			_, repo, plan := finishSetup(t, bin)
			out, code := admin(t, bin, repo, point, "finish", "--task", "T-2", "--owner", "bob", "--apply", plan)
			if code != -int(syscall.SIGKILL) {
				t.Fatalf("apply did not die at %s: %d %s", point, code, out)
			}
			if ents, _ := os.ReadDir(filepath.Join(repo, ".git", "wt", "journal")); len(ents) != 1 {
				t.Fatalf("after the crash the journal holds %d entries, want 1", len(ents))
			}
			// While the journal stands, no writer is let into the worktree
			// (the apply runs git with the store's lock free).
			if t2 := filepath.Join(filepath.Dir(repo), "t2"); point == "finish:prepared" || point == "finish:archived" {
				r := run(t, t2, "wt-exec", "--client-id", "late", "--", "true")
				if r.code != 125 || !strings.Contains(r.stderr, "INTERRUPTED_TRANSACTION: a task-finish of task T-2 was interrupted") {
					t.Fatalf("wt-exec during the interrupted finish: %d %s", r.code, r.stderr)
				}
			}
			// The dry run and doctor name the interrupted apply and how to finish it.
			out, code = admin(t, bin, repo, "", "finish", "--task", "T-2", "--owner", "bob")
			if code != 1 || !strings.Contains(out, "INTERRUPTED_TRANSACTION") || !strings.Contains(out, "--apply "+plan) {
				t.Fatalf("dry run after the crash: %d %s", code, out)
			}
			out, _ = admin(t, bin, repo, "", "doctor")
			if !strings.Contains(out, "finish "+filepath.Join(filepath.Dir(repo), "t2")+" --owner bob --apply "+plan) {
				t.Fatalf("doctor after the crash:\n%s", out)
			}
			out, code = admin(t, bin, repo, "", "finish", "--task", "T-2", "--owner", "bob", "--apply", plan)
			if code != 0 || !strings.Contains(out, "TASK_FINISHED") || !strings.Contains(out, "resumed from phase") {
				t.Fatalf("apply after the crash: %d %s", code, out)
			}
			if got := pruneState(t, repo); got != want {
				t.Fatalf("state after recovery differs from an uninterrupted apply:\n got: %s\nwant: %s", got, want)
			}
			out, code = admin(t, bin, repo, "", "finish", "--task", "T-2", "--owner", "bob", "--apply", plan)
			if code != 1 || !strings.Contains(out, "GC_ALREADY_APPLIED") {
				t.Fatalf("third apply: %d %s", code, out)
			}
			if out, code := admin(t, bin, repo, "", "allocate", "--task", "T-2", "--owner", "bob", filepath.Join(filepath.Dir(repo), "t2")); code != 0 {
				t.Fatalf("the key is not free after the recovered finish: %d %s", code, out)
			}
		})
	}
}
