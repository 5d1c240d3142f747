package doctor

import (
	"fmt"
	"time"

	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/view"
)

// checkLeases: a lease whose holder is gone, or whose worktree is gone.
func checkLeases(s *scope) {
	tx, allocs, commonDir, repo, scan := s.tx, s.allocs, s.r.Git.CommonDir, s.repo, s.scan
	now := time.Now()
	for _, a := range allocs {
		for _, o := range lease.Occupants(a) {
			p := view.OccupantProblem(repo, a.WorktreePath, o)
			s.find(Finding{Subject: a.WorktreePath, Problem: p.Code + ": " + p.Message, Fix: p.Fix, Hint: p.Hint})
		}
		l, ok, err := tx.Lease(a.AllocationID)
		if err != nil {
			s.storeErr(err)
			continue
		}
		if !ok {
			if reason := lease.OrphanLock(commonDir, a); reason != "" {
				s.find(Finding{Subject: a.WorktreePath,
					Problem: fmt.Sprintf("git's lock says %q but wt has no such lease: the lock file is not authoritative (%s), and only makes git refuse to remove or prune the worktree", reason, lease.FileOrCommentNotAuthoritative),
					Fix:     fmt.Sprintf("git -C %s worktree unlock %s", repo, shell.Word(a.WorktreePath))})
			}
			continue
		}
		ev, err := scan()
		if err != nil {
			s.find(Finding{Subject: "/proc", Problem: err.Error()})
			return
		}
		p := lease.Assess(ev, l, now, lease.Caller{})
		path := shell.Word(l.WorktreePath)
		f := Finding{Subject: l.WorktreePath}
		at, atErr := gitrepo.CheckoutOf(commonDir, a.WorktreeKey)
		switch {
		case atErr == nil && at != l.WorktreePath:
			// Moved (git worktree move): every lease command refuses the
			// mismatch, so the fix is to move it back.
			f.Problem = fmt.Sprintf("the worktree of lease %s (client %s) was moved to %s; the lease and the allocation record %s", l.LeaseID, l.Holder.ClientID, at, l.WorktreePath)
			f.Fix = fmt.Sprintf("git -C %s worktree move %s %s", repo, shell.Word(at), path)
		case p.HolderLive && p.MissingWorktree:
			alarm := view.VanishedUnderHolder(repo, l)
			f.Problem = "ALARM: " + alarm.Code + ": " + alarm.Message
			f.Hint = alarm.Hint
		case p.HolderLive:
			continue // a live holder's lease, expired or not, is its own business
		case !p.NoLiveMutationRisk:
			f.Problem = fmt.Sprintf("the holder of lease %s (client %s, pid %d) exited, but %s", l.LeaseID, l.Holder.ClientID, l.Holder.PID, p.Risk)
			f.Hint = fmt.Sprintf("see who is there with wt-admin --repo %s ps %s; the lease can be ended when they are gone", repo, path)
		case p.MissingWorktree:
			f.Problem = fmt.Sprintf("lease %s (client %s, pid %d) holds a worktree that is gone", l.LeaseID, l.Holder.ClientID, l.Holder.PID)
			f.Fix = fmt.Sprintf("wt-admin --repo %s lease abandon %s --reason 'worktree removed'", repo, path)
		case p.Expired:
			f.Problem = fmt.Sprintf("lease %s (client %s, pid %d) expired and its holder is dead", l.LeaseID, l.Holder.ClientID, l.Holder.PID)
			f.Fix = fmt.Sprintf("wt-admin --repo %s lease expire", repo)
		default:
			f.Problem = fmt.Sprintf("the holder of lease %s (client %s, pid %d) is dead and nothing of it runs", l.LeaseID, l.Holder.ClientID, l.Holder.PID)
			f.Fix = fmt.Sprintf("wt-admin --repo %s lease release %s --lease-id %s", repo, path, l.LeaseID)
		}
		s.find(f)
	}
}
