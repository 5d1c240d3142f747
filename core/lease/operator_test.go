package lease

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// ended checks that the lease and everything that mirrors it (git's lock,
// its runtime binding) are gone and that event closed it.
func (g *gov) ended(event string) {
	g.T.Helper()
	if _, ok := g.lease(); ok {
		g.T.Fatal("the lease is still there")
	}
	if _, locked := g.lock(); locked {
		g.T.Fatal("git's lock is still there")
	}
	if b := g.alloc().ExternalBindings; len(b) != 0 {
		g.T.Fatalf("bindings left: %v", b)
	}
	if g.last() != event {
		g.T.Fatalf("events %v, want %s last", g.names(), event)
	}
}

// TestReleaseDead: an operator's release names the exact lease, and ends
// it only when nothing of it runs; every expectation is checked first.
func TestReleaseDead(t *testing.T) {
	t.Parallel()
	head := func(g *gov) string { return gittestHead(t, g) }
	wrongGen := 9
	shared := sharedRepo(t)
	for i, tc := range []struct {
		name   string
		holder func(t *testing.T) proc.Holder
		expect func(g *gov, l store.Lease) Expect
		code   string
	}{
		{"dead", gone("gone"), func(g *gov, l store.Lease) Expect { return Expect{LeaseID: l.LeaseID} }, ""},
		{"dead, every expectation met", gone("gone"), func(g *gov, l store.Lease) Expect {
			return Expect{LeaseID: l.LeaseID, Generation: &l.Generation, Head: head(g)}
		}, ""},
		{"no lease id", gone("gone"), func(g *gov, l store.Lease) Expect { return Expect{} }, decision.Usage},
		{"another lease id", gone("gone"), func(g *gov, l store.Lease) Expect { return Expect{LeaseID: ids.New()} }, decision.WriterLeaseMismatch},
		{"another generation", gone("gone"), func(g *gov, l store.Lease) Expect {
			return Expect{LeaseID: l.LeaseID, Generation: &wrongGen}
		}, decision.WriterLeaseMismatch},
		{"another head", gone("gone"), func(g *gov, l store.Lease) Expect {
			return Expect{LeaseID: l.LeaseID, Head: strings.Repeat("1", 40)}
		}, decision.StaleHead},
		{"holder runs", self, func(g *gov, l store.Lease) Expect { return Expect{LeaseID: l.LeaseID} }, decision.WriterLeaseHeld},
		{"its group runs", leader("gone"), func(g *gov, l store.Lease) Expect { return Expect{LeaseID: l.LeaseID} }, decision.WriterLeaseHeld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := onRepo(t, shared, i+1)
			l := g.plant(tc.holder(t), nil)
			before := g.snap()
			out, err := ReleaseDead(g.R, g.a.WorktreePath, tc.expect(g, l))
			if tc.code != "" {
				wttest.WantCode(t, err, tc.code)
				g.unchanged(before)
				return
			}
			if err != nil || out.Lease.LeaseID != l.LeaseID || len(out.BindingsRemoved) != 1 || !out.Proof.DeadProcess {
				t.Fatalf("%+v %v", out, err)
			}
			g.ended("writer_lease_released")
		})
	}
	t.Run("no lease", func(t *testing.T) {
		t.Parallel()
		g := onRepo(t, shared, 100)
		_, err := ReleaseDead(g.R, g.a.WorktreePath, Expect{LeaseID: ids.New()})
		wttest.WantCode(t, err, decision.NoWriterLease)
	})
	t.Run("the lease records another path", func(t *testing.T) {
		t.Parallel()
		g := onRepo(t, shared, 101)
		l := g.plant(exited(t, "gone"), func(l *store.Lease) { l.WorktreePath += "-moved" })
		before := g.snap()
		_, err := ReleaseDead(g.R, g.a.WorktreePath, Expect{LeaseID: l.LeaseID})
		wttest.WantCode(t, err, decision.WriterLeaseMismatch)
		g.unchanged(before)
	})
}

// gittestHead is the worktree's HEAD commit.
func gittestHead(t *testing.T, g *gov) string {
	t.Helper()
	h, err := gitrepo.HeadCommit(g.c.GitDir, g.c.CommonDir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestAbandon is the abandon rule on real leases: a running holder's
// lease is never abandoned; another's dead lease needs the operator; the
// caller's own does not; every abandon stores its reason and proof.
func TestAbandon(t *testing.T) {
	t.Parallel()
	shared := sharedRepo(t)
	for i, tc := range []struct {
		name     string
		holder   func(t *testing.T) proc.Holder
		caller   string
		operator bool
		reason   string
		code     string
	}{
		{"foreign dead, operator", gone("gone"), "", true, "agent crashed", ""},
		{"own dead", gone("me"), "me", false, "mine, crashed", ""},
		{"foreign dead, no operator", gone("gone"), "me", false, "crashed", decision.OperatorRequired},
		{"running", self, "", true, "stuck", decision.AbandonProofInsufficient},
		{"its group runs", leader("gone"), "", true, "stuck", decision.AbandonProofInsufficient},
		{"no reason", gone("gone"), "", true, "  ", decision.Usage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := onRepo(t, shared, i+1)
			l := g.plant(tc.holder(t), nil)
			before := g.snap()
			out, err := Abandon(g.R, g.a.WorktreePath, tc.reason, tc.operator, Caller{ClientID: tc.caller}, Expect{LeaseID: l.LeaseID})
			if tc.code != "" {
				wttest.WantCode(t, err, tc.code)
				g.unchanged(before)
				return
			}
			if err != nil || out.Lease.LeaseID != l.LeaseID || out.Proof.OperatorAuthorized != tc.operator {
				t.Fatalf("%+v %v", out, err)
			}
			g.ended("writer_lease_abandoned")
			e := g.events()
			d := e[len(e)-1].Detail
			if d["reason"] != tc.reason || d["operator"] != tc.operator || d["proof"] == nil || (tc.caller != "") != (d["requested_by"] != nil) {
				t.Fatalf("event detail %+v", d)
			}
		})
	}
}

// TestAdopt hands an exited holder's lease to a live process: a new lease
// id, the next generation, git's lock and the provenance moved to it; a
// lease still running, a dead adopter, a worktree gone or an allocation
// that takes no writer are refused with nothing changed.
func TestAdopt(t *testing.T) {
	t.Parallel()
	shared := sharedRepo(t)
	for i, tc := range []struct {
		name    string
		holder  func(t *testing.T) proc.Holder
		adopter func(t *testing.T) proc.Holder
		setup   func(t *testing.T, g *gov)
		code    string
	}{
		{name: "adopted", holder: gone("gone"), adopter: self},
		{name: "holder runs", holder: func(t *testing.T) proc.Holder { return as(wttest.Self(t), "other") }, adopter: self, code: decision.WriterLeaseHeld},
		{name: "its group runs", holder: leader("gone"), adopter: self, code: decision.WriterLeaseHeld},
		{name: "the adopter is gone", holder: gone("gone"), adopter: gone("test"), code: decision.InvalidHolder},
		{name: "the worktree is gone", holder: gone("gone"), adopter: self, code: decision.InvalidTarget,
			setup: func(t *testing.T, g *gov) {
				if err := os.RemoveAll(g.a.WorktreePath); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "retained", holder: gone("gone"), adopter: self, code: decision.InvalidLifecycle,
			setup: func(t *testing.T, g *gov) {
				g.Write(func(tx *store.Tx) error {
					a, err := tx.Allocation(g.a.AllocationID)
					if err != nil {
						return err
					}
					a.Lifecycle = store.Retained
					return tx.PutAllocation(&a)
				})
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := onRepo(t, shared, i+1)
			l := g.plant(tc.holder(t), nil)
			if tc.setup != nil {
				tc.setup(t, g)
			}
			adopter := tc.adopter(t)
			before := g.snap()
			out, err := Adopt(g.R, g.a.WorktreePath, adopter, " its command goes on ", Expect{LeaseID: l.LeaseID})
			if tc.code != "" {
				wttest.WantCode(t, err, tc.code)
				g.unchanged(before)
				return
			}
			nl, _ := g.lease()
			if err != nil || out.Adopted == nil || out.Adopted.LeaseID != nl.LeaseID || nl.LeaseID == l.LeaseID ||
				nl.Generation != l.Generation+1 || !nl.Holder.Same(adopter) {
				t.Fatalf("%+v %v; lease %+v", out, err, nl)
			}
			if p := nl.Provenance; p == nil || p.How != store.ProvenanceAdopted || p.PriorLeaseID != l.LeaseID || p.Reason != "its command goes on" {
				t.Fatalf("provenance %+v", p)
			}
			if a := g.alloc(); a.LeaseGeneration != nl.Generation || len(a.ExternalBindings) != 0 {
				t.Fatalf("allocation %+v", a)
			}
			if reason, _ := g.lock(); reason != Reason(nl) {
				t.Fatalf("git's lock %q", reason)
			}
			if g.last() != "writer_lease_adopted" {
				t.Fatalf("events %v", g.names())
			}
		})
	}
}

// TestGrantAdopted gives a worktree's first lease to a named live
// process, and refuses a process that is not running.
func TestGrantAdopted(t *testing.T) {
	t.Parallel()
	g := newGov(t)
	before := g.snap()
	a, dead := g.alloc(), exited(t, "agent")
	var err error
	g.Write(func(tx *store.Tx) error {
		_, err = GrantAdopted(g.R, tx, a, dead, "adopted")
		return nil
	})
	wttest.WantCode(t, err, decision.InvalidHolder)
	g.unchanged(before)

	me := wttest.Self(t)
	var nl store.Lease
	g.Write(func(tx *store.Tx) error {
		nl, err = GrantAdopted(g.R, tx, a, me, "adopted")
		return err
	})
	l, ok := g.lease()
	if !ok || l.LeaseID != nl.LeaseID || l.Generation != 1 || !l.Holder.Same(me) || l.Provenance == nil || l.Provenance.How != store.ProvenanceAdopted {
		t.Fatalf("lease %+v", l)
	}
	if reason, _ := g.lock(); reason != Reason(l) {
		t.Fatalf("git's lock %q", reason)
	}
	if g.alloc().LeaseGeneration != 1 || g.last() != "writer_lease_adopted" {
		t.Fatalf("allocation %+v, events %v", g.alloc(), g.names())
	}
}

// TestExpire ends the expired leases of which nothing runs, and keeps an
// expired lease whose holder runs: expiry alone never makes a lease dead.
func TestExpire(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		holder func(t *testing.T) proc.Holder
		expiry *string
		ended  bool
	}{
		{"expired, dead", gone("gone"), &past, true},
		{"expired, running", self, &past, false},
		{"not expired, dead", gone("gone"), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGov(t)
			l := g.plant(tc.holder(t), func(l *store.Lease) { l.ExpiresAt = tc.expiry })
			before := g.snap()
			res, err := Expire(g.R)
			if err != nil {
				t.Fatal(err)
			}
			if tc.ended {
				if len(res.Expired) != 1 || res.Expired[0].Lease.LeaseID != l.LeaseID || len(res.Kept) != 0 {
					t.Fatalf("%+v", res)
				}
				g.ended("writer_lease_expired")
				return
			}
			if len(res.Expired) != 0 {
				t.Fatalf("%+v", res)
			}
			if tc.expiry != nil && (len(res.Kept) != 1 || res.Kept[0].LeaseID != l.LeaseID || res.Kept[0].Why == "") {
				t.Fatalf("kept %+v", res.Kept)
			}
			g.unchanged(before)
		})
	}
}

// TestHandoffReservesTheNextGrant: the holder (this process) reserves the
// worktree's next grant for a client; every other client is then
// refused, the one named is granted and consumes it.
func TestHandoffReservesTheNextGrant(t *testing.T) {
	t.Parallel()
	g := newGov(t)
	me := wttest.Self(t)
	gr := g.mustAcquire(Request{Holder: me})
	h, err := Handoff(g.R, g.a.WorktreePath, "worker", 0, false, Expect{LeaseID: gr.Lease.LeaseID})
	if err != nil {
		t.Fatal(err)
	}
	if h.ToClient != "worker" || h.ByClient != "test" || h.Operator || h.FromLeaseID != gr.Lease.LeaseID || h.FromGeneration != 1 {
		t.Fatalf("handoff %+v", h)
	}
	created, _ := time.Parse(time.RFC3339Nano, h.CreatedAt)
	expires, _ := time.Parse(time.RFC3339Nano, h.ExpiresAt)
	if expires.Sub(created) != DefaultHandoffTTL {
		t.Fatalf("TTL %s", expires.Sub(created))
	}
	if g.last() != "handoff_reserved" {
		t.Fatalf("events %v", g.names())
	}
	if _, err := Release(g.R, gr, realScan, nil); err != nil {
		t.Fatal(err)
	}
	before := g.snap()
	_, err = g.acquire(Request{Holder: as(me, "intruder")})
	wttest.WantCode(t, err, decision.WriterLeaseReserved)
	g.unchanged(before)
	next := g.mustAcquire(Request{Holder: as(me, "worker")})
	if next.Code != decision.WriterLeaseAcquired || next.Lease.Provenance == nil || next.Lease.Provenance.How != store.ProvenanceHandoff ||
		next.Lease.Provenance.PriorLeaseID != gr.Lease.LeaseID {
		t.Fatalf("grant %+v", next)
	}
	if _, ok := g.handoff(); ok {
		t.Fatal("the reservation outlived its use")
	}
}

// TestHandoffRefusals: who may hand over, what, to whom.
func TestHandoffRefusals(t *testing.T) {
	t.Parallel()
	shared := sharedRepo(t)
	for i, tc := range []struct {
		name     string
		holder   func(t *testing.T) proc.Holder // nil: no lease
		to       string
		ttl      time.Duration
		operator bool
		expect   func(l store.Lease) Expect
		role     string
		code     string
	}{
		{name: "a bad client id", holder: self, to: "-x", code: decision.InvalidHolder},
		{name: "a negative TTL", holder: self, to: "w", ttl: -time.Second, code: decision.Usage},
		{name: "a bad expectation", holder: self, to: "w", expect: func(store.Lease) Expect { return Expect{LeaseID: "x"} }, code: decision.Usage},
		{name: "another lease expected", holder: self, to: "w", expect: func(store.Lease) Expect { return Expect{LeaseID: ids.New()} }, code: decision.WriterLeaseMismatch},
		{name: "a lease expected, none there", to: "w", operator: true, expect: func(store.Lease) Expect { return Expect{LeaseID: ids.New()} }, code: decision.WriterLeaseMismatch},
		{name: "no lease, not an operator", to: "w", code: decision.NoWriterLease},
		{name: "not from inside the lease", holder: gone("gone"), to: "w", code: decision.WriterLeaseRequired},
		{name: "an operator, no lease", to: "w", operator: true},
		{name: "an operator, another's lease", holder: gone("gone"), to: "w", operator: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := onRepo(t, shared, i+1)
			var l store.Lease
			if tc.holder != nil {
				l = g.plant(tc.holder(t), nil)
			}
			var e Expect
			if tc.expect != nil {
				e = tc.expect(l)
			}
			before := g.snap()
			h, err := Handoff(g.R, g.a.WorktreePath, tc.to, tc.ttl, tc.operator, e)
			if tc.code != "" {
				wttest.WantCode(t, err, tc.code)
				g.unchanged(before)
				return
			}
			got, ok := g.handoff()
			if err != nil || !ok || got.ToClient != tc.to || !got.Operator || h.FromLeaseID != l.LeaseID {
				t.Fatalf("%+v %v; stored %+v", h, err, got)
			}
		})
	}
	t.Run("an audit worktree", func(t *testing.T) {
		t.Parallel()
		g := newGov(t)
		audit := g.Allocate("T-2", store.RoleAudit, "audit")
		_, err := Handoff(g.R, audit.WorktreePath, "w", 0, true, Expect{})
		wttest.WantCode(t, err, decision.InvalidLifecycle)
	})
}

// TestTransfer: run from inside the lease (this process holds it), the
// lease moves to a live descendant of its holder, the same lease id and
// generation, its binding and git's lock with it.
func TestTransfer(t *testing.T) {
	t.Parallel()
	g := newGov(t)
	me := wttest.Self(t)
	gr := g.mustAcquire(Request{Holder: me, Kind: "test"})
	child := sleeper(t, "")
	out, err := Transfer(g.R, g.a.WorktreePath, child.PID, "the child goes on", Expect{LeaseID: gr.Lease.LeaseID})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := g.lease()
	if out.Transferred == nil || l.LeaseID != gr.Lease.LeaseID || l.Generation != gr.Lease.Generation || l.Holder.PID != child.PID ||
		l.Holder.StartTicks != child.StartTicks || l.Holder.ClientID != "test" {
		t.Fatalf("%+v; lease %+v", out, l)
	}
	if p := l.Provenance; p == nil || p.How != store.ProvenanceTransferred || p.PriorHolder == nil || !p.PriorHolder.Same(me) {
		t.Fatalf("provenance %+v", l.Provenance)
	}
	b := g.alloc().ExternalBindings
	if len(b) != 1 {
		t.Fatalf("bindings %v", b)
	}
	rb, ok, err := proc.DecodeRuntimeBinding(b[0])
	if err != nil || !ok || rb.Holder.PID != child.PID || rb.Kind != "test" || *rb.LeaseID != l.LeaseID {
		t.Fatalf("binding %+v %v", rb, err)
	}
	if reason, _ := g.lock(); reason != Reason(l) {
		t.Fatalf("git's lock %q", reason)
	}
	if g.last() != "writer_lease_transferred" {
		t.Fatalf("events %v", g.names())
	}
}

// TestTransferRefusals: a holder that exited, a caller outside the lease,
// a pid that is not the holder's live descendant.
func TestTransferRefusals(t *testing.T) {
	t.Parallel()
	shared := sharedRepo(t)
	for i, tc := range []struct {
		name   string
		holder func(t *testing.T) proc.Holder
		pid    func(t *testing.T, h proc.Holder) int
		code   string
	}{
		{"the holder exited", gone("gone"), func(t *testing.T, h proc.Holder) int { return sleeper(t, "").PID }, decision.InvalidHolder},
		{"not from inside the lease", func(t *testing.T) proc.Holder {
			c := sleeper(t, "")
			id, err := proc.Describe(c.PID)
			if err != nil {
				t.Fatal(err)
			}
			return proc.Holder{ClientID: "other", PID: id.PID, BootID: id.BootID, StartTicks: id.StartTicks}
		}, func(t *testing.T, h proc.Holder) int { return h.PID }, decision.WriterLeaseRequired},
		{"the holder itself", self, func(t *testing.T, h proc.Holder) int { return h.PID }, decision.InvalidHolder},
		{"not a descendant", self, func(t *testing.T, h proc.Holder) int { return os.Getppid() }, decision.InvalidHolder},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := onRepo(t, shared, i+1)
			h := tc.holder(t)
			l := g.plant(h, nil)
			pid := tc.pid(t, h)
			before := g.snap()
			_, err := Transfer(g.R, g.a.WorktreePath, pid, "move", Expect{LeaseID: l.LeaseID})
			wttest.WantCode(t, err, tc.code)
			g.unchanged(before)
		})
	}
}
