package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/fleet/etcdfleet"
	"github.com/wt-tool/wt/core/fleet/etcdtest"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// TestAbandonRefusesAReasonThatSaysNothing: the reason is checked before
// etcd is asked (no coordinator is needed to refuse it).
func TestAbandonRefusesAReasonThatSaysNothing(t *testing.T) {
	t.Parallel()
	for _, reason := range []string{"", "   ", "gone\nwt-admin: ok", "bell\x07"} {
		_, err := fleet.Abandon(context.Background(), nil, fleet.Key("r", "T-1"), reason, true)
		wttest.WantCode(t, err, decision.Usage)
	}
}

// TestAbandonDecidesByWhereTheHolderRuns: with a real etcd, a task key
// held by a live process of this machine is never abandoned; one held
// elsewhere needs the operator's word, and is then revoked; Find tells a
// task's key from its prefix's other keys.
func TestAbandonDecidesByWhereTheHolderRuns(t *testing.T) {
	t.Parallel()
	co, err := etcdfleet.New([]string{etcdtest.Start(t)}, store.EtcdAuth{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Closed after the holds' releases (cleanups run last first).
	t.Cleanup(func() { co.Close() })
	ctx := context.Background()
	const space = "0123456789abcdef"
	hold := func(task string, h proc.Holder) fleet.Session {
		t.Helper()
		s, err := co.Acquire(ctx, fleet.Key(space, task), fleet.HolderOf(h, "lease-"+task, task), time.Minute)
		if err != nil {
			t.Fatalf("hold %s: %v", task, err)
		}
		t.Cleanup(func() {
			c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s.Release(c) // Best effort: a revoked key's lease is gone already.
		})
		return s
	}
	self := wttest.Self(t)
	// This boot, this pid, another start: a process that is gone.
	gone := self
	gone.StartTicks++

	hold("T-10", wttest.DeadHolder)
	_, err = fleet.Find(ctx, co, fleet.Key(space, "T-1"))
	wttest.WantCode(t, err, decision.FleetNoLease)

	live := hold("T-1", self)
	e, err := fleet.Find(ctx, co, fleet.Key(space, "T-1"))
	if err != nil || e.TaskKey != "T-1" || e.Holder.PID != self.PID || e.Revision != live.Revision() {
		t.Fatalf("Find T-1: %+v, %v", e, err)
	}
	for _, operator := range []bool{false, true} {
		_, err := fleet.Abandon(ctx, co, fleet.Key(space, "T-1"), "host decommissioned", operator)
		wttest.WantCode(t, err, decision.FleetLeaseHeld)
	}
	if _, err := fleet.Find(ctx, co, fleet.Key(space, "T-1")); err != nil {
		t.Errorf("a refused abandon took the key: %v", err)
	}

	for _, c := range []struct {
		task   string
		holder proc.Holder
	}{{"T-2", wttest.DeadHolder}, {"T-3", gone}} {
		s := hold(c.task, c.holder)
		key := fleet.Key(space, c.task)
		_, err := fleet.Abandon(ctx, co, key, "host decommissioned", false)
		wttest.WantCode(t, err, decision.OperatorRequired)
		if dd, _ := decision.As(err); dd == nil || !strings.Contains(dd.Hint, "wt-admin fleet abandon "+c.task+" --reason TEXT --operator") {
			t.Errorf("%s: hint %v", c.task, err)
		}
		if _, err := fleet.Find(ctx, co, key); err != nil {
			t.Errorf("%s: refused without the operator, yet the key is gone: %v", c.task, err)
		}
		e, err := fleet.Abandon(ctx, co, key, "host decommissioned", true)
		if err != nil || e.TaskKey != c.task || e.Revision != s.Revision() {
			t.Errorf("%s: abandon with the operator: %+v, %v", c.task, e, err)
		}
		_, err = fleet.Find(ctx, co, key)
		wttest.WantCode(t, err, decision.FleetNoLease)
	}
	// Nothing to abandon: FLEET_NO_LEASE.
	_, err = fleet.Abandon(ctx, co, fleet.Key(space, "T-9"), "host decommissioned", true)
	wttest.WantCode(t, err, decision.FleetNoLease)
}
