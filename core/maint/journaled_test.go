package maint

import (
	"errors"
	"testing"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// testRepo is a repository of which only the store is used: the journal
// driver touches nothing else.
func testRepo(t *testing.T) *alloc.Repo {
	t.Helper()
	st, err := store.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &alloc.Repo{Store: st}
}

func lookupAll(tx *store.Tx) (*store.Journal, []store.Journal, error) {
	js, err := tx.Journals()
	if err != nil || len(js) == 0 {
		return nil, js, err
	}
	return &js[0], js[1:], nil
}

func freshJournal() store.Journal {
	return store.Journal{TransactionID: ids.New(), Operation: "test", Phase: PhasePrepared, Actor: proc.Actor(),
		Target: "/t", CreatedAt: store.Now(), UpdatedAt: store.Now()}
}

func noCheck(*store.Tx, []store.Journal) error { return nil }

// TestBegin: a fresh apply writes its journal; an apply that planned
// without one and finds one, or planned with one and finds it moved on,
// is refused (TRANSACTION_IN_FLIGHT); a failing check writes nothing.
func TestBegin(t *testing.T) {
	r := testRepo(t)
	boom := errors.New("records changed")
	if _, _, err := begin(r, lookupAll, nil, freshJournal, func(*store.Tx, []store.Journal) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("a failing check: %v", err)
	}
	j, created, err := begin(r, lookupAll, nil, freshJournal, noCheck)
	if err != nil || !created || j.Phase != PhasePrepared {
		t.Fatalf("%+v %v %v", j, created, err)
	}
	if _, _, err := begin(r, lookupAll, nil, freshJournal, noCheck); decision.CodeOf(err) != decision.TransactionInFlight {
		t.Fatalf("a journal that appeared after the plan: %v", err)
	}
	seen := *j
	again, created, err := begin(r, lookupAll, &seen, freshJournal, noCheck)
	if err != nil || created || again.TransactionID != j.TransactionID {
		t.Fatalf("resuming the journal the plan saw: %+v %v %v", again, created, err)
	}
	seen.Phase = PhaseRemoved
	if _, _, err := begin(r, lookupAll, &seen, freshJournal, noCheck); decision.CodeOf(err) != decision.TransactionInFlight {
		t.Fatalf("a journal at another phase than the plan saw: %v", err)
	}
}

// TestRunSteps: steps run in order, each phase recorded after its work;
// a phase already reached is skipped; a failing step stops there, its
// phase not recorded; a journal moved on by another run refuses the next
// step; a records step runs inside the section that records its phase.
func TestRunSteps(t *testing.T) {
	r := testRepo(t)
	order := map[string]int{PhasePrepared: 0, PhaseArchived: 1, PhaseRemoved: 2, PhaseReleased: 3}
	j, _, err := begin(r, lookupAll, nil, freshJournal, noCheck)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	boom := errors.New("git failed")
	fail := true
	steps := []step{
		{phase: PhaseArchived, git: func() error { ran = append(ran, "archive"); return nil }},
		{phase: PhaseRemoved, git: func() error {
			ran = append(ran, "remove")
			if fail {
				return boom
			}
			return nil
		}},
		{phase: PhaseReleased, records: func(tx *store.Tx) error {
			ran = append(ran, "release")
			_, err := tx.Journals() // inside the section
			return err
		}},
	}
	if err := runSteps(r, "test", j, order, steps); !errors.Is(err, boom) {
		t.Fatalf("a failing step: %v", err)
	}
	if j.Phase != PhaseArchived {
		t.Fatalf("after the failing step the journal is at %s, want %s", j.Phase, PhaseArchived)
	}
	fail, ran = false, nil
	if err := runSteps(r, "test", j, order, steps); err != nil {
		t.Fatal(err)
	}
	if want := []string{"remove", "release"}; len(ran) != 2 || ran[0] != want[0] || ran[1] != want[1] {
		t.Fatalf("resumed steps ran %v, want %v (the archive done already)", ran, want)
	}
	err = r.Store.Read(func(tx *store.Tx) error { return stillAt(tx, *j) })
	if err != nil || j.Phase != PhaseReleased {
		t.Fatalf("the journal is not where the steps left it: %s %v", j.Phase, err)
	}
	// Another run moves the journal on: the next step refuses.
	other := *j
	other.Phase = PhasePrepared
	if err := r.Store.Write(func(tx *store.Tx) error { return tx.PutJournal(&other) }); err != nil {
		t.Fatal(err)
	}
	j.Phase = PhaseArchived
	if err := runSteps(r, "test", j, order, steps); decision.CodeOf(err) != decision.TransactionInFlight {
		t.Fatalf("a journal moved on by another run: %v", err)
	}
}

func TestPlanID(t *testing.T) {
	a, _ := PlanID(map[string]any{"b": 1, "a": "x"})
	b, _ := PlanID(map[string]any{"a": "x", "b": 1})
	c, _ := PlanID(map[string]any{"a": "y", "b": 1})
	if a != b || a == c || ValidPlanID("--apply", a) != nil {
		t.Fatalf("plan ids: %s %s %s", a, b, c)
	}
	if decision.CodeOf(ValidPlanID("--apply", "ABC")) != decision.Usage {
		t.Fatal("a malformed plan id is accepted")
	}
}
