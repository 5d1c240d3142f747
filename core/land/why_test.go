package land

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/store"
)

// TestWhyFromTheStore: why answers from events.jsonl: a landing recorded
// before provenance was kept (its event's own fields), a commit moved
// onto main by no lander, and a last line a power loss cut is skipped.
func TestWhyFromTheStore(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.task("A", "a", "a")
	root := f.R.Store.Root()
	why := func(c string) WhyResult {
		t.Helper()
		w, err := Why(f.Ctx, f.R.Git, root, "main", c, f.Dir)
		if err != nil || w.From != "store" {
			t.Fatalf("why %s: %+v %v", c, w, err)
		}
		return w
	}

	// An old landing: its event has no provenance.
	onto := f.Git("rev-parse", "main")
	old := f.onMain("old", "old")
	f.Write(func(tx *store.Tx) error {
		return tx.LogEvent("task_landed", a.AllocationID, map[string]any{"task": "A", "source": old, "onto": onto, "result": old, "strategy": Merge})
	})
	w := why(old)
	if p := w.Landing; p == nil || p.Task != "A" || p.AllocationID != a.AllocationID || p.Strategy != Merge || p.LandedAt == "" || p.Lander != "" {
		t.Errorf("why of an old landing's commit: %+v", p)
	}

	// A commit on main by plain git, after wt began its ledger.
	stray := f.onMain("stray", "stray")
	if w := why(stray); w.Landing != nil || !strings.Contains(w.Unseen, "UNGATED_REF_MOVE") {
		t.Errorf("why of a stray commit: %+v", w)
	}

	// A last line with no newline is one a power loss cut: not read, even
	// when what is there parses.
	ev, err := os.OpenFile(filepath.Join(root, "events.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ev.WriteString(`{"event":"task_landed","detail":{"task":"B","onto":"` + old + `","result":"` + stray + `"}}`); err != nil {
		t.Fatal(err)
	}
	ev.Close()
	if w := why(stray); w.Landing != nil {
		t.Errorf("a cut line was read: %+v", w.Landing)
	}
	if w := why(old); w.Landing == nil || w.Landing.Task != "A" {
		t.Errorf("why of the old landing, after a cut line: %+v", w)
	}
}
