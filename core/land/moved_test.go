package land

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// moveMain moves main one commit on, as another process would while a
// lander integrates: a commit of main's tree, by git's own
// compare-and-swap.
func (f *fixture) moveMain(msg string) {
	f.T.Helper()
	old := f.Git("rev-parse", "main")
	c := f.Git("commit-tree", "-p", old, "-m", msg, "main^{tree}")
	f.Git("update-ref", "refs/heads/main", c, old)
}

// when is a Notify that runs fn each time the lander says it integrates
// task (fn gets how many times it has).
func when(task string, fn func(n int)) func(string) {
	n := 0
	return func(s string) {
		if strings.HasPrefix(s, task+": integrating ") {
			n++
			fn(n)
		}
	}
}

// TestLandIntegratesAgainWhenMainMoves: main moved between the
// integration and the compare-and-swap is integrated onto again, the
// intent concluded moved_under; a branch that never stays still gives up
// after maxRetries (LAND_CONFLICT), main as the other mover left it.
func TestLandIntegratesAgainWhenMainMoves(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, batch := range []int{1, 0} {
		for _, always := range []bool{false, true} {
			task := fmt.Sprintf("t%d-%v", batch, always)
			f.task(task, task, task)
			moves := 0
			notify := when(task, func(n int) {
				if n == 1 || always {
					moves++
					f.moveMain(fmt.Sprintf("move %d", moves))
				}
			})
			receipts := len(f.receipts())
			res := f.land(Options{Batch: batch, Jobs: 1, Notify: notify}, task)
			tr := res.Tasks[0]
			name := fmt.Sprintf("batch %d, main always moving %v", batch, always)
			if !always {
				if tr.Code != decision.Landed || f.Git("log", "-1", "--format=%s", "main^") != "move 1" {
					t.Errorf("%s: %+v, main's history %s", name, tr, f.Git("log", "--format=%s", "-3", "main"))
				}
				if batch == 1 && tr.Retries != 1 {
					t.Errorf("%s: %d retries, want 1", name, tr.Retries)
				}
				if got := len(f.receipts()); got != receipts+2 {
					t.Errorf("%s: %d intents concluded, want 2 (moved under, landed)", name, got-receipts)
				}
				continue
			}
			if tr.Code != decision.LandConflict || !strings.Contains(tr.Message, "moved") || moves != maxRetries+1 {
				t.Errorf("%s: %+v after %d moves", name, tr, moves)
			}
			if got := f.Git("log", "-1", "--format=%s", "main"); got != fmt.Sprintf("move %d", moves) {
				t.Errorf("%s: main at %q, not the other mover's last", name, got)
			}
			if rec, _ := f.landing(task); rec.State == store.LandingLanded {
				t.Errorf("%s: recorded landed: %+v", name, rec)
			}
			if js := f.openJournals(); len(js) != 0 {
				t.Errorf("%s: open journals %+v", name, js)
			}
		}
	}
	// Every moved-under intent is concluded so.
	n := 0
	for _, o := range f.receipts() {
		if o == "moved_under" {
			n++
		}
	}
	if want := 2 + 2*(maxRetries+1); n != want {
		t.Errorf("%d receipts moved_under, want %d", n, want)
	}
}

// TestLandRechecksBeforeTheMove: a task whose tip moved, whose writer
// came back, or whose allocation changed while it was integrated is
// refused at the move (its refusal), and the task after it still lands;
// main holds nothing of the refused one.
func TestLandRechecksBeforeTheMove(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i, c := range []struct {
		name   string
		change func(x string)
		code   string
	}{
		{"its tip moved", func(x string) { f.commit(x, x, "again") }, decision.LandTipMoved},
		{"its writer came back", func(x string) { f.Lease(f.alloc(x), wttest.Self(t), nil) }, decision.WriterLeaseHeld},
		{"it was retained", func(x string) {
			if _, err := f.R.Retain(f.Ctx, f.wts[x], "alice", nil); err != nil {
				t.Fatal(err)
			}
		}, decision.NotReady},
	} {
		for _, batch := range []int{1, 0} {
			name := fmt.Sprintf("%s, batch %d", c.name, batch)
			x, y := fmt.Sprintf("x%d-%d", i, batch), fmt.Sprintf("y%d-%d", i, batch)
			f.task(x, x, x)
			f.task(y, y, y)
			before := f.Git("rev-parse", "main")
			res := f.land(Options{Batch: batch, Jobs: 1, Notify: when(x, func(int) { c.change(x) })}, x, y)
			if got := codes(res); !slices.Equal(got, []string{x + " " + c.code, y + " LANDED"}) {
				t.Errorf("%s: codes %v (%s)", name, got, res.Tasks[0].Message)
				continue
			}
			if got := f.Git("log", "--format=%s", before+"..main"); got != y+": "+y {
				t.Errorf("%s: main's new commits %q", name, got)
			}
			if rec, _ := f.landing(x); rec.State == store.LandingLanded {
				t.Errorf("%s: %s recorded landed", name, x)
			}
		}
	}
}
