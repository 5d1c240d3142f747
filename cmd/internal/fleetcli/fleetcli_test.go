package fleetcli

import (
	"context"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/fleet/etcdfleet"
	"github.com/wt-tool/wt/core/fleet/etcdtest"
	"github.com/wt-tool/wt/core/store"
)

// TestGrantedAhead: a lease granted while wt-exec works is used by the hold
// when it is for the hold's TTL and young; an old one (a hold that waited
// behind a live writer) or one for another TTL is revoked, and so is one
// never used.
func TestGrantedAhead(t *testing.T) {
	co, err := etcdfleet.New([]string{etcdtest.Start(t)}, store.EtcdAuth{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	ctx := context.Background()
	h := fleet.Holder{Host: "h", BootID: "b", PID: 1, StartTicks: 1, ClientID: "c", LeaseID: "l", TaskKey: "T-1"}
	const ttl = 10 * time.Second

	g := grantAhead(ctx, co, ttl)
	id, ok := g.take(co, ttl)
	if !ok {
		t.Fatalf("a fresh lease for the same TTL was not taken: %v", g.err)
	}
	s, err := co.AcquireGranted(ctx, fleet.Key("r", "T-1"), h, id)
	if err != nil {
		t.Fatalf("acquire with the lease granted ahead: %v", err)
	}
	if err := s.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Revoked leases cannot carry a key: AcquireGranted fails with them.
	revoked := func() {
		t.Helper()
		_, err := co.AcquireGranted(ctx, fleet.Key("r", "T-2"), h, g.id)
		if decision.CodeOf(err) != decision.FleetUnreachable {
			t.Fatalf("a lease that should be revoked still takes a key: %v", err)
		}
	}
	g = grantAhead(ctx, co, ttl)
	<-g.done
	g.at = time.Now().Add(-ttl) // granted a TTL ago: the hold waited
	if _, ok := g.take(co, ttl); ok {
		t.Fatal("an old lease was taken")
	}
	revoked()

	g = grantAhead(ctx, co, ttl)
	if _, ok := g.take(co, 2*ttl); ok {
		t.Fatal("a lease for another TTL was taken")
	}
	revoked()

	g = grantAhead(ctx, co, ttl)
	g.drop(co)
	revoked()

	var none *granted
	if _, ok := none.take(co, ttl); ok {
		t.Fatal("nothing granted ahead, yet taken")
	}
	none.drop(co)
}
