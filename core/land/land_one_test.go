package land

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/store"
)

// landing is task's landing record (ok false when it has none).
func (f *fixture) landing(task string) (store.Landing, bool) {
	f.T.Helper()
	var rec store.Landing
	var ok bool
	if err := f.R.Store.Read(func(tx *store.Tx) error {
		var err error
		rec, ok, err = tx.Landing(f.wtAlloc(task))
		return err
	}); err != nil {
		f.T.Fatal(err)
	}
	return rec, ok
}

// openJournals are the land journals still open: a landing whose
// outcome no one concluded.
func (f *fixture) openJournals() []store.Journal {
	f.T.Helper()
	var js []store.Journal
	if err := f.R.Store.Read(func(tx *store.Tx) error {
		var err error
		js, err = tx.Journals()
		return err
	}); err != nil {
		f.T.Fatal(err)
	}
	return js
}

// receipts are the outcomes of the concluded land journals.
func (f *fixture) receipts() []string {
	f.T.Helper()
	var out []string
	if err := f.R.Store.Read(func(tx *store.Tx) error {
		rs, err := tx.Receipts()
		for _, r := range rs {
			if r.Operation == OpLand {
				out = append(out, r.Outcome)
			}
		}
		return err
	}); err != nil {
		f.T.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// events is the store's events.jsonl.
func (f *fixture) events() string {
	f.T.Helper()
	b, err := os.ReadFile(filepath.Join(f.R.Store.Root(), "events.jsonl"))
	if err != nil {
		f.T.Fatal(err)
	}
	return string(b)
}

// onMain commits file=content on main in the canonical checkout, hooks
// off: a move of main that no lander made.
func (f *fixture) onMain(file, content string) string {
	f.T.Helper()
	if err := os.WriteFile(filepath.Join(f.Dir, file), []byte(content+"\n"), 0o644); err != nil {
		f.T.Fatal(err)
	}
	f.Git("add", file)
	f.Git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "main: "+file)
	return f.Git("rev-parse", "HEAD")
}

// TestLandOneAtATime: --batch 1 lands each task by its own move of main,
// onto the one before it; a conflict is handed back with its attempt
// kept under refs/wt/land/<task>/<n>, and the rest go on.
func TestLandOneAtATime(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.task("A", "a", "a")
	f.task("B", "shared", "b")
	f.task("C", "shared", "c")
	f.task("D", "d", "d")
	before := f.Git("rev-parse", "main")
	cSource := f.Git("rev-parse", "wt/C")
	var said []string
	res := f.land(Options{Batch: 1, Jobs: 1, Notify: func(s string) { said = append(said, s) }}, "A", "B", "C", "D")
	if want := []string{"A LANDED", "B LANDED", "C LAND_CONFLICT", "D LANDED"}; !slices.Equal(codes(res), want) {
		t.Fatalf("codes %v, want %v", codes(res), want)
	}
	if res.Code != decision.LandConflict {
		t.Errorf("result code %s, want the first failure's", res.Code)
	}
	// One move a task landed, each onto the one before.
	moves := strings.Fields(f.Git("reflog", "show", "--format=%H", "main"))
	a, b, d := res.Tasks[0], res.Tasks[1], res.Tasks[3]
	if want := []string{d.Result, b.Result, a.Result, before}; !slices.Equal(moves[:4], want) {
		t.Errorf("main's reflog %v, want %v", moves, want)
	}
	if a.Onto != before || b.Onto != a.Result || d.Onto != b.Result || res.Tip != d.Result {
		t.Errorf("ontos: A %s B %s D %s, tip %s", a.Onto, b.Onto, d.Onto, res.Tip)
	}
	for _, tr := range []TaskResult{a, b, d} {
		// Their tips are none wt's ledger approved: landed as told
		// (--accept-ungated), and recorded so.
		if tr.Batch != "" || tr.Attempt != 1 || tr.Strategy != Rebase || !tr.AcceptedUngated {
			t.Errorf("%s: batch %q attempt %d strategy %s accepted ungated %v", tr.Task, tr.Batch, tr.Attempt, tr.Strategy, tr.AcceptedUngated)
		}
		if rec, _ := f.landing(tr.Task); rec.State != store.LandingLanded || rec.Result != tr.Result || rec.Batch != "" || !rec.AcceptedUngated {
			t.Errorf("%s's landing record: %+v", tr.Task, rec)
		}
	}
	// C's attempt is kept, its record says why, and its hand-back is there.
	c := res.Tasks[2]
	if c.AttemptRef != "refs/wt/land/C/1" || f.Git("rev-parse", c.AttemptRef) != cSource || !slices.Equal(c.Paths, []string{"shared"}) {
		t.Errorf("C: %+v", c)
	}
	if rec, _ := f.landing("C"); rec.State != store.LandingConflict || rec.AttemptRef != c.AttemptRef || rec.Handback != c.Handback || rec.Attempts != 1 {
		t.Errorf("C's landing record: %+v", rec)
	}
	if _, err := os.Stat(c.Handback); err != nil {
		t.Errorf("C's hand-back: %v", err)
	}
	if !slices.ContainsFunc(said, func(s string) bool { return strings.HasPrefix(s, "C: LAND_CONFLICT: ") }) ||
		!slices.ContainsFunc(said, func(s string) bool {
			return strings.HasPrefix(s, "A: its tip ") && strings.Contains(s, "(--accept-ungated)")
		}) {
		t.Errorf("the lander did not say C's conflict, or A's tip landed ungated: %q", said)
	}
	// Every intent concluded landed: nothing open for a recover.
	if js := f.openJournals(); len(js) != 0 {
		t.Errorf("open journals: %+v", js)
	}
	if got := f.receipts(); !slices.Equal(got, []string{"landed", "landed", "landed"}) {
		t.Errorf("land receipts %v", got)
	}

	// Again: A is an ancestor of main; B was rebased, and main holds what
	// its landing made. C conflicts again, at its next attempt.
	again := f.land(Options{Batch: 1, Jobs: 1}, "A", "B", "C")
	if want := []string{"A ALREADY_LANDED", "B ALREADY_LANDED", "C LAND_CONFLICT"}; !slices.Equal(codes(again), want) || again.Tip != res.Tip {
		t.Fatalf("again: %v at %s", codes(again), again.Tip)
	}
	if again.Tasks[1].Result != b.Result || again.Tasks[2].AttemptRef != "refs/wt/land/C/2" {
		t.Errorf("again: B's result %s (want %s), C's attempt %s", again.Tasks[1].Result, b.Result, again.Tasks[2].AttemptRef)
	}
}

// TestLandSkipsAnAttemptALanderBegan: an attempt whose log a killed
// lander left is not used again.
func TestLandSkipsAnAttemptALanderBegan(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.task("one", "shared", "one")
	f.task("batched", "shared", "batched")
	f.onMain("shared", "main")
	for _, batch := range []int{1, 0} {
		task := map[int]string{1: "one", 0: "batched"}[batch]
		log := filepath.Join(f.R.Store.Root(), store.LandLogsDir, task, "1.log")
		if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(log, []byte("killed\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		res := f.land(Options{Batch: batch, Jobs: 1}, task)
		if tr := res.Tasks[0]; tr.Code != decision.LandConflict || tr.Attempt != 2 || tr.AttemptRef != "refs/wt/land/"+task+"/2" {
			t.Errorf("batch %d: %+v", batch, tr)
		}
		if b, _ := os.ReadFile(log); string(b) != "killed\n" {
			t.Errorf("batch %d: the killed lander's log is now %q", batch, b)
		}
	}
}

// TestLandChangesAlreadyOnMain: a task whose change main has already (the
// same change committed there) is ALREADY_LANDED, and main does not move.
func TestLandChangesAlreadyOnMain(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, batch := range []int{1, 0} {
		task := map[int]string{1: "one", 0: "batched"}[batch]
		f.task(task, task, task)
		tip := f.onMain(task, task)
		res := f.land(Options{Batch: batch, Jobs: 1}, task)
		tr := res.Tasks[0]
		if tr.Code != decision.AlreadyLanded || !strings.Contains(tr.Message, "changed nothing") || res.Tip != tip {
			t.Errorf("batch %d: %+v, main at %s (was %s)", batch, tr, res.Tip, tip)
		}
		if rec, _ := f.landing(task); rec.State != store.LandingLanded || rec.Result != tip {
			t.Errorf("batch %d: the landing record %+v", batch, rec)
		}
	}
}

// TestLandOneAtATimeStrategies: --batch 1 integrates by the strategy the
// lander is told, or the one the task's ready mark asked for.
func TestLandOneAtATimeStrategies(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.task("S", "s", "1")
	f.commit("S", "s", "2")
	f.task("M", "m", "m")
	f.task("R", "r", "r")
	f.onMain("base", "x") // so that a rebase makes new commits
	if _, err := MarkReady(f.R, "S", "alice", Squash, f.Dir); err != nil {
		t.Fatal(err)
	}
	res := f.land(Options{Batch: 1, Jobs: 1, Strategy: Merge}, "S", "M")
	for _, tr := range res.Tasks {
		want := map[string]string{"S": Squash, "M": Merge}[tr.Task]
		if tr.Code != decision.Landed || tr.Strategy != want {
			t.Errorf("%s: %s, strategy %s, want LANDED %s", tr.Task, tr.Code, tr.Strategy, want)
		}
	}
	res = f.land(Options{Batch: 1, Jobs: 1}, "R")
	if res.Tasks[0].Code != decision.Landed {
		t.Fatalf("R: %+v", res.Tasks[0])
	}
	if got := f.Git("log", "--first-parent", "--format=%s", "-3", "main"); got != "R: r\nLand task M (wt-admin land)\nLand task S (squashed by wt-admin land)" {
		t.Errorf("main's first-parent history:\n%s", got)
	}
	// The squash holds both of S's commits, as one.
	if got := f.Git("show", "-s", "--format=%b", "main~2"); !strings.Contains(got, "- S: s") || strings.Count(got, "- S: s") != 2 {
		t.Errorf("the squash's message lists %q", got)
	}
	if n := f.Git("rev-list", "--count", "--no-merges", f.Base+"..main"); n != "4" {
		t.Errorf("%s commits on main that are not merges, want main's own, the squash, M's and R's", n)
	}
	// A squash of a task whose change main has: nothing to commit.
	f.task("T", "t", "t")
	f.onMain("t", "t")
	res = f.land(Options{Batch: 1, Jobs: 1, Strategy: Squash}, "T")
	if tr := res.Tasks[0]; tr.Code != decision.AlreadyLanded {
		t.Errorf("T: %+v", tr)
	}
}
