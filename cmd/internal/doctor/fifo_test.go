// A test of a fault found while covering the package, which failed before
// its fix: doctor ran git in a worktree whose HEAD is a FIFO.

package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/shell"
)

// TestFIFOAsHeadIsFoundWithoutHanging: a FIFO as a governed worktree's
// HEAD (which hangs any git that opens that worktree) is the admin check's
// finding, fixed by quarantine, and doctor runs no git there. The hooks
// check asked git in every governed worktree what a commit there meets
// (install.CheckGate, GateState), and that git waited on the FIFO until
// the context ended: without the deadline below, doctor never returned.
func TestFIFOAsHeadIsFoundWithoutHanging(t *testing.T) {
	t.Parallel()
	f, a := governed(t)
	head := filepath.Join(gitrepo.AdminDir(f.R.Git.CommonDir, a.WorktreeKey), "HEAD")
	if err := os.Remove(head); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(head, 0o644); err != nil {
		t.Fatal(err)
	}
	// A watchdog, not a measure: a run that needs it has hung. It ends
	// with the test's own deadline (go test -timeout), a little before.
	ctx, cancel := context.WithCancel(context.Background())
	if d, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), d.Add(-10*time.Second))
	}
	defer cancel()
	rep, err := Run(ctx, f.Dir)
	if ctx.Err() != nil {
		t.Errorf("doctor waited on the FIFO until its context ended (err %v):%s", err, describe(rep))
	}
	if err != nil {
		t.Fatal(err)
	}
	fix := "wt-admin --repo " + repoWord(f) + " quarantine " + shell.Word(a.WorktreePath)
	wantFinding(t, rep, "admin", want{subject: a.WorktreePath, problem: []string{decision.AdminDirUnsafe + ": ", "HEAD"}, fix: fix})
	wantFinding(t, rep, "gates", want{subject: "git worktree list", problem: []string{head}, fix: fix})
	for _, got := range rep.Findings {
		if strings.Contains(got.Problem, "context deadline exceeded") || strings.Contains(got.Problem, "killed") {
			t.Errorf("finding of a git cut short: %+v", got)
		}
	}
}
