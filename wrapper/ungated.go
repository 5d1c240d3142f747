package wrapper

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/ledger"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// markBranch notes where the grant's task branch and its reflog stand
// (a zero mark: none to watch): a ref read and a stat, whatever the
// branch's history.
func markBranch(c gitrepo.Checkout, g lease.Grant) gitrepo.ReflogMark {
	if g.Allocation.Branch == nil || g.Role != store.RoleFeature {
		return gitrepo.ReflogMark{}
	}
	return gitrepo.MarkReflog(c.CommonDir, "refs/heads/"+*g.Allocation.Branch)
}

// explainUngated is the default cause of a move no gate approved, when
// the caller cannot say what a commit there meets.
const explainUngated = "git with hooks off, or the ref written by hand"

// reportUngated says, at release, when the run's own task branch moved
// during the run with no gate approval (its harness ran git with hooks
// off, or wrote the ref by hand), or is gone, and records it as an event
// (ungated_ref_moves) for wt-admin audit to be asked about. The moves are
// the reflog's entries since the mark that no line of the branch's ledger
// covers, and, whatever the reflog says (expired or deleted meanwhile), a
// tip the ledger does not account for. Best effort: what cannot be read is
// not reported (audit reads it again).
func reportUngated(r *alloc.Repo, c gitrepo.Checkout, g lease.Grant, mark gitrepo.ReflogMark, explain func(gitrepo.Checkout) string, notify func(string)) {
	if mark.Ref == "" || !g.Owned {
		return
	}
	ref := mark.Ref
	now := gitrepo.MarkReflog(c.CommonDir, ref)
	if now.Same(mark) {
		return // the branch and its reflog are as the run found them: nothing of this run's
	}
	led, lerr := store.ReadLedgerTail(r.Store.Root(), g.Allocation.AllocationID, ref)
	tip := now.Tip
	if rec, gone := led.Gone(tip); gone && lerr == nil {
		notify(decision.TaskBranchMissing + ": " + decision.Words(decision.TaskBranchMissing, "gone-during-run",
			g.Allocation.TaskKey, *g.Allocation.Branch, gitrepo.Short(rec), ledger.RestoreBranch(c.TopLevel, ref, rec)))
		return
	}
	n := 0
	if entries, ok, err := gitrepo.ReflogSince(c.CommonDir, mark); err == nil && ok && len(entries) > 0 {
		n = uncovered(entries, led.Lines)
		if n > 0 && lerr == nil {
			// The run's first moves may lie before the ledger's tail (a
			// run of hundreds of commits): read it whole.
			if full, err := store.ReadLedger(r.Store.Root(), g.Allocation.AllocationID, ref); err == nil {
				n = uncovered(entries, full.Lines)
			}
		}
	}
	if n == 0 && lerr == nil && len(led.Lines) > 0 && tip != "" && tip != mark.Tip && !led.Accounts(tip) {
		n = 1 // the reflog does not show it (expired, deleted, or the ref written by hand)
	}
	if n == 0 {
		return
	}
	since, _ := time.Parse(time.RFC3339Nano, g.Lease.AcquiredAt)
	why := explainUngated
	if explain != nil {
		why = cmp.Or(explain(c), why)
	}
	notify(fmt.Sprintf("UNGATED_REF_MOVE: task %s's branch %s moved %d time(s) during this run with no gate approval (%s); see wt-admin --repo %s audit --since %s",
		g.Allocation.TaskKey, *g.Allocation.Branch, n, why, shell.Word(c.TopLevel), since.UTC().Format(time.RFC3339)))
	id, lid := g.Allocation.AllocationID, g.Lease.LeaseID
	h := g.Lease.Holder
	_ = r.Store.Write(func(tx *store.Tx) error { // Best effort: the reflog keeps what audit needs.
		return tx.AppendEvent(store.Event{At: store.Now(), Event: "ungated_ref_moves",
			AllocationID: &id, LeaseID: &lid, Holder: &h, Actor: proc.Actor(),
			Detail: map[string]any{"ref": ref, "count": n, "since": g.Lease.AcquiredAt}})
	})
}

// uncovered counts the reflog entries no ledger line covers.
func uncovered(entries []gitrepo.ReflogEntry, lines []store.LedgerLine) int {
	n := 0
	for _, j := range ledger.Cover(entries, lines, nil) {
		if j < 0 {
			n++
		}
	}
	return n
}

// importPending brings into the task branch's ledger the moves the gate of
// a command confined by Landlock alone (which may not write wt's store)
// recorded in the checkout's git dir (store.PendingLedgerName): those the
// reflog shows since the run's mark exactly (same old and new), as
// ViaConfined lines; then the file goes. Lines the reflog does not show are
// dropped: they name no move of this run. Best effort: a move not brought
// in reads as ungated, never the other way.
func importPending(r *alloc.Repo, c gitrepo.Checkout, g lease.Grant, mark gitrepo.ReflogMark) {
	if c.GitDir == "" {
		return
	}
	p := filepath.Join(c.GitDir, store.PendingLedgerName)
	if _, err := os.Lstat(p); err != nil {
		return
	}
	defer os.Remove(p)
	if mark.Ref == "" || !g.Owned {
		return
	}
	pend, err := store.ReadLedgerFile(p, mark.Ref, 0)
	if err != nil || len(pend.Lines) == 0 {
		return
	}
	entries, ok, err := gitrepo.ReflogSince(c.CommonDir, mark)
	if err != nil || !ok {
		return
	}
	for _, j := range ledger.Cover(entries, pend.Lines, nil) { // AppendLedger makes the ledgers' dir
		if j < 0 {
			continue
		}
		l := pend.Lines[j]
		l.Via, l.Time = store.ViaConfined, 0
		_ = store.AppendLedger(r.Store.Root(), g.Allocation.AllocationID, l) // Best effort, as above.
	}
}
