package alloc

import (
	"context"
	"reflect"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// TestRetainResume: retain moves ACTIVE to RETAINED and resume back, each
// with its event; the other way round is INVALID_LIFECYCLE; another owner
// is OWNER_MISMATCH, a bad one INVALID_OWNER, a stale expected version
// RECORD_VERSION_CONFLICT, and a path wt does not govern
// UNREGISTERED_WORKTREE.
func TestRetainResume(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.allocate("T-1", "alice", "w1")
	path := a.WorktreePath

	_, err := f.r.Resume(f.ctx, path, "alice", nil)
	wttest.WantCode(t, err, decision.InvalidLifecycle)
	if fact(err, "lifecycle") != store.Active {
		t.Errorf("lifecycle fact: %v", fact(err, "lifecycle"))
	}
	_, err = f.r.Retain(f.ctx, path, "bob", nil)
	wttest.WantCode(t, err, decision.OwnerMismatch)
	if d, _ := decision.As(err); d.Hint != "pass --owner alice" {
		t.Errorf("hint: %q", d.Hint)
	}
	_, err = f.r.Retain(f.ctx, path, "", nil)
	wttest.WantCode(t, err, decision.InvalidOwner)
	_, err = f.r.Retain(f.ctx, path, "alice", ptr(a.RecordVersion+1))
	wttest.WantCode(t, err, decision.RecordVersionConflict)
	_, err = f.r.Retain(f.ctx, f.dir, "alice", nil)
	wttest.WantCode(t, err, decision.UnregisteredWorktree)

	res, err := f.r.Retain(f.ctx, path, "alice", ptr(a.RecordVersion))
	if err != nil || res.Code != decision.Retained || res.Allocation.Lifecycle != store.Retained ||
		res.Allocation.AllocationID != a.AllocationID {
		t.Fatalf("retain: %+v %v", res, err)
	}
	_, err = f.r.Retain(f.ctx, path, "alice", nil)
	wttest.WantCode(t, err, decision.InvalidLifecycle)
	res, err = f.r.Resume(f.ctx, path, "alice", nil)
	if err != nil || res.Code != decision.Resumed || res.Allocation.Lifecycle != store.Active {
		t.Fatalf("resume: %+v %v", res, err)
	}
	var changes [][2]any
	for _, e := range f.events() {
		if e.Event == "allocation_retained" || e.Event == "allocation_resumed" {
			changes = append(changes, [2]any{e.Detail["from"], e.Detail["to"]})
		}
	}
	if want := [][2]any{{store.Active, store.Retained}, {store.Retained, store.Active}}; !reflect.DeepEqual(changes, want) {
		t.Errorf("events: %v", changes)
	}
}

// TestResumeBudget: resume counts against max-active like an allocate,
// leaving out the allocation being resumed.
func TestResumeBudget(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{MaxActive: ptr("1")})
	a := f.allocate("T-1", "alice", "w1")
	if _, err := f.r.Retain(f.ctx, a.WorktreePath, "alice", nil); err != nil {
		t.Fatal(err)
	}
	b := f.allocate("T-2", "alice", "w2")
	_, err := f.r.Resume(f.ctx, a.WorktreePath, "alice", nil)
	wttest.WantCode(t, err, decision.BudgetExhausted)
	if _, err := f.r.Retain(f.ctx, b.WorktreePath, "alice", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Resume(f.ctx, a.WorktreePath, "alice", nil); err != nil {
		t.Errorf("resume within the budget: %v", err)
	}
}

// TestRetainLiveWriter: a lease whose holder runs, or a runtime occupancy
// whose process runs, keeps retain out (WRITER_LEASE_HELD,
// EXTERNAL_BINDING); a dead holder's lease and a dead occupant do not.
func TestRetainLiveWriter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.allocate("T-1", "alice", "w1")
	me := wttest.Self(t)
	dead := wttest.DeadHolder
	lease := func(h proc.Holder) *store.Lease {
		return &store.Lease{LeaseID: ids.New(), AllocationID: a.AllocationID, WorktreePath: a.WorktreePath, Owner: "alice",
			Holder: h, Generation: 1, AcquiredAt: store.Now(), RenewedAt: store.Now()}
	}

	f.write(func(tx *store.Tx) error { return tx.PutLease(lease(me)) })
	var l store.Lease
	var live bool
	f.write(func(tx *store.Tx) (err error) { l, live, err = LiveWriter(tx, a); return err })
	if !live || l.Holder != me {
		t.Errorf("LiveWriter with this process holding: %+v %v", l, live)
	}
	_, err := f.r.Retain(f.ctx, a.WorktreePath, "alice", nil)
	wttest.WantCode(t, err, decision.WriterLeaseHeld)

	f.write(func(tx *store.Tx) error { return tx.PutLease(lease(dead)) })
	f.write(func(tx *store.Tx) (err error) { _, live, err = LiveWriter(tx, a); return err })
	if live {
		t.Error("LiveWriter with a dead holder: live")
	}

	bind := func(h proc.Holder) {
		v, err := proc.RuntimeBinding{Holder: h, Kind: "agent"}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		f.write(func(tx *store.Tx) error {
			cur, err := tx.Allocation(a.AllocationID)
			if err != nil {
				return err
			}
			cur.ExternalBindings = []string{v, "opaque:ci-job-7"}
			return tx.PutAllocationRuntime(&cur)
		})
	}
	bind(me)
	_, err = f.r.Retain(f.ctx, a.WorktreePath, "alice", nil)
	wttest.WantCode(t, err, decision.ExternalBinding)
	bind(dead)
	res, err := f.r.Retain(f.ctx, a.WorktreePath, "alice", nil)
	if err != nil || res.Code != decision.Retained {
		t.Errorf("retain with a dead holder's lease and a dead occupant: %+v %v", res, err)
	}

	f.write(func(tx *store.Tx) error { return tx.RemoveLease(a.AllocationID) })
	f.write(func(tx *store.Tx) (err error) { _, live, err = LiveWriter(tx, a); return err })
	if live {
		t.Error("LiveWriter with no lease: live")
	}
}

// TestAwaitTask: with no allocate of the task in flight it answers at
// once (the allocation, or nil); with one in flight it waits, until the
// context ends or the allocate ends (then the allocation it made).
func TestAwaitTask(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.allocate("T-1", "alice", "w1")
	got, err := f.r.AwaitTask(f.ctx, "T-1")
	if err != nil || got == nil || got.AllocationID != a.AllocationID {
		t.Errorf("an allocated task: %+v %v", got, err)
	}
	if got, err := f.r.AwaitTask(f.ctx, "T-2"); err != nil || got != nil {
		t.Errorf("a task nobody allocates: %+v %v", got, err)
	}
	b := "wt/T-3"
	f.plan(f.planned("T-3", "w3", &b), wttest.Self(t).Identity())
	ctx, cancel := context.WithCancel(f.ctx)
	cancel()
	if got, err := f.r.AwaitTask(ctx, "T-3"); err != context.Canceled || got != nil {
		t.Errorf("a task in flight, the wait cancelled: %+v %v", got, err)
	}
	if got, err := f.r.AwaitTask(ctx, "T-2"); err != nil || got != nil {
		t.Errorf("another task than the one in flight: %+v %v", got, err)
	}
	// The allocate ends (its record written, its journal finished): the
	// wait answers with it.
	p := f.planned("T-4", "w4", nil)
	j := f.plan(p, wttest.Self(t).Identity())
	type answer struct {
		a   *store.Allocation
		err error
	}
	done := make(chan answer, 1)
	go func() {
		a, err := f.r.AwaitTask(f.ctx, "T-4")
		done <- answer{a, err}
	}()
	f.write(func(tx *store.Tx) error {
		if err := tx.PutAllocation(&p); err != nil {
			return err
		}
		return tx.FinishJournal(j, "completed", nil, store.Now())
	})
	if got := <-done; got.err != nil || got.a == nil || got.a.AllocationID != p.AllocationID {
		t.Errorf("the wait for an allocate that ended: %+v %v", got.a, got.err)
	}
}
