package land

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/decision/decisiontest"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// TestMarkReady: the owner, or the task's live writer from inside its
// run, puts a task in the queue after the others, a task marked again
// keeping its place with its new tip; anyone else is refused and the
// record is left as it was.
func TestMarkReady(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.task("A", "a", "a")
	f.task("B", "b", "b")
	f.task("C", "c", "c")
	f.task("D", "d", "d")
	mark := func(task, owner string) ReadyResult {
		t.Helper()
		res, err := MarkReady(f.R, task, owner, "", f.Dir)
		if err != nil || res.Code != decision.TaskReady {
			t.Fatalf("ready %s: %+v %v", task, res, err)
		}
		return res
	}
	if res := mark("A", "alice"); res.Position != 1 || res.Landing.ReadyBy != "alice" || res.Landing.ReadyTip != f.Git("rev-parse", "wt/A") {
		t.Errorf("A: %+v", res)
	}
	if res := mark("B", "alice"); res.Position != 2 {
		t.Errorf("B: position %d", res.Position)
	}
	f.commit("A", "a", "a2")
	if res := mark("A", "alice"); res.Position != 1 || res.Landing.ReadyTip != f.Git("rev-parse", "wt/A") {
		t.Errorf("A again: %+v", res)
	}
	// C's live writer, this process, marks it from its run.
	f.Lease(f.alloc("C"), wttest.Self(t), nil)
	if res := mark("C", ""); res.Position != 3 || res.Landing.ReadyBy != "writer test" {
		t.Errorf("C: %+v", res)
	}

	// Refused: D's owner is not bob; no writer of D runs here; E is no
	// task; F's branch is gone.
	f.task("F", "f", "f")
	f.Git("update-ref", "-d", "refs/heads/wt/F")
	for _, c := range []struct{ task, owner, code, hint string }{
		{"D", "bob", decision.OwnerMismatch, "--owner alice"},
		{"D", "", decision.NotReady, "--owner alice"},
		{"E", "alice", decision.NotReady, "status"},
		{"F", "alice", decision.NotReady, "status"},
	} {
		_, err := MarkReady(f.R, c.task, c.owner, "", f.Dir)
		decisiontest.WantHint(t, err, c.code, c.hint)
	}
	if rec, ok := f.landing("D"); ok {
		t.Errorf("D has a landing record: %+v", rec)
	}
	queue, err := readyQueue(f.R)
	if err != nil || strings.Join(queue, " ") != "A B C" {
		t.Errorf("the ready queue: %v %v", queue, err)
	}
}

// TestRecoverOneTask: a dead lander's intent for one task is LANDED when
// main holds its result; an intent that cannot be read stops the lander
// (INVALID_METADATA), left for a person.
func TestRecoverOneTask(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.task("A", "a", "a")
	onto := f.Git("rev-parse", "main")
	source := f.Git("rev-parse", "wt/A")
	in := intent{AllocationID: a.AllocationID, Task: "A", Source: source, Onto: onto, Result: source, Attempt: 1, Strategy: Rebase,
		Prov: &Provenance{Task: "A", Source: source}}
	payload, _ := json.Marshal(in)
	journal := func(payload []byte) string {
		j := store.Journal{Meta: store.Meta{SchemaVersion: store.SchemaVersion}, TransactionID: ids.New(), Operation: OpLand, Phase: "INTEGRATED",
			Actor: wttest.DeadIdentity, Target: "publication:A", Payload: payload, CreatedAt: store.Now(), UpdatedAt: store.Now()}
		f.Write(func(tx *store.Tx) error { return tx.PutJournal(&j) })
		return j.TransactionID
	}
	journal(payload)
	f.Git("update-ref", "refs/heads/main", source, onto)
	res, err := Land(context.Background(), f.R, Options{Recover: true, RepoArg: f.Dir})
	if err != nil || res.Code != decision.LandRecovered || len(res.Recovered) != 1 || !strings.HasPrefix(res.Recovered[0], "task A: landed") || res.Tip != source {
		t.Fatalf("recover: %+v %v", res, err)
	}
	if rec, _ := f.landing("A"); rec.State != store.LandingLanded || rec.Result != source || rec.Attempts != 1 {
		t.Errorf("A's landing record: %+v", rec)
	}
	w, err := Why(f.Ctx, f.R.Git, f.R.Store.Root(), "main", source, f.Dir)
	if err != nil || w.Landing == nil || w.Landing.Task != "A" || w.Landing.Onto != onto || w.Landing.LandedAt == "" {
		t.Errorf("why A's commit: %+v %v", w, err)
	}

	bad := journal([]byte(`"not an intent"`))
	_, err = Land(context.Background(), f.R, Options{Recover: true, RepoArg: f.Dir})
	decisiontest.Want(t, err, decision.InvalidMetadata)
	if js := f.openJournals(); len(js) != 1 || js[0].TransactionID != bad {
		t.Errorf("open journals %+v, want the unreadable one", js)
	}
}

// TestLandLosesItsLease: a lander whose publication lease is taken from
// it while it integrates stops before it moves anything
// (PUBLICATION_LEASE_REQUIRED).
func TestLandLosesItsLease(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, batch := range []int{1, 0} {
		task := map[int]string{1: "one", 0: "batched"}[batch]
		f.task(task, task, task)
		before := f.Git("rev-parse", "main")
		_, err := Land(f.Ctx, f.R, withTasks(f, Options{Batch: batch, Notify: when(task, func(int) {
			f.Write(func(tx *store.Tx) error { return tx.RemovePublicationLease() })
		})}, task))
		decisiontest.Want(t, err, decision.PublicationLeaseRequired)
		if got := f.Git("rev-parse", "main"); got != before {
			t.Errorf("batch %d: main moved to %s", batch, got)
		}
		if rec, _ := f.landing(task); rec.State == store.LandingLanded {
			t.Errorf("batch %d: recorded landed", batch)
		}
	}
}
