package maint

import (
	"strings"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/crashpoint"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/store"
)

// A journaled apply (prune, finish) runs in turns, so that no git process
// runs while the store's exclusive lock is held (every commit gate of the
// repository waits for that lock):
//
//  1. plan, under the shared lock: git is asked, and the plan is rebuilt
//     (or an interrupted journal's plan checked against the live state);
//  2. begin, under the exclusive lock and with no git: the journal is as
//     the plan found it and the records are as the plan read them, and
//     the journal is written (PREPARED) or kept;
//  3. each step: its git work with no store lock held, then its phase
//     recorded under the exclusive lock (a step of records only does its
//     work in that same section).
//
// All of it runs inside the repository's git-admin turn
// (store.Store.WithGitAdmin), which adds, prunes and finishes take one at a
// time, so the worktrees git lists change under a step only by a git run
// by hand. While the journal exists no writer lease is granted on its
// target (the lease package refuses one), which is what the single
// exclusive section of older builds gave.

// step is one phase of a journaled apply.
type step struct {
	phase string
	// git is the step's work with the store's lock free (nil: none).
	git func() error
	// records is the step's work inside the section that records its
	// phase (nil: none).
	records func(tx *store.Tx) error
}

// journalLookup finds an apply's journal (nil when none) and every other
// journal in flight.
type journalLookup func(tx *store.Tx) (*store.Journal, []store.Journal, error)

// begin writes the apply's journal (fresh, when the plan found none) or
// keeps the one the plan resumed (seen), under the exclusive lock: the
// journal must still be as the plan found it and check (the records as
// the plan read them) must pass. It returns the journal and whether it is
// new.
func begin(r *alloc.Repo, lookup journalLookup, seen *store.Journal, fresh func() store.Journal, check func(tx *store.Tx, others []store.Journal) error) (*store.Journal, bool, error) {
	var out *store.Journal
	created := false
	err := r.Store.Write(func(tx *store.Tx) error {
		j, others, err := lookup(tx)
		if err != nil {
			return err
		}
		if (j == nil) != (seen == nil) || j != nil && (j.TransactionID != seen.TransactionID || j.Phase != seen.Phase) {
			return movedOn(seen, j)
		}
		if err := check(tx, others); err != nil {
			return err
		}
		if j == nil {
			nj := fresh()
			if err := tx.PutJournal(&nj); err != nil {
				return err
			}
			j, created = &nj, true
		}
		out = j
		return nil
	})
	return out, created, err
}

// runSteps runs the steps whose phase j has not reached, in order, each
// recorded under the exclusive lock once its git work is done; op names
// the crash points ("op:phase-in-lower-case").
func runSteps(r *alloc.Repo, op string, j *store.Journal, order map[string]int, steps []step) error {
	for _, s := range steps {
		if order[j.Phase] >= order[s.phase] {
			continue
		}
		if s.git != nil {
			if err := s.git(); err != nil {
				return err
			}
		}
		err := r.Store.Write(func(tx *store.Tx) error {
			if err := stillAt(tx, *j); err != nil {
				return err
			}
			if s.records != nil {
				if err := s.records(tx); err != nil {
					return err
				}
			}
			next := *j
			next.Phase, next.UpdatedAt = s.phase, store.Now()
			if err := tx.PutJournal(&next); err != nil {
				return err
			}
			*j = next
			return nil
		})
		if err != nil {
			return err
		}
		crashpoint.Here(op + ":" + strings.ToLower(strings.ReplaceAll(s.phase, "_", "-")))
	}
	return nil
}

// conclude runs fn (the event, the receipt) under the exclusive lock,
// with the journal still where the steps left it.
func conclude(r *alloc.Repo, j store.Journal, fn func(tx *store.Tx) error) error {
	return r.Store.Write(func(tx *store.Tx) error {
		if err := stillAt(tx, j); err != nil {
			return err
		}
		return fn(tx)
	})
}

// stillAt refuses unless the store holds journal j at its phase: nothing
// but this apply may move it (TRANSACTION_IN_FLIGHT).
func stillAt(tx *store.Tx, j store.Journal) error {
	js, err := tx.Journals()
	if err != nil {
		return err
	}
	for _, cur := range js {
		if cur.TransactionID == j.TransactionID {
			if cur.Phase == j.Phase {
				return nil
			}
			return movedOn(&j, &cur)
		}
	}
	return movedOn(&j, nil)
}

// movedOn is the refusal when a journal is not as this apply left it.
func movedOn(want, got *store.Journal) error {
	what := func(j *store.Journal) string {
		if j == nil {
			return "no journal"
		}
		return "journal " + j.TransactionID + " in phase " + j.Phase
	}
	return decision.Say(decision.TransactionInFlight, "another-run", what(want), what(got)).
		WithHint("nothing more was done; see where it is with wt-admin doctor, then run the same apply again")
}
