package etcdfleet_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/fleet/etcdfleet"
	"github.com/wt-tool/wt/core/fleet/etcdtest"
	"github.com/wt-tool/wt/core/store"
)

// coordinator is a Coordinator on a fresh real etcd, closed at the end.
func coordinator(t *testing.T) *etcdfleet.Coordinator {
	t.Helper()
	a, err := etcdfleet.New([]string{etcdtest.Start(t)}, store.EtcdAuth{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func holder(client string) fleet.Holder {
	return fleet.Holder{Host: "host-" + client, MachineID: "m", BootID: "b", PID: 42, StartTicks: 7, ClientID: client, TaskKey: "T-1", Since: "now",
		FenceHash: fleet.FenceHash("secret-of-" + client)}
}

// TestAcquireCheckRelease: one holder per key; the loser is told who holds
// it; the create revision fences; release frees the key for the next one,
// whose revision is new.
func TestAcquireCheckRelease(t *testing.T) {
	ctx := context.Background()
	a := coordinator(t)
	key := fleet.Key("r", "T-1")
	s1, err := a.Acquire(ctx, key, holder("agent-a"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Acquire(ctx, key, holder("agent-b"), 5*time.Second); decision.CodeOf(err) != decision.FleetLeaseHeld {
		t.Fatalf("second acquire: %v, want FLEET_LEASE_HELD", err)
	} else if d, _ := decision.As(err); d.Facts["fleet_holder"].(fleet.Holder).ClientID != "agent-a" {
		t.Fatalf("the refusal names %v", d.Facts["fleet_holder"])
	}
	if err := a.Check(ctx, key, s1.Revision(), fleet.FenceHash("secret-of-agent-a")); err != nil {
		t.Fatalf("check of the holder's revision and secret: %v", err)
	}
	if err := a.Check(ctx, key, s1.Revision(), ""); err != nil {
		t.Fatalf("check of the holder's revision alone (the client's pre-push): %v", err)
	}
	if err := a.Check(ctx, key, s1.Revision(), fleet.FenceHash("guessed")); decision.CodeOf(err) != decision.FleetFenced {
		t.Fatalf("check of the holder's revision with another secret: %v", err)
	}
	if err := a.Check(ctx, key, s1.Revision()+1, ""); decision.CodeOf(err) != decision.FleetFenced {
		t.Fatalf("check of another revision: %v", err)
	}
	es, err := a.List(ctx, fleet.Prefix("r"))
	if err != nil || len(es) != 1 || es[0].TaskKey != "T-1" || es[0].Holder.ClientID != "agent-a" || es[0].Revision != s1.Revision() || es[0].TTL <= 0 {
		t.Fatalf("list: %+v %v", es, err)
	}
	if err := s1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Check(ctx, key, s1.Revision(), ""); decision.CodeOf(err) != decision.FleetFenced {
		t.Fatalf("check after release: %v", err)
	}
	s2, err := a.Acquire(ctx, key, holder("agent-b"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Revision() <= s1.Revision() {
		t.Fatalf("revision %d after %d: the fencing token must grow", s2.Revision(), s1.Revision())
	}
	select {
	case <-s1.Lost():
		t.Fatal("a released session reads as lost")
	default:
	}
	e, err := a.Revoke(ctx, key)
	if err != nil || e.Holder.ClientID != "agent-b" {
		t.Fatalf("revoke: %+v %v", e, err)
	}
	select {
	case <-s2.Lost():
	case <-time.After(30 * time.Second):
		t.Fatal("a revoked session was not reported lost")
	}
	if _, err := a.Revoke(ctx, key); decision.CodeOf(err) != decision.FleetNoLease {
		t.Fatalf("revoke of nothing: %v", err)
	}
}

// TestUnreachable: nothing listens at the endpoint: every call fails closed
// with FLEET_UNREACHABLE within the timeout.
func TestUnreachable(t *testing.T) {
	port, err := etcdtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	c, err := etcdfleet.New([]string{"http://127.0.0.1:" + strconv.Itoa(port)}, store.EtcdAuth{}, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Acquire(ctx, "wt/r/tasks/T-1", holder("a"), 2*time.Second); decision.CodeOf(err) != decision.FleetUnreachable {
		t.Fatalf("acquire: %v", err)
	}
	if err := c.Check(ctx, "wt/r/tasks/T-1", 5, ""); decision.CodeOf(err) != decision.FleetUnreachable {
		t.Fatalf("check: %v", err)
	}
}

// TestReleaseOfARevokedLease: a holder whose fleet lease was revoked by
// someone else (an operator's abandon) releases without an error: etcd's
// typed "lease not found" means there is nothing left to revoke, not that
// etcd is unreachable.
func TestReleaseOfARevokedLease(t *testing.T) {
	ctx := context.Background()
	a := coordinator(t)
	key := fleet.Key("r", "T-9")
	s, err := a.Acquire(ctx, key, holder("agent-a"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Revoke(ctx, key); err != nil {
		t.Fatalf("operator's revoke: %v", err)
	}
	if err := s.Release(ctx); err != nil {
		t.Fatalf("release of a lease revoked meanwhile: %v", err)
	}
}
