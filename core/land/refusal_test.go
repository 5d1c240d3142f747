package land

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/decision/decisiontest"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// TestLandRefusesATaskNotToLand: a task that is not to land is refused
// with its reason before anything is integrated, one at a time or in a
// batch; the others land, and the refused task's branch and record are
// as they were.
func TestLandRefusesATaskNotToLand(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i, c := range []struct {
		name string
		// setup makes task x not to land; opts are the lander's.
		setup func(f *fixture, x string)
		opts  Options
		code  string
	}{
		{"no such task", func(f *fixture, x string) {}, Options{}, decision.NotReady},
		{"a live writer", func(f *fixture, x string) {
			f.task(x, x, x)
			f.Lease(f.alloc(x), wttest.Self(f.T), nil)
		}, Options{}, decision.WriterLeaseHeld},
		{"a live writer waited for in vain", func(f *fixture, x string) {
			f.task(x, x, x)
			f.Lease(f.alloc(x), wttest.Self(f.T), nil)
		}, Options{Wait: true, Timeout: time.Millisecond, Poll: time.Millisecond}, decision.LandWaitTimeout},
		{"its tip moved since it was marked ready", func(f *fixture, x string) {
			f.task(x, x, x)
			if _, err := MarkReady(f.R, x, "alice", "", f.Dir); err != nil {
				f.T.Fatal(err)
			}
			f.commit(x, x, "2")
		}, Options{}, decision.LandTipMoved},
		{"its tip not one the ledger approved", func(f *fixture, x string) {
			f.task(x, x, x)
		}, Options{}, decision.LandUngated},
		{"its branch gone", func(f *fixture, x string) {
			f.task(x, x, x)
			f.Git("update-ref", "-d", "refs/heads/wt/"+x)
		}, Options{}, decision.GitFailed},
	} {
		for _, batch := range []int{1, 0} {
			name := c.name + map[int]string{1: ", one at a time", 0: ", batched"}[batch]
			x, y := fmt.Sprintf("x%d-%d", i, batch), fmt.Sprintf("y%d-%d", i, batch)
			c.setup(f, x)
			f.task(y, y, y)
			xTip, _, _ := f.R.Git.ResolveCommit(f.Ctx, "refs/heads/wt/"+x)
			before := f.Git("rev-parse", "main")
			opts := c.opts
			opts.Tasks, opts.RepoArg, opts.Batch, opts.Jobs = []string{x, y}, f.Dir, batch, 1
			// y lands: it is let go as the lander is told, or (where x is
			// ungated) its tip is the one its ledger has.
			opts.AcceptUngated = c.code != decision.LandUngated
			f.approve(y)
			res, err := Land(f.Ctx, f.R, opts)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got := codes(res); !slices.Equal(got, []string{x + " " + c.code, y + " LANDED"}) {
				t.Errorf("%s: codes %v (%s)", name, got, res.Tasks[0].Message)
				continue
			}
			if res.Code != c.code || res.Failed().Task != x {
				t.Errorf("%s: result %s, first failed %+v", name, res.Code, res.Failed())
			}
			if f.Git("rev-parse", "main^") != before {
				t.Errorf("%s: main moved past y's one commit: %s", name, f.Git("log", "--format=%s", before+"..main"))
			}
			if xTip != "" {
				if now, _, _ := f.R.Git.ResolveCommit(f.Ctx, "refs/heads/wt/"+x); now != xTip {
					t.Errorf("%s: x's branch moved: %s -> %s", name, xTip, now)
				}
				if rec, _ := f.landing(x); rec.State == store.LandingLanded || rec.Attempts != 0 || rec.Handback != "" {
					t.Errorf("%s: x's landing record: %+v", name, rec)
				}
			}
		}
	}
}

// alloc is task's allocation.
func (f *fixture) alloc(task string) store.Allocation {
	f.T.Helper()
	a, err := f.R.TaskAllocation(task)
	if err != nil || a == nil {
		f.T.Fatalf("task %s: %v", task, err)
	}
	return *a
}

// approve records task's tip in its ledger, as the gate does when a
// writer commits under its lease.
func (f *fixture) approve(task string) {
	f.T.Helper()
	a := f.alloc(task)
	ref := "refs/heads/" + *a.Branch
	led, err := store.ReadLedgerTail(f.R.Store.Root(), a.AllocationID, ref)
	if err != nil {
		f.T.Fatal(err)
	}
	if err := store.AppendLedger(f.R.Store.Root(), a.AllocationID, store.LedgerLine{Via: store.ViaGate, Ref: ref, Old: led.Tip(),
		New: f.Git("rev-parse", ref), LeaseID: "l-test", ClientID: "test"}); err != nil {
		f.T.Fatal(err)
	}
}

// TestLandRefusesWhatIsNotAsked: a strategy land does not know, and no
// task named, are USAGE before the lease is taken.
func TestLandRefusesWhatIsNotAsked(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := Land(f.Ctx, f.R, Options{Tasks: []string{"A"}, Strategy: "ours", RepoArg: f.Dir})
	decisiontest.WantHint(t, err, decision.Usage, "--strategy rebase")
	_, err = Land(f.Ctx, f.R, Options{RepoArg: f.Dir})
	decisiontest.WantHint(t, err, decision.Usage, "land --ready")
	f.R.Store.Read(func(tx *store.Tx) error {
		if _, ok, err := tx.PublicationLease(); ok || err != nil {
			t.Errorf("a publication lease is left: %v", err)
		}
		return nil
	})
	// An empty ready queue: nothing to land.
	res, err := Land(f.Ctx, f.R, Options{Ready: true, RepoArg: f.Dir})
	if err != nil || res.Code != decision.NothingToLand || res.Tip != f.Base {
		t.Errorf("land --ready of nothing: %+v %v", res, err)
	}
}

// TestLandRefusesATaskNamedAsItsIntegrationWorktree: a feature task that
// took the integration worktree's key keeps land from integrating.
func TestLandRefusesATaskNamedAsItsIntegrationWorktree(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.Allocate(IntegrationTask, "", "w-land")
	f.task("A", "a", "a")
	_, err := Land(f.Ctx, f.R, Options{Tasks: []string{"A"}, AcceptUngated: true, RepoArg: f.Dir})
	decisiontest.WantHint(t, err, decision.TaskKeyInUse, "finish --task wt-land")
	if got := f.Git("rev-parse", "main"); got != f.Base {
		t.Errorf("main moved to %s", got)
	}
	if _, err := os.Stat(IntegrationPath(f.Dir)); !os.IsNotExist(err) {
		t.Errorf("an integration worktree was made: %v", err)
	}
}

// TestLandPublicationLease: a live lander's lease refuses another
// (PUBLICATION_LEASE_HELD), or is waited for until the timeout; a dead
// lander's is taken over, with the proof of its death.
func TestLandPublicationLease(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.task("A", "a", "a")
	put := func(h store.PublicationLease) {
		f.Write(func(tx *store.Tx) error { return tx.PutPublicationLease(&h) })
	}
	var repoID string
	f.R.Store.Read(func(tx *store.Tx) error {
		r, err := tx.Repository()
		repoID = r.RepositoryID
		return err
	})
	live := store.PublicationLease{Meta: store.Meta{SchemaVersion: store.SchemaVersion}, LeaseID: "01J00000000000000000000001", RepositoryID: repoID,
		Branch: "main", Task: "Z", AcquiredAt: store.Now(), Holder: wttest.Self(t)}
	put(live)
	opts := Options{Tasks: []string{"A"}, AcceptUngated: true, RepoArg: f.Dir}
	nowait := opts
	nowait.NoWait = true
	_, err := Land(f.Ctx, f.R, nowait)
	decisiontest.Want(t, err, decision.PublicationLeaseHeld)
	if !strings.Contains(err.Error(), "landing task Z") {
		t.Errorf("the refusal does not name the task landed: %v", err)
	}
	wait := opts
	wait.Timeout = time.Millisecond
	_, err = Land(f.Ctx, f.R, wait)
	decisiontest.Want(t, err, decision.LandWaitTimeout)
	if got := f.Git("rev-parse", "main"); got != f.Base {
		t.Fatalf("main moved to %s under another's lease", got)
	}
	f.R.Store.Read(func(tx *store.Tx) error {
		if cur, ok, _ := tx.PublicationLease(); !ok || cur.LeaseID != live.LeaseID {
			t.Errorf("the live lander's lease is now %+v", cur)
		}
		return nil
	})

	dead := live
	dead.Holder = wttest.DeadHolder
	put(dead)
	var said []string
	res, err := Land(f.Ctx, f.R, Options{Tasks: []string{"A"}, AcceptUngated: true, RepoArg: f.Dir, Notify: func(s string) { said = append(said, s) }})
	if err != nil || res.TookOver == nil || res.TookOver.LeaseID != dead.LeaseID || res.Code != decision.Landed {
		t.Fatalf("land over a dead lander: %+v %v", res, err)
	}
	if len(said) == 0 || !strings.Contains(said[0], "took the publication lease over from dead lander pid 4242 (its boot") {
		t.Errorf("said %q", said)
	}
	if ev := f.events(); !strings.Contains(ev, `"publication_lease_taken_over"`) || !strings.Contains(ev, "has ended") {
		t.Errorf("no takeover event with its proof")
	}
	f.R.Store.Read(func(tx *store.Tx) error {
		if cur, ok, _ := tx.PublicationLease(); ok {
			t.Errorf("the lease is left after the landing: %+v", cur)
		}
		return nil
	})
}

// TestLandOntoAnUngatedTip: under publication-lease on, land does not
// build on a publication tip no lander put there, unless told
// --accept-ungated.
func TestLandOntoAnUngatedTip(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	on := "on"
	f.SetPolicy(policy.Change{PublicationLease: &on})
	f.task("A", "a", "a")
	f.approve("A")
	f.task("B", "b", "b")
	f.approve("B")
	// A lands: main's moves are the lander's, its ledger says so.
	res, err := Land(f.Ctx, f.R, Options{Tasks: []string{"A"}, RepoArg: f.Dir})
	if err != nil || res.Code != decision.Landed {
		t.Fatalf("A: %+v %v", res, err)
	}
	moved := f.onMain("m", "m") // with hooks off: no ledger line
	for _, batch := range []int{1, 0} {
		_, err := Land(f.Ctx, f.R, Options{Tasks: []string{"B"}, Batch: batch, RepoArg: f.Dir})
		decisiontest.WantHint(t, err, decision.LandUngated, "audit")
		if got := f.Git("rev-parse", "main"); got != moved {
			t.Fatalf("batch %d: main moved to %s", batch, got)
		}
	}
	res, err = Land(f.Ctx, f.R, Options{Tasks: []string{"B"}, RepoArg: f.Dir, AcceptUngated: true})
	if err != nil || res.Code != decision.Landed || f.Git("rev-parse", "main^") != moved {
		t.Fatalf("B, accepted: %+v %v", res, err)
	}
}
