// Package ledger reads a branch's reflog against wt's ledger of the moves
// it approved or made (store.Ledger): which entries each line covers, and
// the baseline a ledger begins with. audit, status and doctor ask it; the
// gate and allocate write the lines (docs/format.md).
package ledger

import (
	"fmt"
	"strings"

	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// Cover tells, for each of a ref's reflog entries that skip does not leave
// out, the line of the ref's ledger (store.Ledger) that covers it (its
// index, -1 for none): a move wt approved or made with exactly the entry's
// old and new values (a null value and none alike). Each line covers one
// entry, in order; a baseline (init) covers none. An approval covers
// exactly the move it was given for: never a move from the same parent to
// another commit.
func Cover(entries []gitrepo.ReflogEntry, lines []store.LedgerLine, skip func(int, gitrepo.ReflogEntry) bool) []int {
	used := make([]bool, len(lines))
	out := make([]int, len(entries))
	next := 0 // lines are in the order of the moves: search from the last one used
	for i, e := range entries {
		out[i] = -1
		if skip != nil && skip(i, e) {
			continue
		}
		for k := range lines {
			j := (next + k) % len(lines)
			l := lines[j]
			if !used[j] && l.Via != store.ViaInit && sameOID(l.Old, e.Old) && sameOID(l.New, e.New) {
				used[j], out[i], next = true, j, j+1
				break
			}
		}
	}
	return out
}

// sameOID compares object names, a null one and none alike.
func sameOID(a, b string) bool {
	if IsZeroOID(a) {
		a = ""
	}
	if IsZeroOID(b) {
		b = ""
	}
	return a == b
}

// IsZeroOID reports whether oid is all zeros (a ref created or deleted).
func IsZeroOID(oid string) bool { return oid != "" && strings.Trim(oid, "0") == "" }

// LastNew is the value the last entry gave the ref ("" for none).
func LastNew(entries []gitrepo.ReflogEntry) string {
	if len(entries) == 0 {
		return ""
	}
	return entries[len(entries)-1].New
}

// RestoreBranch is the command that puts missing task branch ref back on
// tip, as the task's writer in its worktree (the gate lets only the writer
// create it, and only on the tip wt's ledger records).
func RestoreBranch(worktree, ref, tip string) string {
	return fmt.Sprintf("wt-exec -C %s -- git update-ref %s %s", shell.Word(worktree), shell.Word(ref), tip)
}

// Begin begins ledger name in the store at storeRoot, when it has no file
// yet (an allocation made before ledgers, a store older than them), with a
// baseline (Baseline). Best effort: without it, the history before reads
// as ungated.
func Begin(commonDir, storeRoot, name, ref string) {
	if !store.HasLedger(storeRoot, name) {
		_ = Baseline(commonDir, storeRoot, name, ref) // Best effort, as above.
	}
}

// Baseline appends to ledger name where ref stands now and how many
// reflog entries it has: its history before is not a finding (audit leaves
// it out), as a branch's before init is not.
func Baseline(commonDir, storeRoot, name, ref string) error {
	tip, err := gitrepo.ReadRef(commonDir, ref)
	if err != nil {
		return err
	}
	entries, _ := gitrepo.ReadReflog(commonDir, ref) // unreadable: nothing before to leave out
	return store.AppendLedger(storeRoot, name, store.LedgerLine{Via: store.ViaInit, Ref: ref, New: tip, Entries: len(entries)})
}
