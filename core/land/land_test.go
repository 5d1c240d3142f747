package land

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/decision/decisiontest"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wtfixture"
)

// TestMain keeps every git away from the configuration of the user and of
// the machine (gittest.Setenv), before any test runs.
func TestMain(m *testing.M) {
	gittest.Setenv()
	os.Exit(m.Run())
}

// fixture is a governed repository with tasks whose branches hold work
// made with plain git (no gate: land is told --accept-ungated where the
// ledger would not account for it).
type fixture struct {
	*wtfixture.Repo
	wts map[string]string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return &fixture{Repo: wtfixture.New(t, policy.Change{}), wts: map[string]string{}}
}

// task allocates task and commits file=content in its worktree.
func (f *fixture) task(task, file, content string) store.Allocation {
	f.T.Helper()
	a := f.Allocate(task, "", "w-"+task)
	f.wts[task] = a.WorktreePath
	f.commit(task, file, content)
	return a
}

// commit commits file=content on task's branch, in its worktree.
func (f *fixture) commit(task, file, content string) {
	f.T.Helper()
	w := f.wts[task]
	if err := os.WriteFile(filepath.Join(w, file), []byte(content+"\n"), 0o644); err != nil {
		f.T.Fatal(err)
	}
	gittest.Git(f.T, w, "add", file)
	gittest.Git(f.T, w, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", task+": "+file)
}

// land runs Land with opts (AcceptUngated, RepoArg and Tasks filled in).
func (f *fixture) land(opts Options, tasks ...string) Result {
	f.T.Helper()
	opts.Tasks, opts.AcceptUngated, opts.RepoArg = tasks, true, f.Dir
	res, err := Land(f.Ctx, f.R, opts)
	if err != nil {
		f.T.Fatalf("land %v: %v", tasks, err)
	}
	return res
}

func codes(res Result) []string {
	var out []string
	for _, t := range res.Tasks {
		out = append(out, t.Task+" "+t.Code)
	}
	return out
}

// TestLandBatchOneMove: three tasks, no test, the whole queue: one move
// of main to the last one's commit, each task LANDED with its own
// commit, in order, recorded, with its provenance; why answers for each
// commit; a task whose file the one before it wrote conflicts and is
// handed back with what it met.
func TestLandBatchOneMove(t *testing.T) {
	f := newFixture(t)
	f.task("A", "a", "a")
	f.task("B", "shared", "b")
	f.task("C", "shared", "c") // conflicts with B's
	f.task("D", "d", "d")
	before := f.Git("rev-parse", "main")
	res := f.land(Options{Jobs: 1}, "A", "B", "C", "D")
	if want := []string{"A LANDED", "B LANDED", "C LAND_CONFLICT", "D LANDED"}; !slices.Equal(codes(res), want) {
		t.Fatalf("codes %v, want %v", codes(res), want)
	}
	if res.Code != decision.LandConflict || res.Failed().Task != "C" {
		t.Errorf("result %s, first failed %v", res.Code, res.Failed())
	}
	// One move, from before to D's commit.
	moves := strings.Fields(f.Git("reflog", "show", "--format=%H", "main"))
	if moves[0] != res.Tip || moves[1] != before {
		t.Errorf("main's reflog %v: want one move %s -> %s", moves, before, res.Tip)
	}
	if got := strings.Fields(f.Git("log", "--reverse", "--format=%s", before+"..main")); !slices.Equal(got, []string{"A:", "a", "B:", "shared", "D:", "d"}) {
		t.Errorf("main's new commits: %v", got)
	}
	batch := res.Tasks[0].Batch
	for _, tr := range res.Tasks {
		if tr.Code == decision.Landed && (tr.Batch == "" || tr.Batch != batch || tr.Strategy != Rebase) {
			t.Errorf("%s: batch %q strategy %q, want the batch %q, rebase", tr.Task, tr.Batch, tr.Strategy, batch)
		}
	}
	// C's hand-back: its file, with the conflict and B's commit it met.
	c := res.Tasks[2]
	b, err := os.ReadFile(c.Handback)
	if err != nil {
		t.Fatal(err)
	}
	var hb Handback
	if err := json.Unmarshal(b, &hb); err != nil {
		t.Fatal(err)
	}
	if hb.State != store.LandingConflict || !slices.Equal(hb.Paths, []string{"shared"}) || !strings.Contains(hb.Diff, "<<<<<<<") ||
		len(hb.Met) != 1 || hb.Met[0].Task != "B" || hb.Met[0].Subject != "B: shared" || !strings.Contains(hb.Next, "git rebase main") {
		t.Errorf("C's hand-back: %+v", hb)
	}
	// why, from the store: each landed task's commit is its own.
	for _, task := range []string{"A", "B", "D"} {
		c := f.Git("log", "-1", "--format=%H", "--grep", "^"+task+": ", "main")
		w, err := Why(f.Ctx, f.R.Git, f.R.Store.Root(), "main", c, f.Dir)
		if err != nil || w.Landing == nil || w.Landing.Task != task || w.From != "store" {
			t.Fatalf("why %s's commit: %+v %v", task, w, err)
		}
		if p := w.Landing; p.Batch != batch || !slices.Equal(p.BatchTasks, []string{"A", "B", "D"}) || p.Tested != res.Tip || p.Lander == "" || p.LandedAt == "" || !p.AcceptedUngated {
			t.Errorf("why %s: %+v", task, p)
		}
	}
	// A commit from before wt, and one not on main.
	w, err := Why(f.Ctx, f.R.Git, f.R.Store.Root(), "main", f.Base, f.Dir)
	if err != nil || w.Landing != nil || !strings.Contains(w.Unseen, "when wt began keeping its ledger") {
		t.Errorf("why of the first commit: %+v %v", w, err)
	}
	_, err = Why(f.Ctx, f.R.Git, f.R.Store.Root(), "main", "wt/C", f.Dir)
	decisiontest.Want(t, err, decision.NotOnPublication)
	_, err = Why(f.Ctx, f.R.Git, f.R.Store.Root(), "main", "nothing-such", f.Dir)
	decisiontest.Want(t, err, decision.Usage)
	// Landing them again: nothing moves.
	again := f.land(Options{Jobs: 1}, "A", "B", "D")
	if want := []string{"A ALREADY_LANDED", "B ALREADY_LANDED", "D ALREADY_LANDED"}; !slices.Equal(codes(again), want) || again.Tip != res.Tip {
		t.Errorf("again: %v at %s", codes(again), again.Tip)
	}
}

// TestLandBatchBound: --batch 2 lands three tasks by two moves, each to
// a prefix of the queue.
func TestLandBatchBound(t *testing.T) {
	f := newFixture(t)
	for _, k := range []string{"A", "B", "C"} {
		f.task(k, strings.ToLower(k), k)
	}
	before := f.Git("rev-parse", "main")
	res := f.land(Options{Batch: 2, Jobs: 1}, "A", "B", "C")
	if want := []string{"A LANDED", "B LANDED", "C LANDED"}; !slices.Equal(codes(res), want) {
		t.Fatalf("codes %v", codes(res))
	}
	moves := strings.Fields(f.Git("reflog", "show", "--format=%H", "main"))
	if moves[0] != res.Tip || moves[1] != res.Tasks[1].Result || moves[2] != before {
		t.Errorf("main's reflog %v: want %s, then B's %s, from %s", moves, res.Tip, res.Tasks[1].Result, before)
	}
	if res.Tasks[0].Batch != res.Tasks[1].Batch || res.Tasks[1].Batch == res.Tasks[2].Batch {
		t.Errorf("batches: %q %q %q", res.Tasks[0].Batch, res.Tasks[1].Batch, res.Tasks[2].Batch)
	}
}

// TestLandStrategies: each task lands the way its ready mark asked.
func TestLandStrategies(t *testing.T) {
	f := newFixture(t)
	f.task("S", "s", "1")
	f.commit("S", "s", "2")
	f.task("M", "m", "m")
	f.task("R", "r", "r")
	for _, m := range []struct{ task, strategy string }{{"S", Squash}, {"M", Merge}, {"R", ""}} {
		if _, err := MarkReady(f.R, m.task, "alice", m.strategy, f.Dir); err != nil {
			t.Fatal(err)
		}
	}
	_, err := MarkReady(f.R, "R", "alice", "ours", f.Dir)
	decisiontest.WantHint(t, err, decision.Usage, "--strategy squash")
	res := f.land(Options{Ready: true, Jobs: 1})
	for _, tr := range res.Tasks {
		want := map[string]string{"S": Squash, "M": Merge, "R": Rebase}[tr.Task]
		if tr.Code != decision.Landed || tr.Strategy != want {
			t.Errorf("%s: %s, strategy %s, want LANDED %s", tr.Task, tr.Code, tr.Strategy, want)
		}
	}
	if got := f.Git("log", "--first-parent", "--format=%s", "-3", "main"); got != "R: r\nLand task M (wt-admin land)\nLand task S (squashed by wt-admin land)" {
		t.Errorf("main's first-parent history:\n%s", got)
	}
}

// TestRecoverBatch: a dead lander's intent of a batch is concluded by the
// next lander: every task of it LANDED when main holds its commit, none
// when it does not.
func TestRecoverBatch(t *testing.T) {
	for _, moved := range []bool{true, false} {
		f := newFixture(t)
		a := f.task("A", "a", "a")
		b := f.task("B", "b", "b")
		onto := f.Git("rev-parse", "main")
		// The batch's chain, as a dead lander made it.
		iwt := f.Path("chain")
		f.Git("worktree", "add", "-q", "--detach", iwt, "wt/A")
		gittest.Git(t, iwt, "-c", "core.hooksPath=/dev/null", "cherry-pick", "wt/B")
		ra, rb := gittest.Git(t, iwt, "rev-parse", "HEAD~1"), gittest.Git(t, iwt, "rev-parse", "HEAD")
		in := intent{Onto: onto, Result: rb, Strategy: Rebase, Batch: "b-1", Task: "B", AllocationID: b.AllocationID,
			Tasks: []intent{{AllocationID: a.AllocationID, Task: "A", Source: ra, Onto: onto, Result: ra},
				{AllocationID: b.AllocationID, Task: "B", Source: f.Git("rev-parse", "wt/B"), Onto: ra, Result: rb}}}
		payload, _ := json.Marshal(in)
		dead := proc.Identity{PID: 1 << 22, BootID: ids.New(), StartTicks: 1}
		f.Write(func(tx *store.Tx) error {
			j := store.Journal{Meta: store.Meta{SchemaVersion: store.SchemaVersion}, TransactionID: ids.New(), Operation: OpLand, Phase: "INTEGRATED",
				Actor: dead, Target: "publication:A, B", Payload: payload, CreatedAt: store.Now(), UpdatedAt: store.Now()}
			return tx.PutJournal(&j)
		})
		if moved {
			f.Git("update-ref", "refs/heads/main", rb, onto)
		}
		res, err := Land(context.Background(), f.R, Options{Recover: true, RepoArg: f.Dir})
		if err != nil || res.Code != decision.LandRecovered || len(res.Recovered) != 1 {
			t.Fatalf("recover (moved %v): %+v %v", moved, res, err)
		}
		word := map[bool]string{true: "batch A, B: landed", false: "batch A, B: not landed"}[moved]
		if !strings.HasPrefix(res.Recovered[0], word) {
			t.Errorf("recovered %q, want %q", res.Recovered[0], word)
		}
		f.R.Store.Read(func(tx *store.Tx) error {
			for _, x := range []store.Allocation{a, b} {
				rec, ok, err := tx.Landing(x.AllocationID)
				if err != nil {
					t.Fatal(err)
				}
				if landed := ok && rec.State == store.LandingLanded; landed != moved || moved && rec.Batch != "b-1" {
					t.Errorf("moved %v: %s's landing %+v", moved, x.TaskKey, rec)
				}
			}
			return nil
		})
	}
}

// TestHandbackDropped: a task handed back has its file until it is marked
// ready again.
func TestHandbackDropped(t *testing.T) {
	f := newFixture(t)
	f.task("A", "shared", "a")
	f.task("B", "shared", "b")
	res := f.land(Options{Jobs: 1}, "A", "B")
	hb := res.Tasks[1].Handback
	if res.Tasks[1].Code != decision.LandConflict || hb == "" {
		t.Fatalf("B: %+v", res.Tasks[1])
	}
	if _, err := os.Stat(hb); err != nil {
		t.Fatal(err)
	}
	if hb != store.HandbackPath(f.R.Store.Root(), f.wtAlloc("B")) {
		t.Errorf("hand-back at %s, not at the allocation's path", hb)
	}
	gittest.Git(t, f.wts["B"], "-c", "core.hooksPath=/dev/null", "rebase", "-q", "-X", "theirs", "main")
	if _, err := MarkReady(f.R, "B", "alice", "", f.Dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(hb); !os.IsNotExist(err) {
		t.Errorf("the hand-back is still there after ready: %v", err)
	}
}

// wtAlloc is task's allocation id.
func (f *fixture) wtAlloc(task string) string {
	f.T.Helper()
	a, err := f.R.TaskAllocation(task)
	if err != nil || a == nil {
		f.T.Fatalf("task %s: %v", task, err)
	}
	return a.AllocationID
}
