package view

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ledger"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
)

// TestBranchProblems: a live feature task's branch is held against wt's
// ledger: at its recorded tip nothing is said; moved with no approval it
// is UNGATED_REF_MOVE, gone it is TASK_BRANCH_MISSING with the restore;
// a ledger that cannot be read says so. Other roles, released tasks and
// tasks with no ledger are not judged.
func TestBranchProblems(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", store.RoleFeature, "w1")
	audit := f.Allocate("A-1", store.RoleAudit, "audit")
	root, common, repo := f.R.Store.Root(), f.R.Git.CommonDir, "REPO"
	problems := func(a store.Allocation) []Problem { return BranchProblems(common, root, repo, a) }

	if got := problems(a); got != nil {
		t.Errorf("at its recorded tip: %+v", got)
	}
	if got := problems(audit); got != nil {
		t.Errorf("an audit: %+v", got)
	}
	released := a
	released.Lifecycle = store.Released
	// Moved with hooks off: a commit the ledger does not account for.
	moved := f.Git("commit-tree", "-p", f.Base, "-m", "ungated", f.Base+"^{tree}")
	f.Git("update-ref", "refs/heads/wt/T-1", moved)
	want := []Problem{{Alarm: true, Code: decision.UngatedRefMove, Fix: "wt-admin --repo REPO audit",
		Message: "task T-1's branch wt/T-1 is at " + gitrepo.Short(moved) + ", not at " + gitrepo.Short(f.Base) + " where wt last approved it: moved with no gate approval (hooks off, or the ref written directly)"}}
	if got := problems(a); !reflect.DeepEqual(got, want) {
		t.Errorf("moved:\n got %+v\nwant %+v", got, want)
	}
	if got := problems(released); got != nil {
		t.Errorf("a released task: %+v", got)
	}
	retained := a
	retained.Lifecycle = store.Retained
	if got := problems(retained); len(got) != 1 || got[0].Code != decision.UngatedRefMove {
		t.Errorf("a retained task: %+v", got)
	}
	// In status, the finding comes first on the task's row.
	if r := row(t, f.status(nil), a.WorktreePath); !reflect.DeepEqual(r.Problems, BranchProblems(common, root, f.Dir, a)) ||
		r.Problems[0].Fix != "wt-admin --repo "+f.Dir+" audit" {
		t.Errorf("status row: %+v", r.Problems)
	}

	// Gone: the worktree is switched away and the branch deleted.
	gittest.Git(t, a.WorktreePath, "checkout", "-q", "--detach")
	f.Git("update-ref", "-d", "refs/heads/wt/T-1")
	want = []Problem{{Alarm: true, Code: decision.TaskBranchMissing, Fix: ledger.RestoreBranch(a.WorktreePath, "refs/heads/wt/T-1", f.Base),
		Message: "task T-1's branch wt/T-1 is gone from git; wt's ledger records its tip " + gitrepo.Short(f.Base) + " (deleted with hooks off, or by a git gc outside wt's view): the next commit there is refused until it is restored"}}
	if got := problems(a); !reflect.DeepEqual(got, want) {
		t.Errorf("gone:\n got %+v\nwant %+v", got, want)
	}

	// No ledger (allocated before wt kept them): the reflog is all there is.
	noLedger := a
	noLedger.AllocationID = "00000000-0000-4000-8000-00000000000a"
	if got := problems(noLedger); got != nil {
		t.Errorf("no ledger: %+v", got)
	}
	// A ledger that is not a file cannot be read.
	if err := os.Remove(store.LedgerPath(root, a.AllocationID)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(store.LedgerPath(root, a.AllocationID), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := problems(a); len(got) != 1 || got[0].Code != decision.InvalidMetadata ||
		!strings.HasPrefix(got[0].Message, "wt's ledger of task T-1's branch cannot be read: ") {
		t.Errorf("an unreadable ledger: %+v", got)
	}
	// A branch name git cannot hold as a ref file cannot be read either.
	bad := a
	b := "../../escape"
	bad.Branch = &b
	if got := problems(bad); len(got) != 1 || got[0].Code != decision.InvalidMetadata ||
		got[0].Hint != "look at it: git -C REPO show-ref refs/heads/../../escape" {
		t.Errorf("an unreadable branch: %+v", got)
	}
}
