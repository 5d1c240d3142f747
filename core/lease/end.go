package lease

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/liveness"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// errNotOurs means the lease in the store is no longer the one a Grant
// holds: an operator ended or handed it over meanwhile.
var errNotOurs = errors.New("the lease is no longer this grant's")

// withOwnLease runs fn on the grant's lease, re-read under the exclusive
// lock. It refuses with WRITER_LEASE_MISMATCH when the lease is gone or is
// another one now.
func withOwnLease(r *alloc.Repo, g *Grant, fn func(tx *store.Tx, l *store.Lease) error) error {
	return r.Store.Write(func(tx *store.Tx) error {
		l, ok, err := tx.Lease(g.Lease.AllocationID)
		if err != nil {
			return err
		}
		if !ok || l.LeaseID != g.Lease.LeaseID || !l.Holder.Same(g.Lease.Holder) {
			return decision.SayWrap(decision.WriterLeaseMismatch, errNotOurs, "lease", g.Lease.LeaseID, g.Lease.WorktreePath).
				WithHint("see who holds it now with wt-admin status")
		}
		return fn(tx, &l)
	})
}

// Renew moves the grant's expiry to now+ttl (wt-exec calls it every ttl/3).
func Renew(r *alloc.Repo, g *Grant, ttl time.Duration) error {
	if !g.Applicable || ttl <= 0 {
		return nil
	}
	return withOwnLease(r, g, func(tx *store.Tx, l *store.Lease) error {
		now := time.Now().UTC()
		l.RenewedAt = store.Stamp(now)
		l.ExpiresAt = expiry(now, ttl)
		if err := tx.PutLease(l); err != nil {
			return err
		}
		g.Lease = *l
		return logEvent(tx, "writer_lease_renewed", g.Allocation, l, map[string]any{"expires_at": l.ExpiresAt, "periodic": true})
	})
}

// Released says what Release did.
type Released struct {
	// LeaseRemoved is true when the lease was removed.
	LeaseRemoved bool `json:"lease_removed"`
	// Kept says why a lease this grant owned was left in place ("" when
	// removed or not owned).
	Kept string `json:"kept,omitempty"`
}

// ReleaseLockWait bounds a release's wait for the store's lock ($WT_LOCK_WAIT
// does not shorten it). The wait costs no CPU.
const ReleaseLockWait = 5 * time.Minute

// Release ends what g started, in one exclusive section: it removes the
// runtime binding g added, and — only if g owns the lease (it acquired it
// or took it over) and the lease is still g's — removes the lease and git's
// worktree lock. A renewal leaves the lease to the holder that acquired it.
//
// A holder that has exited is released only with no survivor (the release
// rule of docs/decisions.md): nothing left in its process group and no
// other process using the worktree. Otherwise the lease stays, to be taken over
// once it is dead, and Kept says why.
//
// occupants are processes that started during the run, are not of it,
// and still use the worktree: each is left as a runtime binding of kind
// occupant, which keeps the worktree from the next writer
// (RUNTIME_OCCUPIED) until it is gone.
func Release(r *alloc.Repo, g Grant, scan func() (Evidence, error), occupants []proc.Holder) (Released, error) {
	var res Released
	if !g.Applicable || !g.Owned && g.Binding == "" {
		return res, nil
	}
	// A release waits for a busy store far longer than a command: a
	// lease left behind is ended only by the next wt-exec's proof.
	err := r.Store.WithLockWait(ReleaseLockWait).Write(func(tx *store.Tx) error {
		a, err := tx.Allocation(g.Lease.AllocationID)
		if err != nil {
			return err
		}
		if i := slices.Index(a.ExternalBindings, g.Binding); g.Binding != "" && i >= 0 {
			a.ExternalBindings = slices.Delete(a.ExternalBindings, i, i+1)
			a.UpdatedAt = store.Stamp(time.Now())
			if err := tx.PutAllocationRuntime(&a); err != nil {
				return err
			}
		}
		if !g.Owned {
			return logEvent(tx, "runtime_binding_removed", a, &g.Lease, map[string]any{"binding": g.Binding})
		}
		l, ok, err := tx.Lease(a.AllocationID)
		if err != nil {
			return err
		}
		if !ok && !g.leaseWritten {
			// The lease was never written (the child never started, or it
			// was stopped because the write failed): lift git's lock and
			// give the generation back, so nothing names a lease that
			// never existed.
			if _, err := gitrepo.RemoveLock(g.commonDir, g.key, Reason(g.Lease)); err != nil {
				return err
			}
			if g.Owned && a.LeaseGeneration == g.Lease.Generation {
				a.LeaseGeneration--
				a.UpdatedAt = store.Stamp(time.Now())
				if err := tx.PutAllocationRuntime(&a); err != nil {
					return err
				}
			}
			return logEvent(tx, "writer_lease_grant_undone", a, nil, map[string]any{"lease_id": g.Lease.LeaseID, "generation": g.Lease.Generation, "child_started": g.Started})
		}
		if !ok || l.LeaseID != g.Lease.LeaseID || !l.Holder.Same(g.Lease.Holder) {
			res.Kept = "the lease was ended or handed over by someone else meanwhile"
			return nil
		}
		exited, err := holderExited(l)
		if err != nil {
			return err
		}
		if exited {
			ev, err := scan()
			if err != nil {
				return err
			}
			if why := survivors(ev, l); why != "" {
				res.Kept = "its holder exited but " + why
				return logEvent(tx, "runtime_binding_removed", a, &l, map[string]any{"binding": g.Binding, "lease_kept": res.Kept})
			}
		}
		if err := tx.RemoveLease(a.AllocationID); err != nil {
			return err
		}
		if _, err := gitrepo.RemoveLock(g.commonDir, g.key, Reason(l)); err != nil {
			return err
		}
		res.LeaseRemoved = true
		if err := leaveOccupants(tx, &a, l, occupants); err != nil {
			return err
		}
		return logEvent(tx, "writer_lease_released", a, &l, map[string]any{
			"generation": l.Generation, "acquired_at": l.AcquiredAt, "holder_exited": exited, "child": l.Child, "binding_removed": g.Binding})
	})
	return res, err
}

// leaveOccupants records each occupant of a's worktree as a runtime
// binding of kind occupant, and the event.
func leaveOccupants(tx *store.Tx, a *store.Allocation, l store.Lease, occupants []proc.Holder) error {
	if len(occupants) == 0 {
		return nil
	}
	var pids []int
	for _, o := range occupants {
		v, err := proc.RuntimeBinding{Holder: o, Kind: proc.OccupantKind}.Encode()
		if err != nil {
			return err
		}
		a.ExternalBindings = append(a.ExternalBindings, v)
		pids = append(pids, o.PID)
	}
	a.UpdatedAt = store.Stamp(time.Now())
	if err := tx.PutAllocationRuntime(a); err != nil {
		return err
	}
	return logEvent(tx, "runtime_occupied", *a, &l, map[string]any{"pids": pids,
		"why": "started during the run, not of it, and still using the worktree: no writer is let in beside them"})
}

// holderExited reads the holder's identity alone: the common case (wt-exec
// releasing its own lease) needs no scan of every process.
func holderExited(l store.Lease) (bool, error) {
	live, err := proc.IsLive(proc.NewReader(), l.Holder.Identity())
	return !live, err
}

// survivors says what still keeps an exited holder's lease, or "": its
// groups, a carrier of its lease, or another process in the worktree; the
// processes in skip (an adopter and what it started, which may be those
// very survivors: the orphaned command adopting its own lease) are not
// evidence.
func survivors(ev Evidence, l store.Lease, skip ...int) string {
	if why := liveness.Alive(ev, l.Holder, l.Child, skip...); why != "" {
		return why
	}
	if why := liveness.Carriers(ev, l.LeaseID, skip...); why != "" {
		return why
	}
	uses, err := liveness.Users(ev, l.WorktreePath, skip...)
	if err != nil {
		return "the worktree's users cannot be read"
	}
	if len(uses) > 0 {
		return fmt.Sprintf("pid %d (%s) still uses the worktree (%s %s)", uses[0].PID, uses[0].Command, uses[0].Why, uses[0].Path)
	}
	return ""
}

// placeLock makes git's lock file of the worktree carry the lease's reason:
// created if absent, replaced if it carries another wt lease's reason (a
// stale one, or the lease just taken over), left alone if already right.
func placeLock(commonDir, key string, l store.Lease, tornOwn bool) error {
	want := Reason(l)
	reason, locked, err := gitrepo.ReadLock(commonDir, key)
	if err != nil {
		return decision.SayWrap(decision.InvalidTarget, err, "worktree", l.WorktreePath)
	}
	switch {
	case locked && reason == want:
		return nil
	case locked && !isWtReason(reason) && !(reason == "" && tornOwn):
		return decision.Say(decision.InvalidTarget, "worktree-was", l.WorktreePath, reason)
	case locked:
		err = gitrepo.ReplaceLock(commonDir, key, want)
	default:
		err = gitrepo.CreateLock(commonDir, key, want)
	}
	if errors.Is(err, gitrepo.ErrLocked) {
		return decision.Say(decision.InvalidTarget, "worktree-was-locked", l.WorktreePath).
			WithHint("see the lock with git worktree list --porcelain")
	}
	if err != nil {
		return decision.SayWrap(decision.InvalidTarget, err, "lock-worktree", l.WorktreePath)
	}
	return nil
}
