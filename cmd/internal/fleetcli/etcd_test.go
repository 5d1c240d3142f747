package fleetcli

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/fleet/etcdtest"
)

// request is a request of op to the etcd at endpoint.
func request(endpoint, op string) fleet.Request {
	return fleet.Request{Op: op, Endpoints: []string{endpoint}}
}

// list is every entry under prefix, as the helper lists them.
func list(t *testing.T, endpoint, prefix string) []fleet.Entry {
	t.Helper()
	req := request(endpoint, "list")
	req.Prefix = prefix
	code, rs, stderr := helper(t, line(t, req))
	r := one(t, rs)
	if code != 0 || !r.OK {
		t.Fatalf("list: exit %d, %+v, %s", code, r, stderr)
	}
	return r.Entries
}

// TestHoldUntilReleased: a hold answers with the key's create revision
// (the fencing token) and its etcd lease, keeps it while wt-exec runs,
// ignores lines that are not "release", and on "release" revokes it: the
// key is gone and the helper exits 0.
func TestHoldUntilReleased(t *testing.T) {
	t.Parallel()
	ep := etcdtest.Start(t)
	prefix := fleet.Prefix("r1")
	req := request(ep, "hold")
	req.Key, req.TTL, req.Holder = fleet.Key("r1", "T-1"), 10*time.Second, holderOf("T-1")
	h := startHold(t, line(t, req))
	got := h.next(t)
	if !got.OK || got.Revision <= 0 || got.LeaseID == 0 {
		t.Fatalf("hold: %+v; stderr:\n%s", got, h.stderr.String())
	}
	es := list(t, ep, prefix)
	if len(es) != 1 || es[0].Key != req.Key || es[0].TaskKey != "T-1" || es[0].Revision != got.Revision || es[0].LeaseID != got.LeaseID || es[0].Holder != *req.Holder || es[0].TTL <= 0 {
		t.Fatalf("while held, etcd has %+v", es)
	}

	// The key's revision is what a push's fence checks.
	check := request(ep, "check")
	check.Key, check.Revision = req.Key, got.Revision
	if code, rs, _ := helper(t, line(t, check)); code != 0 || !one(t, rs).OK {
		t.Errorf("check of the held revision: exit %d, %+v", code, rs)
	}

	h.send(t, "\n")
	h.send(t, "renew\n")
	h.send(t, "release\n")
	rel := h.next(t)
	if !rel.OK || !rel.Released || rel.Revision != got.Revision {
		t.Errorf("release: %+v", rel)
	}
	if code := h.end(t, false); code != 0 {
		t.Errorf("exit %d after release", code)
	}
	if es := list(t, ep, prefix); len(es) != 0 {
		t.Errorf("after release, etcd has %+v", es)
	}
	if code, rs, _ := helper(t, line(t, check)); code != 1 || one(t, rs).Code != decision.FleetFenced {
		t.Errorf("check after release: exit %d, %+v", code, rs)
	}
}

// TestHoldLeftWhenWtExecIsGone: stdin closing without "release" (wt-exec
// killed) ends the helper with 3 and leaves the key to expire with its
// TTL: its command may still run. A second hold of the task meanwhile is
// refused (exit 1) naming the holder and its revision.
func TestHoldLeftWhenWtExecIsGone(t *testing.T) {
	t.Parallel()
	ep := etcdtest.Start(t)
	req := request(ep, "hold")
	req.Key, req.TTL, req.Holder = fleet.Key("r2", "T-1"), time.Minute, holderOf("T-1")
	h := startHold(t, line(t, req))
	got := h.next(t)
	if !got.OK {
		t.Fatalf("hold: %+v", got)
	}
	if code := h.end(t, true); code != 3 {
		t.Errorf("exit %d, want 3", code)
	}
	es := list(t, ep, fleet.Prefix("r2"))
	if len(es) != 1 || es[0].Revision != got.Revision {
		t.Fatalf("after wt-exec went, etcd has %+v, want the key still held", es)
	}

	second := req
	second.Holder = holderOf("T-1")
	second.Holder.Host = "elsewhere"
	code, rs, _ := helper(t, line(t, second))
	r := one(t, rs)
	if code != 1 || r.Code != decision.FleetLeaseHeld || r.Holder == nil || *r.Holder != *req.Holder || r.Revision != got.Revision ||
		!strings.Contains(r.Message, "client c on host h") {
		t.Errorf("a second hold: exit %d, %+v", code, r)
	}
	if es := list(t, ep, fleet.Prefix("r2")); len(es) != 1 || es[0].Revision != got.Revision || es[0].Holder.Host != "h" {
		t.Errorf("the refused hold changed the key: %+v", es)
	}
}

// TestHoldReportsALostLease: a lease that cannot be kept alive (here an
// operator revoked the key) is reported at once, on stderr and as
// {"lost":true}; the helper still waits for wt-exec, and a release then
// has nothing left to revoke.
func TestHoldReportsALostLease(t *testing.T) {
	t.Parallel()
	ep := etcdtest.Start(t)
	req := request(ep, "hold")
	req.Key, req.TTL, req.Holder = fleet.Key("r3", "T-1"), 3*time.Second, holderOf("T-1")
	h := startHold(t, line(t, req))
	got := h.next(t)
	if !got.OK {
		t.Fatalf("hold: %+v", got)
	}

	rev := request(ep, "revoke")
	rev.Key = req.Key
	code, rs, _ := helper(t, line(t, rev))
	r := one(t, rs)
	if code != 0 || !r.OK || r.Entry == nil || r.Entry.Revision != got.Revision || r.Entry.Holder != *req.Holder {
		t.Fatalf("revoke: exit %d, %+v", code, r)
	}

	lost := h.next(t)
	if lost.OK || !lost.Lost || lost.Code != decision.FleetLeaseLost || lost.Revision != got.Revision {
		t.Errorf("after the revoke: %+v", lost)
	}
	if s := h.stderr.String(); !strings.Contains(s, "wt-fleet: "+decision.FleetLeaseLost+": ") || !strings.Contains(s, "T-1") {
		t.Errorf("stderr: %q", s)
	}
	h.send(t, "release\n")
	if rel := h.next(t); !rel.OK || !rel.Released {
		t.Errorf("release of a lost lease: %+v", rel)
	}
	if code := h.end(t, false); code != 0 {
		t.Errorf("exit %d", code)
	}

	// Nothing is left to revoke.
	code, rs, _ = helper(t, line(t, rev))
	if r := one(t, rs); code != 1 || r.Code != decision.FleetNoLease {
		t.Errorf("a second revoke: exit %d, %+v", code, r)
	}
}

// TestCheckFencesAnotherRevisionOrSecret: check passes only for the
// key's own create revision and, when given, the hash of the holder's
// fencing secret.
func TestCheckFencesAnotherRevisionOrSecret(t *testing.T) {
	t.Parallel()
	ep := etcdtest.Start(t)
	secret, err := fleet.NewFenceSecret()
	if err != nil {
		t.Fatal(err)
	}
	req := request(ep, "hold")
	req.Key, req.TTL, req.Holder = fleet.Key("r4", "T-1"), time.Minute, holderOf("T-1")
	req.Holder.FenceHash = fleet.FenceHash(secret)
	h := startHold(t, line(t, req))
	got := h.next(t)
	if !got.OK {
		t.Fatalf("hold: %+v", got)
	}
	other, _ := fleet.NewFenceSecret()
	for _, c := range []struct {
		name     string
		key      string
		revision int64
		hash     string
		code     string
	}{
		{"its revision and secret", req.Key, got.Revision, fleet.FenceHash(secret), ""},
		{"its revision", req.Key, got.Revision, "", ""},
		{"another revision", req.Key, got.Revision - 1, "", decision.FleetFenced},
		{"another secret", req.Key, got.Revision, fleet.FenceHash(other), decision.FleetFenced},
		{"no such key", fleet.Key("r4", "T-2"), got.Revision, "", decision.FleetFenced},
	} {
		check := request(ep, "check")
		check.Key, check.Revision, check.FenceHash = c.key, c.revision, c.hash
		code, rs, _ := helper(t, line(t, check))
		r := one(t, rs)
		if c.code == "" && (code != 0 || !r.OK) || c.code != "" && (code != 1 || r.OK || r.Code != c.code || r.Hint == "") {
			t.Errorf("%s: exit %d, %+v; want %q", c.name, code, r, c.code)
		}
	}
	h.send(t, "release\n")
	if rel := h.next(t); !rel.Released {
		t.Errorf("release: %+v", rel)
	}
	h.end(t, false)
}

// TestConnectAheadThenHold: a helper started ahead of need (connect with
// the hold's TTL) takes its request on the next line and holds with the
// lease it granted meanwhile; one started for another TTL holds with a
// fresh one; one whose request never comes revokes what it granted.
func TestConnectAheadThenHold(t *testing.T) {
	t.Parallel()
	ep := etcdtest.Start(t)
	for i, ttl := range []time.Duration{20 * time.Second, 40 * time.Second} {
		task := []string{"T-1", "T-2"}[i]
		conn := request(ep, "connect")
		conn.TTL = 20 * time.Second
		req := request(ep, "hold")
		req.Key, req.TTL, req.Holder = fleet.Key("r5", task), ttl, holderOf(task)
		h := startHold(t, line(t, conn), line(t, req))
		got := h.next(t)
		if !got.OK || got.LeaseID == 0 {
			t.Fatalf("hold after connect (ttl %s): %+v", ttl, got)
		}
		// The lease granted ahead is for 20s: a hold of 40s has a fresh
		// one, with more time left than that.
		es := list(t, ep, fleet.Prefix("r5"))
		if len(es) != 1 || es[0].LeaseID != got.LeaseID || es[0].TTL <= 0 || es[0].TTL > int64(ttl/time.Second) || ttl > conn.TTL && es[0].TTL <= int64(conn.TTL/time.Second) {
			t.Fatalf("ttl %s: etcd has %+v", ttl, es)
		}
		h.send(t, "release\n")
		if rel := h.next(t); !rel.Released {
			t.Errorf("release: %+v", rel)
		}
		h.end(t, false)
	}

	// Started ahead, then not needed: nothing is left held.
	conn := request(ep, "connect")
	conn.TTL = 20 * time.Second
	if code, rs, stderr := helper(t, line(t, conn)); code != 0 || len(rs) != 0 {
		t.Errorf("connect alone: exit %d, %+v, %s", code, rs, stderr)
	}
	if ls := leases(t, ep); len(ls) != 0 {
		t.Errorf("etcd still has leases %v: one granted ahead, or by a hold, was not revoked", ls)
	}
	// A connect followed by list: the request is answered as it would be
	// alone.
	conn.TTL = 0
	lreq := request(ep, "list")
	lreq.Prefix = fleet.Prefix("r5")
	code, rs, _ := helper(t, line(t, conn)+line(t, lreq))
	if r := one(t, rs); code != 0 || !r.OK || len(r.Entries) != 0 {
		t.Errorf("connect then list: exit %d, %+v", code, r)
	}
}

// leases are the ids of every lease etcd at endpoint holds.
func leases(t *testing.T, endpoint string) []clientv3.LeaseID {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []clientv3.LeaseID
	for _, l := range resp.Leases {
		ids = append(ids, l.ID)
	}
	return ids
}

// TestRevokeOfAKeyWtDidNotWrite: a key under the prefix with no lease and
// a value that is no holder is listed as it is (the value in the client
// id, for a person to see) and revoked by deleting it.
func TestRevokeOfAKeyWtDidNotWrite(t *testing.T) {
	t.Parallel()
	ep := etcdtest.Start(t)
	key := fleet.Key("r6", "T-1")
	created := etcdtest.PutValue(t, ep, key, "by hand")
	es := list(t, ep, fleet.Prefix("r6"))
	if len(es) != 1 || es[0].TaskKey != "T-1" || es[0].Revision != created || es[0].LeaseID != 0 || es[0].TTL != -1 || !strings.Contains(es[0].Holder.ClientID, "by hand") {
		t.Fatalf("list: %+v", es)
	}
	rev := request(ep, "revoke")
	rev.Key = key
	code, rs, _ := helper(t, line(t, rev))
	if r := one(t, rs); code != 0 || !r.OK || r.Entry == nil || r.Entry.Revision != created {
		t.Errorf("revoke: exit %d, %+v", code, r)
	}
	if es := list(t, ep, fleet.Prefix("r6")); len(es) != 0 {
		t.Errorf("after revoke: %+v", es)
	}
}
