package wrapper

import (
	"fmt"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/waitline"
)

// waitable is a refusal that --wait waits out: the lease is held by a live
// writer (here or in the fleet), reserved for another client, fenced by a
// process the last run left in the worktree, or the fleet does not answer (a cluster
// electing a new leader; nothing is granted meanwhile, and --timeout
// bounds a fleet that never comes back).
func waitable(err error) bool {
	switch decision.CodeOf(err) {
	case decision.WriterLeaseHeld, decision.FleetLeaseHeld, decision.FleetUnreachable, decision.WriterLeaseReserved, decision.RuntimeOccupied:
		return true
	}
	return false
}

// waitAndAcquire is acquire for --wait: in line behind earlier waiters,
// trying only when none is ahead, and sleeping between tries until the
// lease changes (or waitline.Recheck passes), until acquire succeeds or refuses
// for another reason, the deadline passes, or a signal stops the wait.
//
// A run whose client the worktree's next grant is reserved for (a handoff)
// tries whatever its place in line: the reservation comes before the line.
func (s *supervisor) waitAndAcquire(root string, c gitrepo.Checkout, client string, acquire func() error) error {
	// Signals are caught before the run takes its place in line: one that
	// came before WatchStart's goroutine had caught them (a loaded
	// machine) would kill a waiter with its default action, unreported.
	// (Outside --wait the catch stays in the background: it costs a run
	// 0.2 ms, and a signal that early kills nothing that has started.)
	s.catch()
	key := c.Key
	if key == gitrepo.MainKey {
		key = "main"
	}
	q, err := waitline.Join(root, key)
	if err != nil {
		return err
	}
	defer q.Leave()
	now := time.Now
	if s.now != nil {
		now = s.now
	}
	var deadline time.Time
	if s.opts.Timeout > 0 {
		deadline = now().Add(s.opts.Timeout)
	}
	told := false
	tell := func(msg string) {
		if !told && s.opts.Waiting != nil {
			s.opts.Waiting(msg)
		}
		told = true
	}
	var last error
	for {
		if n := q.Ahead(); n > 0 && !lease.ReservedFor(s.repo, c, client) {
			tell(fmt.Sprintf("%d earlier wt-exec --wait run(s) wait for %s; this one is next after them", n, c.TopLevel))
		} else {
			err := acquire()
			if err == nil || !waitable(err) {
				return err
			}
			last = err
			if d, ok := decision.As(err); ok {
				tell(d.Code + ": " + d.Message)
			}
		}
		if s.startCtx.Err() != nil {
			return s.stopped()
		}
		if !deadline.IsZero() && !now().Before(deadline) {
			why := "earlier waiters were still in line"
			if last != nil {
				why = last.Error()
			}
			return decision.Say(decision.WriterLeaseWaitTimeout, "waited-lease", s.opts.Timeout, c.TopLevel, why).
				WithHint("wait longer (--timeout D, or no --timeout), or see who holds it: wt-admin lease inspect %s", shell.Word(c.TopLevel))
		}
		q.Sleep(s.startCtx, deadline)
	}
}
