package doctor

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// checkViews: a confined run's private view whose run ended without
// wt-exec (killed) holds what that run did not publish yet; its record
// stays in the store until the next wt-exec on the worktree recovers it
// (confine.Recover), which is the fix. A view whose worktree's lease has
// a live holder is that run's own.
func checkViews(s *scope) {
	tx, allocs, root, scan := s.tx, s.allocs, s.r.Store.Root(), s.scan
	keys, err := store.ViewRecords(root)
	if err != nil {
		s.find(Finding{Subject: store.ViewsDir(root), Problem: "the records of confined runs' views cannot be read: " + err.Error()})
		return
	}
	if len(keys) == 0 {
		return
	}
	ev, err := scan()
	if err != nil {
		s.find(Finding{Subject: "/proc", Problem: err.Error()})
		return
	}
	for _, key := range keys {
		rec, _, err := store.ReadViewRecord(root, key)
		if err != nil {
			s.find(Finding{Subject: key, Problem: err.Error(), Hint: "look at it: cat " + shell.Word(store.ViewRecordPath(root, key))})
			continue
		}
		if rec.Runner != nil {
			if live, err := proc.IsLive(proc.NewReader(), *rec.Runner); err != nil || live {
				continue // its wt-exec runs (or cannot be told from one that does)
			}
		}
		var a *store.Allocation
		for i := range allocs {
			if allocs[i].WorktreeKey == key {
				a = &allocs[i]
			}
		}
		if a != nil {
			if l, ok, err := tx.Lease(a.AllocationID); err != nil || (ok && lease.Assess(ev, l, time.Now(), lease.Caller{}).HolderLive) {
				continue // its run goes on (or cannot be told from one that does)
			}
		}
		f := Finding{Subject: rec.Dir,
			Problem: decision.ViewLeft + ": " + decision.Words(decision.ViewLeft, "confined-run-killed", rec.Task, rec.Dir)}
		if rec.Discard {
			f.Problem = decision.ViewLeft + ": " + decision.Words(decision.ViewLeft, "sandboxed-run-killed", rec.Task, rec.Dir)
		}
		if a != nil {
			f.Fix = fmt.Sprintf("wt-exec -C %s --no-confine -- true", shell.Word(a.WorktreePath))
		} else {
			f.Hint = fmt.Sprintf("its worktree is no longer allocated; look at what it holds: git --git-dir=%s log --oneline --all", shell.Word(filepath.Join(rec.Dir, "upper")))
		}
		s.find(f)
	}
}
