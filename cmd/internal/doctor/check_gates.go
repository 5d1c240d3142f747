package doctor

import (
	"errors"
	"fmt"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/maint"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/core/view"
)

// readInventory reads git's worktree list, after the admin check (a FIFO
// as a worktree's HEAD would hang it). When git stops, the finding says
// where, and the admin check's fix comes first.
func readInventory(s *scope) {
	s.inv, s.invErr = s.r.Git.Inventory(s.ctx)
	if s.invErr == nil {
		return
	}
	f := Finding{Subject: "git worktree list", Problem: s.invErr.Error(), Hint: fmt.Sprintf("run git -C %s worktree list", s.repo)}
	if d, ok := decision.As(s.invErr); ok && d.Code == decision.GitMetadataUntrusted {
		f.Hint = d.Hint // the worktree git stopped at, and its repair (Inventory's diagnosis)
	}
	if s.adminFix != "" {
		f.Hint, f.Fix = "", s.adminFix
	}
	s.find(f)
}

// checkGates: every checkout's gate problems (a feature worktree off its
// task branch, a task branch checked out elsewhere), every live allocation
// without a registered worktree, and a note for each worktree of a role
// that wt leaves ungated.
func checkGates(s *scope) {
	if s.invErr != nil {
		return // readInventory's finding
	}
	ctx, tx, r, pol, inv, allocs, repo := s.ctx, s.tx, s.r, s.pol, s.inv, s.allocs, s.repo
	seen := map[string]bool{}
	for _, wt := range inv {
		var a *store.Allocation
		if wt.Key != "" && wt.Key != gitrepo.MainKey {
			got, err := r.RegisteredAllocation(tx, wt.Key)
			if err != nil {
				s.storeErr(err)
				continue
			}
			a = got
			// A binding awaiting backfill (checkRegistrations reports it
			// with that fix): its task has a worktree, not one to finish.
			if a == nil {
				if id, awaiting, err := alloc.AwaitingBackfill(tx, wt.Key); err != nil {
					s.storeErr(err)
					continue
				} else if awaiting {
					seen[id] = true
				}
			}
		}
		gitDir := r.Git.CommonDir
		if wt.Key != gitrepo.MainKey {
			gitDir = gitrepo.AdminDir(r.Git.CommonDir, wt.Key)
		}
		problems, err := view.GateProblems(tx, repo, wt, gitDir, a)
		if err != nil {
			s.storeErr(err)
			continue
		}
		for _, p := range problems {
			s.find(Finding{Subject: wt.Path, Problem: p.Code + ": " + p.Message, Fix: p.Fix, Hint: p.Hint})
		}
		if a == nil {
			continue
		}
		seen[a.AllocationID] = true
		s.checkAllocated(wt, a)
	}
	for _, a := range allocs {
		if seen[a.AllocationID] || a.Lifecycle == store.Released {
			continue
		}
		s.find(Finding{Subject: a.WorktreePath,
			Problem: decision.UnregisteredWorktree + ": " + decision.Words(decision.UnregisteredWorktree, "no-registered-worktree", a.TaskKey, a.Lifecycle, a.WorktreePath),
			Fix:     view.FinishCommand(repo, a, maint.FinishNeedsArchive(ctx, r, pol.PublicationBranch, a, "")),
			Hint:    "the dry run shows what finishing keeps; --archive keeps unmerged commits under refs/wt/archive/"})
	}
}

// checkAllocated is the gates check of worktree wt, which allocation a
// governs: a worktree moved or gone from under wt's records, git's files
// that disagree with them, and a role whose writes wt does not gate.
func (s *scope) checkAllocated(wt gitrepo.Worktree, a *store.Allocation) {
	ctx, tx, r, pol, repo := s.ctx, s.tx, s.r, s.pol, s.repo
	if !wt.Prunable && wt.Path != a.WorktreePath && a.Lifecycle != store.Released {
		// git worktree move: wt's records, and every wt command, still
		// name the old path (a leased one is checkLeases' finding).
		if _, leased, err := tx.Lease(a.AllocationID); err == nil && !leased {
			s.find(Finding{Subject: wt.Path,
				Problem: decision.InvalidTarget + ": " + decision.Words(decision.InvalidTarget, "worktree-moved", a.TaskKey, a.WorktreePath),
				Fix:     fmt.Sprintf("git -C %s worktree move %s %s", repo, shell.Word(wt.Path), shell.Word(a.WorktreePath))})
		}
	}
	if !wt.Prunable {
		if err := gitrepo.VerifyMetadata(r.Git.CommonDir, wt.Key, wt.Path); err != nil {
			f := Finding{Subject: wt.Path, Problem: decision.CodeOf(err) + ": " + err.Error()}
			var d *decision.Error
			if errors.As(err, &d) {
				f.Problem, f.Fix = d.Code+": "+d.Message, d.Hint
			}
			s.find(f)
		}
	}
	if wt.Prunable && a.Lifecycle != store.Released && wt.Path != a.WorktreePath && gitrepo.PointsBack(r.Git.CommonDir, wt.Key, a.WorktreePath) {
		pr := view.GitdirRewritten(repo, *a, wt.Path)
		s.find(Finding{Subject: a.WorktreePath, Problem: pr.Code + ": " + pr.Message, Fix: pr.Fix})
		return
	}
	if wt.Prunable && a.Role != store.RoleAudit && a.Lifecycle != store.Released {
		s.find(Finding{Subject: wt.Path,
			Problem: decision.CheckoutMissing + ": " + decision.Words(decision.CheckoutMissing, "checkout-deleted", a.TaskKey, a.Lifecycle),
			Fix:     view.FinishCommand(repo, *a, maint.FinishNeedsArchive(ctx, r, pol.PublicationBranch, *a, wt.Head)),
			Hint:    "the dry run shows what finishing keeps; --archive keeps unmerged commits under refs/wt/archive/"})
	}
	if _, ungated := alloc.RoleGate[a.Role]; ungated && a.Lifecycle != store.Released {
		s.note(Finding{Subject: wt.Path,
			Problem: decision.UngatedRole + ": " + decision.Words(decision.UngatedRole, "role-ungated", a.TaskKey, a.Role, alloc.RoleGate[a.Role])})
	} else if alloc.GateOf(*a) != alloc.GateLease && alloc.GateOf(*a) != alloc.GateReadOnly {
		s.find(Finding{Subject: wt.Path,
			Problem: decision.InvalidRole + ": " + decision.Words(decision.InvalidRole, "role-unknown", a.TaskKey, a.Role),
			Hint:    "look at its record with wt-admin status --json"})
	}
}
