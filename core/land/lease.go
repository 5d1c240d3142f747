// Package land is wt-admin land and wt-admin ready: the publication lease
// (one lander at a time may move the publication branch), the ready
// queue, and the landing of a task's branch onto the publication branch:
// integrated in wt's own integration worktree, tested there, and moved by
// compare-and-swap from the tip it integrated onto (docs/design.md, "The
// publication lease").
package land

import (
	"context"
	"fmt"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/core/waitline"
)

// ClientID is the client id the lander's publication lease names.
const ClientID = "wt-land"

// pause waits d, or returns INTERRUPTED (what says what was waited for)
// when ctx ends first.
func pause(ctx context.Context, d time.Duration, what string) *decision.Error {
	select {
	case <-ctx.Done():
		return decision.SayWrap(decision.Interrupted, ctx.Err(), "as-given", what)
	case <-time.After(d):
		return nil
	}
}

// deathProof says why holder h, found not live, is dead: the proof a
// takeover records.
func deathProof(h proc.Holder) string {
	boot, err := proc.BootID()
	if err == nil && boot != h.BootID {
		return "its boot (" + h.BootID + ") has ended"
	}
	st, err := proc.ReadStat(h.PID)
	if err != nil {
		return fmt.Sprintf("no process %d runs", h.PID)
	}
	if st.StartTicks != h.StartTicks {
		return fmt.Sprintf("process %d started at tick %d, not %d: another process", h.PID, st.StartTicks, h.StartTicks)
	}
	return fmt.Sprintf("process %d has exited (a zombie)", h.PID)
}

// held is the PUBLICATION_LEASE_HELD refusal for the live lease l.
func held(l store.PublicationLease, repoArg string) *decision.Error {
	task := ""
	if l.Task != "" {
		task = ", landing task " + l.Task
	}
	return decision.Say(decision.PublicationLeaseHeld, "publication-lease-held", l.Branch, l.Holder.PID, l.AcquiredAt, task).
		WithHint("land waits its turn unless told --no-wait: wt-admin --repo %s land ...; see it with wt-admin --repo %s status", repoArg, repoArg).
		WithFact("holder_pid", l.Holder.PID)
}

// acquire takes the publication lease of branch for this process: fresh,
// or taken over from a dead holder (with the proof, in the event and in
// tookOver). A live holder's is PUBLICATION_LEASE_HELD, or, when wait is
// set, waited for in the landers' line (store.LandersDir: arrival order,
// woken when the lease changes; until timeout, 0 for none:
// LAND_WAIT_TIMEOUT); waiting says once whom it waits for. A holder
// whose liveness cannot be read is held, never dead.
func acquire(ctx context.Context, r *alloc.Repo, branch, repoArg string, wait bool, timeout time.Duration, waiting func(string)) (mine store.PublicationLease, tookOver *store.PublicationLease, err error) {
	self, err := proc.Self()
	if err != nil {
		return mine, nil, err
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	var line *waitline.Line
	if wait {
		// In line from the start: a lander that comes later never goes
		// before one that waits.
		if line, err = waitline.JoinAt(store.LandersDir(r.Store.Root()), r.Store.Root()); err != nil {
			return mine, nil, err
		}
		defer line.Leave()
	}
	told := false
	for {
		if line != nil && line.Ahead() > 0 {
			if !deadline.IsZero() && time.Now().After(deadline) {
				return mine, nil, decision.Say(decision.LandWaitTimeout, "waited-publication-lease", timeout, branch).
					WithHint("wait longer: wt-admin --repo %s land --timeout 30m ...; see who waits: wt-admin --repo %s status", repoArg, repoArg)
			}
			if !told {
				waiting(fmt.Sprintf("waiting in line for the publication lease of %s (%d lander(s) ahead)", branch, line.Ahead()))
				told = true
			}
			line.Sleep(ctx, deadline)
			if ctx.Err() != nil {
				return mine, nil, decision.SayWrap(decision.Interrupted, ctx.Err(), "waiting-publication")
			}
			continue
		}
		var cur *store.PublicationLease
		err := r.Store.Write(func(tx *store.Tx) error {
			l, ok, err := tx.PublicationLease()
			if err != nil {
				return err
			}
			if ok {
				live, err := proc.IsLive(proc.NewReader(), l.Holder.Identity())
				if err != nil {
					return decision.SayWrap(decision.PublicationLeaseHeld, err, "publication-lease-holder", l.Holder.PID)
				}
				if live {
					cur = &l
					return nil
				}
				prev := l
				tookOver = &prev
			}
			repo, err := tx.Repository()
			if err != nil {
				return err
			}
			mine = store.PublicationLease{Meta: store.Meta{SchemaVersion: store.SchemaVersion}, LeaseID: ids.New(), RepositoryID: repo.RepositoryID,
				Branch: branch, AcquiredAt: store.Now(),
				Holder: proc.Holder{ClientID: ClientID, PID: self.PID, BootID: self.BootID, StartTicks: self.StartTicks}}
			if ok {
				mine.RecordVersion = l.RecordVersion
			}
			if err := tx.PutPublicationLease(&mine); err != nil {
				return err
			}
			detail := map[string]any{"lease_id": mine.LeaseID, "branch": branch}
			name := "publication_lease_acquired"
			if tookOver != nil {
				name = "publication_lease_taken_over"
				detail["from_lease_id"], detail["from_pid"], detail["proof"] = tookOver.LeaseID, tookOver.Holder.PID, deathProof(tookOver.Holder)
			}
			return tx.LogEvent(name, "", detail)
		})
		if err != nil || cur == nil {
			return mine, tookOver, err
		}
		refusal := held(*cur, repoArg)
		if line == nil {
			return mine, nil, refusal
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return mine, nil, decision.Say(decision.LandWaitTimeout, "waited-publication", timeout, refusal.Message).
				WithHint("wait longer: wt-admin --repo %s land --timeout 30m ...", repoArg)
		}
		if !told {
			what := fmt.Sprintf("waiting for the publication lease of %s: lander pid %d holds it", branch, cur.Holder.PID)
			if cur.Task != "" {
				what += ", landing task " + cur.Task
			}
			waiting(what)
			told = true
		}
		line.Sleep(ctx, deadline)
		if ctx.Err() != nil {
			return mine, nil, decision.SayWrap(decision.Interrupted, ctx.Err(), "waiting-publication")
		}
	}
}

// setTask records, in the lease, the task being landed ("" between tasks):
// what status and a refused lander show.
func setTask(r *alloc.Repo, mine *store.PublicationLease, task string) error {
	return r.Store.Write(func(tx *store.Tx) error {
		l, ok, err := tx.PublicationLease()
		if err != nil {
			return err
		}
		if !ok || l.LeaseID != mine.LeaseID {
			return lost(mine)
		}
		l.Task = task
		if err := tx.PutPublicationLease(&l); err != nil {
			return err
		}
		*mine = l
		return nil
	})
}

// lost is the refusal of a lander whose lease is no longer its own (an
// operator removed it, or it was taken over while this process was
// stopped).
func lost(mine *store.PublicationLease) *decision.Error {
	return decision.Say(decision.PublicationLeaseRequired, "this-lander", mine.LeaseID).
		WithHint("see who holds it: wt-admin status")
}

// release removes the publication lease if it is still mine.
func release(r *alloc.Repo, mine store.PublicationLease) error {
	return r.Store.Write(func(tx *store.Tx) error {
		l, ok, err := tx.PublicationLease()
		if err != nil || !ok || l.LeaseID != mine.LeaseID {
			return err
		}
		if err := tx.RemovePublicationLease(); err != nil {
			return err
		}
		return tx.LogEvent("publication_lease_released", "", map[string]any{"lease_id": mine.LeaseID, "branch": mine.Branch})
	})
}
