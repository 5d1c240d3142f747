package lease

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/liveness"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// TestAcquireAndReleaseOnTheStore: a grant on a real store writes the
// lease, the runtime binding, the generation and git's lock, and its
// release takes them all away again; the events say both.
func TestAcquireAndReleaseOnTheStore(t *testing.T) {
	t.Parallel()
	g := newGov(t)
	me := wttest.Self(t)
	gr := g.mustAcquire(Request{Holder: me, TTL: time.Minute})
	if gr.Code != decision.WriterLeaseAcquired || !gr.Owned || !gr.Started || !gr.Applicable || gr.Binding == "" {
		t.Fatalf("grant %+v", gr)
	}
	l, ok := g.lease()
	if !ok || l.LeaseID != gr.Lease.LeaseID || l.Generation != 1 || !l.Holder.Same(me) || l.ExpiresAt == nil {
		t.Fatalf("lease %+v (%v)", l, ok)
	}
	if a := g.alloc(); a.LeaseGeneration != 1 || !slices.Equal(a.ExternalBindings, []string{gr.Binding}) {
		t.Fatalf("allocation %+v", a)
	}
	if reason, locked := g.lock(); !locked || reason != Reason(l) {
		t.Fatalf("git's lock %q %v", reason, locked)
	}
	if g.last() != "writer_lease_acquired" {
		t.Fatalf("events %+v", g.events())
	}

	res, err := Release(g.R, gr, realScan, nil)
	if err != nil || !res.LeaseRemoved || res.Kept != "" {
		t.Fatalf("release %+v %v", res, err)
	}
	if _, ok := g.lease(); ok {
		t.Fatal("the lease outlived its release")
	}
	if _, locked := g.lock(); locked {
		t.Fatal("git's lock outlived the release")
	}
	if a := g.alloc(); len(a.ExternalBindings) != 0 || a.LeaseGeneration != 1 {
		t.Fatalf("allocation after the release %+v", a)
	}
	if g.last() != "writer_lease_released" {
		t.Fatalf("events %+v", g.events())
	}
	// The next grant is the next generation: a fencing token is never
	// reused.
	if gr := g.mustAcquire(Request{Holder: me}); gr.Lease.Generation != 2 {
		t.Fatalf("second grant %+v", gr.Lease)
	}
}

// TestAcquireRenewalIsNotOwned: the holder's second wt-exec renews the
// lease; its release removes only its own binding and leaves the lease to
// the grant that acquired it.
func TestAcquireRenewalIsNotOwned(t *testing.T) {
	t.Parallel()
	g := newGov(t)
	me := wttest.Self(t)
	first := g.mustAcquire(Request{Holder: me})
	second := g.mustAcquire(Request{Holder: me, Kind: "test"})
	if second.Code != decision.WriterLeaseRenewed || second.Owned || second.Lease.LeaseID != first.Lease.LeaseID || second.Binding == "" {
		t.Fatalf("renewal %+v", second)
	}
	if b := g.alloc().ExternalBindings; len(b) != 2 {
		t.Fatalf("bindings %v", b)
	}
	res, err := Release(g.R, second, realScan, nil)
	if err != nil || res.LeaseRemoved {
		t.Fatalf("release of the renewal %+v %v", res, err)
	}
	if l, ok := g.lease(); !ok || l.LeaseID != first.Lease.LeaseID {
		t.Fatal("the renewal's release took the lease")
	}
	if b := g.alloc().ExternalBindings; !slices.Equal(b, []string{first.Binding}) {
		t.Fatalf("bindings after the renewal's release %v", b)
	}
	if g.last() != "runtime_binding_removed" {
		t.Fatalf("events %+v", g.events())
	}
}

// TestRenew moves the expiry of the grant's own lease, and refuses once
// the lease is no longer the grant's; a grant without a lease or a TTL
// has nothing to renew.
func TestRenew(t *testing.T) {
	t.Parallel()
	g := newGov(t)
	me := wttest.Self(t)
	gr := g.mustAcquire(Request{Holder: me, TTL: time.Second})
	old := *gr.Lease.ExpiresAt
	if err := Renew(g.R, &gr, time.Hour); err != nil {
		t.Fatal(err)
	}
	l, _ := g.lease()
	if l.ExpiresAt == nil || *l.ExpiresAt <= old || *gr.Lease.ExpiresAt != *l.ExpiresAt {
		t.Fatalf("expiry %v, was %s", l.ExpiresAt, old)
	}
	if liveness.Expired(l, time.Now().Add(30*time.Minute)) {
		t.Fatal("renewed for an hour, expired within it")
	}
	if e := g.events(); e[len(e)-1].Event != "writer_lease_renewed" || e[len(e)-1].Detail["periodic"] != true {
		t.Fatalf("event %+v", e[len(e)-1])
	}
	// Nothing to renew: no TTL, or a grant that took no lease.
	before := g.snap()
	if err := Renew(g.R, &gr, 0); err != nil {
		t.Fatal(err)
	}
	if err := Renew(g.R, &Grant{}, time.Hour); err != nil {
		t.Fatal(err)
	}
	g.unchanged(before)

	// Someone else's lease now: the grant's renewal is refused.
	other := g.plant(exited(t, "other"), nil)
	before = g.snap()
	wttest.WantCode(t, Renew(g.R, &gr, time.Hour), decision.WriterLeaseMismatch)
	g.unchanged(before)
	if l, _ := g.lease(); l.LeaseID != other.LeaseID || l.ExpiresAt != nil {
		t.Fatalf("the refused renewal touched %+v", l)
	}
}

// TestReleaseLeavesALeaseItNoLongerHolds: a lease ended and replaced
// while its wt-exec ran is not the grant's to remove.
func TestReleaseLeavesALeaseItNoLongerHolds(t *testing.T) {
	t.Parallel()
	g := newGov(t)
	me := wttest.Self(t)
	gr := g.mustAcquire(Request{Holder: me})
	other := g.plant(as(me, "other"), nil)
	res, err := Release(g.R, gr, realScan, nil)
	if err != nil || res.LeaseRemoved || !strings.Contains(res.Kept, "someone else") {
		t.Fatalf("release %+v %v", res, err)
	}
	if l, ok := g.lease(); !ok || l.LeaseID != other.LeaseID {
		t.Fatal("the release removed another's lease")
	}
	if reason, _ := g.lock(); reason != Reason(other) {
		t.Fatalf("git's lock %q", reason)
	}
	// The grant's own binding is gone all the same.
	if slices.Contains(g.alloc().ExternalBindings, gr.Binding) {
		t.Fatal("the grant's binding outlived its release")
	}
}

// TestReleaseKeepsAnExitedHoldersLeaseWhileSomethingRuns: a holder that
// exited is released only when nothing of its lease survives; a process
// left in its child's group keeps it.
func TestReleaseKeepsAnExitedHoldersLeaseWhileSomethingRuns(t *testing.T) {
	t.Parallel()
	shared := sharedRepo(t)
	for i, tc := range []struct {
		name     string
		child    bool
		kept     bool
		contains string
	}{
		{"a process remains in the child's group", true, true, "child's process group"},
		{"nothing remains", false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := onRepo(t, shared, i+1)
			dead := exited(t, "gone")
			l := g.plant(dead, func(l *store.Lease) {
				if tc.child {
					l.Child = sleeper(t, "")
				}
			})
			gr := Grant{Applicable: true, Owned: true, Lease: l, Allocation: g.alloc(), leaseWritten: true,
				commonDir: g.R.Git.CommonDir, key: g.a.WorktreeKey}
			res, err := Release(g.R, gr, realScan, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, has := g.lease()
			_, locked := g.lock()
			if tc.kept {
				if res.LeaseRemoved || !strings.Contains(res.Kept, tc.contains) || !has || !locked {
					t.Fatalf("release %+v; lease there %v, locked %v", res, has, locked)
				}
				return
			}
			if !res.LeaseRemoved || has || locked {
				t.Fatalf("release %+v; lease there %v, locked %v", res, has, locked)
			}
			if e := g.events(); e[len(e)-1].Detail["holder_exited"] != true {
				t.Fatalf("event %+v", e[len(e)-1])
			}
		})
	}
}

// TestReleaseLeavesOccupants: processes a run leaves in its worktree are
// recorded as occupants, and keep the next writer out while they live
// there (RUNTIME_OCCUPIED); inspection names them.
func TestReleaseLeavesOccupants(t *testing.T) {
	t.Parallel()
	g := newGov(t)
	me := wttest.Self(t)
	gr := g.mustAcquire(Request{Holder: me})
	occ := stranger(t, g.a.WorktreePath)
	res, err := Release(g.R, gr, realScan, []proc.Holder{occ})
	if err != nil || !res.LeaseRemoved {
		t.Fatalf("release %+v %v", res, err)
	}
	if n := g.names(); !slices.Equal(n[len(n)-2:], []string{"runtime_occupied", "writer_lease_released"}) {
		t.Fatalf("events %v", n)
	}
	occs := Occupants(g.alloc())
	if len(occs) != 1 || occs[0].PID != occ.PID || occs[0].ClientID != "stranger" || occs[0].Why != proc.WhyCwd {
		t.Fatalf("occupants %+v", occs)
	}
	d := occs[0].Describe(g.a.WorktreePath)
	if !strings.Contains(d, "no writer is let in") || !strings.Contains(d, ", cwd") {
		t.Fatalf("description %q", d)
	}

	before := g.snap()
	_, err = g.acquire(Request{Holder: me})
	wttest.WantCode(t, err, decision.RuntimeOccupied)
	g.unchanged(before)

	in, err := Inspect(g.R, g.a.WorktreePath, Caller{ClientID: "test"}, "")
	if err != nil || in.SafeNextAction != WaitForeignActive || !in.Block || in.Occupant == nil || in.Occupant.PID != occ.PID {
		t.Fatalf("inspection %+v %v", in, err)
	}
}

// TestOccupantsFenceOnlyWhileTheyUseTheWorktree: an occupant that died,
// or that runs elsewhere, fences nothing, and the next grant clears its
// binding; other bindings are not occupants.
func TestOccupantsFenceOnlyWhileTheyUseTheWorktree(t *testing.T) {
	t.Parallel()
	g := newGov(t)
	elsewhere := stranger(t, t.TempDir())
	var vals []string
	for _, h := range []proc.Holder{exited(t, "gone"), elsewhere} {
		v, err := proc.RuntimeBinding{Holder: h, Kind: proc.OccupantKind}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		vals = append(vals, v)
	}
	g.Write(func(tx *store.Tx) error {
		a, err := tx.Allocation(g.a.AllocationID)
		if err != nil {
			return err
		}
		a.ExternalBindings = vals
		return tx.PutAllocationRuntime(&a)
	})
	if occs := Occupants(g.alloc()); len(occs) != 0 {
		t.Fatalf("occupants %+v", occs)
	}
	gr := g.mustAcquire(Request{Holder: wttest.Self(t)})
	if !slices.Equal(gr.Cleared, vals) {
		t.Fatalf("cleared %v, want %v", gr.Cleared, vals)
	}
	if b := g.alloc().ExternalBindings; !slices.Equal(b, []string{gr.Binding}) {
		t.Fatalf("bindings %v", b)
	}
}

// TestOccupiedError says who occupies the worktree and how it ends.
func TestOccupiedError(t *testing.T) {
	o := Occupant{PID: 77, Command: "vim", ClientID: "c1", Since: "2026-01-02T03:04:05Z", Holder: proc.Holder{ClientID: "c1", PID: 77}}
	err := OccupiedError(o, "/r", "/r/w 1")
	wttest.WantCode(t, err, decision.RuntimeOccupied)
	if !strings.Contains(err.Message, "pid 77 (vim) since 2026-01-02T03:04:05Z") || !strings.Contains(err.Hint, "kill -TERM 77") ||
		!strings.Contains(err.Hint, "'/r/w 1'") {
		t.Fatalf("%s / %s", err.Message, err.Hint)
	}
}

// TestAcquireTakesOverOnlyADeadLease: a lease whose holder exited and of
// which nothing runs is taken over (the next generation, the old lease
// recorded as previous, its binding cleared, git's lock moved); while its
// holder, its holder's group, its child's group or a carrier of its id
// lives it is WRITER_LEASE_HELD, and nothing is written.
func TestAcquireTakesOverOnlyADeadLease(t *testing.T) {
	t.Parallel()
	shared := sharedRepo(t)
	for i, tc := range []struct {
		name   string
		holder func(t *testing.T) proc.Holder
		change func(t *testing.T, g *gov, l *store.Lease)
		after  func(t *testing.T, g *gov, l store.Lease)
		held   string // "" for a takeover
	}{
		{name: "dead", holder: func(t *testing.T) proc.Holder { return exited(t, "gone") }},
		{name: "holder runs", holder: func(t *testing.T) proc.Holder { return as(wttest.Self(t), "other") }, held: "its holder is running"},
		{name: "holder's group", holder: func(t *testing.T) proc.Holder { return exitedLeader(t, "gone") }, held: "holder's process group"},
		{name: "child's group", holder: func(t *testing.T) proc.Holder { return exited(t, "gone") },
			change: func(t *testing.T, g *gov, l *store.Lease) { l.Child = sleeper(t, "") }, held: "child's process group"},
		{name: "a carrier", holder: func(t *testing.T) proc.Holder { return exited(t, "gone") },
			after: func(t *testing.T, g *gov, l store.Lease) { sleeper(t, "", liveness.LeaseEnv+"="+l.LeaseID) }, held: "carry the lease"},
		{name: "a user of the worktree", holder: func(t *testing.T) proc.Holder { return exited(t, "gone") },
			after: func(t *testing.T, g *gov, l store.Lease) { stranger(t, g.a.WorktreePath) }, held: "uses the worktree"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := onRepo(t, shared, i+1)
			h := tc.holder(t)
			l := g.plant(h, func(l *store.Lease) {
				if tc.change != nil {
					tc.change(t, g, l)
				}
			})
			if tc.after != nil {
				tc.after(t, g, l)
			}
			before := g.snap()
			me := wttest.Self(t)
			gr, err := g.acquire(Request{Holder: me})
			if tc.held != "" {
				wttest.WantCode(t, err, decision.WriterLeaseHeld)
				if !strings.Contains(err.Error(), tc.held) {
					t.Fatalf("refusal %q lacks %q", err, tc.held)
				}
				g.unchanged(before)
				return
			}
			if err != nil || gr.Code != decision.WriterLeaseTakenOver || gr.Previous == nil || gr.Previous.LeaseID != l.LeaseID {
				t.Fatalf("%+v %v", gr, err)
			}
			nl, _ := g.lease()
			if nl.Generation != l.Generation+1 || !nl.Holder.Same(me) || nl.Provenance == nil ||
				nl.Provenance.How != store.ProvenanceTakenOver || nl.Provenance.PriorLeaseID != l.LeaseID {
				t.Fatalf("new lease %+v", nl)
			}
			if a := g.alloc(); a.LeaseGeneration != nl.Generation || !slices.Equal(a.ExternalBindings, []string{gr.Binding}) {
				t.Fatalf("allocation %+v", a)
			}
			if reason, _ := g.lock(); reason != Reason(nl) {
				t.Fatalf("git's lock %q", reason)
			}
			if e := g.events(); e[len(e)-1].Event != "writer_lease_taken_over" || e[len(e)-1].Detail["previous_lease_id"] != l.LeaseID {
				t.Fatalf("event %+v", e[len(e)-1])
			}
		})
	}
}

// TestAcquireRefusesUnderAJournal: a finish acting on the worktree keeps
// writers out: TRANSACTION_IN_FLIGHT while its wt-admin runs,
// INTERRUPTED_TRANSACTION once it is gone. A journal of another worktree,
// or of an allocation, does not.
func TestAcquireRefusesUnderAJournal(t *testing.T) {
	self := wttest.Self(t)
	for _, tc := range []struct {
		name string
		j    store.Journal
		code string
	}{
		{"live finish", store.Journal{Operation: "finish", Actor: self.Identity()}, decision.TransactionInFlight},
		{"interrupted finish", store.Journal{Operation: "finish", Actor: wttest.DeadIdentity, Phase: "planned"}, decision.InterruptedTx},
		{"an allocation", store.Journal{Operation: alloc.OpAllocate, Actor: self.Identity()}, ""},
		{"another worktree", store.Journal{Operation: "finish", Target: "/elsewhere", Actor: self.Identity()}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.j.Target != "/elsewhere" {
				tc.j.Target = f.a.WorktreePath // this subtest's worktree
			}
			f.recs.journals = []store.Journal{tc.j}
			_, err := f.acquire(Request{})
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wttest.WantCode(t, err, tc.code)
			if f.recs.writes != 0 {
				t.Fatal("a refusal wrote")
			}
		})
	}
}

// TestGrantEnv: the child learns its lease, and, for a task wt-admin land
// handed back, where the hand-back file is; a grant without a lease sets
// nothing.
func TestGrantEnv(t *testing.T) {
	t.Parallel()
	g := newGov(t)
	me := wttest.Self(t)
	s, run := "s-1", "r-1"
	me.SessionID, me.RunID = &s, &run
	gr := g.mustAcquire(Request{Holder: me})
	env := gr.Env()
	want := []string{"WT_LEASE_ID=" + gr.Lease.LeaseID, "WT_ALLOCATION_ID=" + g.a.AllocationID, "WT_CLIENT_ID=test",
		"WT_HOLDER_PID=" + strconv.Itoa(me.PID), "WT_SESSION_ID=s-1", "WT_RUN_ID=r-1"}
	if !slices.Equal(env, want) {
		t.Fatalf("env %v\nwant %v", env, want)
	}
	hb := store.HandbackPath(store.Root(g.R.Git.CommonDir), g.a.AllocationID)
	if err := os.MkdirAll(filepath.Dir(hb), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hb, []byte("conflict\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if env := gr.Env(); env[len(env)-1] != store.HandbackEnv+"="+hb {
		t.Fatalf("env with a hand-back %v", env)
	}
	if env := (Grant{}).Env(); env != nil {
		t.Fatalf("an unleased grant's env %v", env)
	}
}

// TestReservedFor: a handoff reserves the worktree for the client it
// names until it expires.
func TestReservedFor(t *testing.T) {
	t.Parallel()
	g := newGov(t)
	if ReservedFor(g.R, g.c, "worker") {
		t.Fatal("reserved with no handoff")
	}
	if _, err := Handoff(g.R, g.a.WorktreePath, "worker", time.Hour, true, Expect{}); err != nil {
		t.Fatal(err)
	}
	if !ReservedFor(g.R, g.c, "worker") || ReservedFor(g.R, g.c, "other") {
		t.Fatal("the reservation is not the worker's alone")
	}
}

// TestAcquireAFleetGrant: in fleet mode the fleet lease is asked with the
// store's lock free, after the grant is reserved, and recorded in the
// lease; the fleet's refusal gives the whole reservation back.
func TestAcquireAFleetGrant(t *testing.T) {
	for _, tc := range []struct {
		name   string
		refuse bool
	}{{"granted", false}, {"refused", true}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.recs.pol = store.Policy{Coordinator: store.CoordinatorEtcd}
			inSection := false
			section := func(fn func(Records) error) error {
				inSection = true
				defer func() { inSection = false }()
				return fn(f.recs)
			}
			target := func(Records) (alloc.Target, error) {
				return alloc.Target{Path: f.c.TopLevel, Key: "w1", Allocation: f.recs.allocs[f.a.AllocationID]}, nil
			}
			boom := errors.New("etcd says no")
			fenced := false
			req := Request{Holder: f.me, Kind: "agent", Fence: func(g Grant, pol store.Policy) (*store.FleetLease, error) {
				fenced = true
				if inSection {
					t.Error("the fleet was asked under the store's lock")
				}
				if _, ok := f.recs.leases[f.a.AllocationID]; ok {
					t.Error("the lease was written before the fleet granted it")
				}
				if len(f.recs.allocs[f.a.AllocationID].ExternalBindings) != 1 {
					t.Error("the fleet was asked before the grant was reserved")
				}
				if tc.refuse {
					return nil, boom
				}
				return &store.FleetLease{Key: "k", Revision: 7}, nil
			}}
			started := false
			g, err := acquire(section, target, f.c.CommonDir, f.c, req, func() (Evidence, error) { return f.ev, nil },
				func(Grant) (*store.ChildGroup, error) { started = true; return nil, nil })
			if !fenced {
				t.Fatal("the fleet was not asked")
			}
			if tc.refuse {
				if !errors.Is(err, boom) || started || g.Started {
					t.Fatalf("%+v %v (started %v)", g, err, started)
				}
				if _, ok := f.recs.leases[f.a.AllocationID]; ok {
					t.Fatal("a lease the fleet refused is left")
				}
				if a := f.recs.allocs[f.a.AllocationID]; len(a.ExternalBindings) != 0 || a.LeaseGeneration != 0 {
					t.Fatalf("the reservation is left: %+v", a)
				}
				if _, locked, _ := gitrepo.ReadLock(f.c.CommonDir, "w1"); locked {
					t.Fatal("git's lock is left")
				}
				return
			}
			if err != nil || !started {
				t.Fatalf("%+v %v", g, err)
			}
			if l := f.recs.leases[f.a.AllocationID]; l.Fleet == nil || l.Fleet.Revision != 7 {
				t.Fatalf("lease %+v", l)
			}
		})
	}
}

// TestAcquireTheCanonicalCheckoutAndUnknownRoles: the canonical checkout
// takes no lease (unless the policy refuses what wt does not govern); a
// role wt does not know runs nothing.
func TestAcquireTheCanonicalCheckoutAndUnknownRoles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *fixture)
		code  string
	}{
		{"canonical", func(f *fixture) { f.c.Key = gitrepo.MainKey }, decision.NotApplicable},
		{"canonical, unmanaged refused", func(f *fixture) {
			f.c.Key = gitrepo.MainKey
			f.recs.pol.Unmanaged = store.UnmanagedRefuse
		}, decision.UnmanagedRefused},
		{"an unknown role", func(f *fixture) {
			a := f.recs.allocs[f.a.AllocationID]
			a.Role = "reviewer"
			f.recs.allocs[a.AllocationID] = a
		}, decision.InvalidRole},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.setup(f)
			g, err := f.acquire(Request{})
			if tc.code == decision.NotApplicable {
				if err != nil || g.Code != tc.code || g.Applicable || !g.Started {
					t.Fatalf("%+v %v", g, err)
				}
			} else {
				wttest.WantCode(t, err, tc.code)
			}
			if f.recs.writes != 0 || len(f.recs.events) != 0 {
				t.Fatal("nothing is written for a grant without a lease")
			}
		})
	}
}

// TestAcquireNoticesAChangeWhileItsChildStarts: the lease ended by an
// operator while the child started (the store's lock free) is not
// written back: the grant is refused with the child started, for the
// caller to stop it.
func TestAcquireNoticesAChangeWhileItsChildStarts(t *testing.T) {
	f := newFixture(t)
	start := func(g Grant) (*store.ChildGroup, error) {
		delete(f.recs.leases, f.a.AllocationID) // an operator's release
		return &store.ChildGroup{PID: 3000, StartTicks: 9}, nil
	}
	g, err := f.acquireWith(Request{Holder: f.me, Kind: "agent"}, func() (Evidence, error) { return f.ev, nil }, start)
	wttest.WantCode(t, err, decision.WriterLeaseHeld)
	if !g.Started || !strings.Contains(err.Error(), "changed while the store's lock was free") {
		t.Fatalf("%+v %v", g, err)
	}
	if _, ok := f.recs.leases[f.a.AllocationID]; ok {
		t.Fatal("the ended lease was written back")
	}
}
