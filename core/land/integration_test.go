package land

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/decision/decisiontest"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/store"
)

// TestLandClearsWhatAKilledGitLeft: git's locks and a half-begun rebase
// a git killed with its lander left in the integration worktree are
// removed, once no process uses it, and said in an event; the landing
// goes on.
func TestLandClearsWhatAKilledGitLeft(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.task("A", "a", "a")
	f.task("B", "b", "b")
	f.land(Options{Batch: 1}, "A")
	iwt := f.alloc(IntegrationTask)
	if iwt.Role != store.RoleIntegration || iwt.WorktreePath != IntegrationPath(f.Dir) {
		t.Fatalf("the integration worktree: %+v", iwt)
	}
	admin := gitrepo.AdminDir(f.R.Git.CommonDir, iwt.WorktreeKey)
	left := []string{filepath.Join(admin, "index.lock"), filepath.Join(admin, "HEAD.lock"),
		filepath.Join(f.R.Git.CommonDir, "refs", "heads", IntegrationTask+".lock")}
	for _, p := range left {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rebase := filepath.Join(admin, "rebase-merge")
	if err := os.Mkdir(rebase, 0o755); err != nil {
		t.Fatal(err)
	}
	res := f.land(Options{Batch: 1}, "B")
	if res.Code != decision.Landed {
		t.Fatalf("B: %+v", res.Tasks)
	}
	for _, p := range append(left, rebase) {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is left: %v", p, err)
		}
	}
	if ev := f.events(); !strings.Contains(ev, `"land_leftovers_removed"`) || !strings.Contains(ev, "index.lock") {
		t.Errorf("no event says what was removed")
	}
}

// TestLandWithATestButNoWtExec: a landing with --test whose wt-exec
// cannot be run stops (COMMAND_NOT_FOUND) before anything moves: one at
// a time, or a batch whose tests run at once in integration worktrees of
// their own (allocated as needed; a feature task that took one's key is
// TASK_KEY_IN_USE).
func TestLandWithATestButNoWtExec(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, k := range []string{"A", "B", "C", "D"} {
		f.task(k, strings.ToLower(k), k)
	}
	f.Allocate(slotTask(2), "", "w-slot")
	exec := filepath.Join(t.TempDir(), "no-wt-exec")
	var said []string
	opts := Options{Test: "true", ExecBin: exec, Notify: func(s string) { said = append(said, s) }}

	opts.Batch = 1
	_, err := Land(f.Ctx, f.R, withTasks(f, opts, "A"))
	decisiontest.Want(t, err, decision.CommandNotFound)
	if log := filepath.Join(f.R.Store.Root(), store.LandLogsDir, "A", "1.log"); !contains(said, "testing in a sandbox: true (output: "+log+")") {
		t.Errorf("said %q", said)
	}
	opts.TestUnconfined, said = true, nil
	_, err = Land(f.Ctx, f.R, withTasks(f, opts, "A"))
	decisiontest.Want(t, err, decision.CommandNotFound)
	if !contains(said, "A: testing UNCONFINED") {
		t.Errorf("said %q", said)
	}
	if rec, _ := f.landing("A"); rec.State == store.LandingLanded || rec.State == store.LandingTestFailed {
		t.Errorf("A's landing record: %+v", rec)
	}

	// Four tasks, three jobs: three candidates at once, the third one's
	// integration worktree key taken.
	opts.Batch, opts.Jobs, opts.TestUnconfined = 0, 3, false
	_, err = Land(f.Ctx, f.R, withTasks(f, opts, "A", "B", "C", "D"))
	decisiontest.WantHint(t, err, decision.TaskKeyInUse, "--jobs 2")
	second := f.alloc(slotTask(1))
	if second.Role != store.RoleIntegration || second.WorktreePath != IntegrationPath(f.Dir)+"-2" {
		t.Errorf("the second integration worktree: %+v", second)
	}
	opts.Jobs, said = 2, nil
	_, err = Land(f.Ctx, f.R, withTasks(f, opts, "A", "B", "C", "D"))
	decisiontest.Want(t, err, decision.CommandNotFound)
	if !contains(said, "candidate 1 (main + A + B): testing") || !contains(said, "candidate 2 (main + A + B + C + D): testing") {
		t.Errorf("said %q", said)
	}
	if got := f.Git("rev-parse", "main"); got != f.Base {
		t.Errorf("main moved to %s with no test run", got)
	}
	if js := f.openJournals(); len(js) != 0 {
		t.Errorf("open journals %+v", js)
	}
}

// withTasks is opts for tasks of f, ungated tips accepted.
func withTasks(f *fixture, opts Options, tasks ...string) Options {
	opts.Tasks, opts.RepoArg, opts.AcceptUngated = tasks, f.Dir, true
	return opts
}

// contains reports whether a line of said holds s.
func contains(said []string, s string) bool {
	for _, l := range said {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}
