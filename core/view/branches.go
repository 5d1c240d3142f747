package view

import (
	"fmt"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ledger"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// BranchProblems holds the branch of live feature allocation a against
// wt's ledger (store.ReadLedgerTail), whatever its reflog says: gone while
// the ledger records a tip is an alarm (TASK_BRANCH_MISSING, with the
// restore), and so is a tip the ledger does not account for
// (UNGATED_REF_MOVE: moved with hooks off, or written by hand; audit says
// how). What cannot be read says so. A ref read and a file's tail: its
// cost does not grow with the branch's history.
func BranchProblems(commonDir, root, repoArg string, a store.Allocation) []Problem {
	if a.Branch == nil || a.Role != store.RoleFeature || (a.Lifecycle != store.Active && a.Lifecycle != store.Retained) {
		return nil
	}
	ref := "refs/heads/" + *a.Branch
	tip, err := gitrepo.ReadRef(commonDir, ref)
	if err != nil {
		return []Problem{{Code: decision.InvalidMetadata, Message: decision.Words(decision.InvalidMetadata, "task-branch", a.TaskKey, *a.Branch, err),
			Hint: fmt.Sprintf("look at it: git -C %s show-ref %s", repoArg, shell.Word(ref))}}
	}
	led, err := store.ReadLedgerTail(root, a.AllocationID, ref)
	if err != nil {
		return []Problem{{Code: decision.InvalidMetadata, Message: decision.Words(decision.InvalidMetadata, "wt-ledger", a.TaskKey, err),
			Hint: "look at the file named; wt never overwrites what it cannot read"}}
	}
	if len(led.Lines) == 0 {
		return nil // allocated before wt kept ledgers: the reflog is all audit has
	}
	if rec, gone := led.Gone(tip); gone {
		return []Problem{{Alarm: true, Code: decision.TaskBranchMissing,
			Message: decision.Words(decision.TaskBranchMissing, "task-branch", a.TaskKey, *a.Branch, gitrepo.Short(rec)),
			Fix:     ledger.RestoreBranch(a.WorktreePath, ref, rec)}}
	}
	if tip != "" && !led.Accounts(tip) {
		return []Problem{{Alarm: true, Code: decision.UngatedRefMove,
			Message: decision.Words(decision.UngatedRefMove, "task-branch", a.TaskKey, *a.Branch, gitrepo.Short(tip), gitrepo.Short(led.Tip())),
			Fix:     fmt.Sprintf("wt-admin --repo %s audit", repoArg)}}
	}
	return nil
}
