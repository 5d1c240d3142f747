package lease

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/decision/decisiontest"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// The decision table of Acquire, over in-memory records and a fake process
// reading. The end-to-end tests (cmd/internal/e2e) show the same rules with
// real processes; these cover every branch cheaply and exactly.

type memRecords struct {
	pol      store.Policy
	journals []store.Journal
	handoffs map[string]store.Handoff
	repo     store.Repository
	leases   map[string]store.Lease
	allocs   map[string]store.Allocation
	events   []store.Event
	writes   int
}

func (m *memRecords) Repository() (store.Repository, error) { return m.repo, nil }
func (m *memRecords) Policy() (store.Policy, bool, error)   { return m.pol, true, nil }
func (m *memRecords) Lease(id string) (store.Lease, bool, error) {
	l, ok := m.leases[id]
	return l, ok, nil
}
func (m *memRecords) PutLease(l *store.Lease) error {
	m.leases[l.AllocationID] = *l
	m.writes++
	return nil
}
func (m *memRecords) RemoveLease(id string) error { delete(m.leases, id); m.writes++; return nil }
func (m *memRecords) Allocation(id string) (store.Allocation, error) {
	return m.allocs[id], nil
}
func (m *memRecords) PutAllocationRuntime(a *store.Allocation) error {
	m.allocs[a.AllocationID] = *a
	m.writes++
	return nil
}
func (m *memRecords) AppendEvent(e store.Event) error    { m.events = append(m.events, e); return nil }
func (m *memRecords) Journals() ([]store.Journal, error) { return m.journals, nil }
func (m *memRecords) Handoff(id string) (store.Handoff, bool, error) {
	h, ok := m.handoffs[id]
	return h, ok, nil
}
func (m *memRecords) PutHandoff(h *store.Handoff) error {
	if m.handoffs == nil {
		m.handoffs = map[string]store.Handoff{}
	}
	m.handoffs[h.AllocationID] = *h
	m.writes++
	return nil
}
func (m *memRecords) RemoveHandoff(id string) error { delete(m.handoffs, id); m.writes++; return nil }

// fakeEvidence: live identities, group members by leader, path users,
// carriers of an environment variable.
type fakeEvidence struct {
	bootErr  error
	live     map[proc.Identity]bool
	groups   map[int][]int
	users    []proc.Use
	carriers map[string][]int
}

func (f *fakeEvidence) CgroupMembers(string) ([]int, error) { return nil, nil }

func (f *fakeEvidence) BootID() (string, error) {
	if f.bootErr != nil {
		return "", f.bootErr
	}
	return proc.BootID()
}
func (f *fakeEvidence) IsLive(id proc.Identity) bool            { return f.live[id] }
func (f *fakeEvidence) GroupMembers(leader int, _ uint64) []int { return f.groups[leader] }
func (f *fakeEvidence) PathsInUse(string) ([]proc.Use, error)   { return f.users, nil }
func (f *fakeEvidence) CarryingEnv(name, value string) []int    { return f.carriers[name+"="+value] }

type fixture struct {
	t     *testing.T
	recs  *memRecords
	ev    *fakeEvidence
	c     gitrepo.Checkout
	a     store.Allocation
	boot  string
	other proc.Holder // a holder that is not the caller
	me    proc.Holder
}

func newFixture(t *testing.T) *fixture {
	boot, err := proc.BootID()
	if err != nil {
		t.Skip("no boot id:", err)
	}
	top := t.TempDir()
	if p, err := filepath.EvalSymlinks(top); err == nil {
		top = p
	}
	common := filepath.Join(top, "common")
	os.MkdirAll(filepath.Join(common, "worktrees", "w1"), 0o755)
	wt := filepath.Join(top, "w1")
	os.MkdirAll(wt, 0o755)
	branch := "wt/T-1"
	a := store.Allocation{AllocationID: ids.New(), TaskKey: "T-1", Owner: "alice", Role: store.RoleFeature,
		Lifecycle: store.Active, WorktreePath: wt, WorktreeKey: "w1", Branch: &branch, ExternalBindings: []string{}}
	f := &fixture{t: t, boot: boot,
		recs: &memRecords{repo: store.Repository{RepositoryID: ids.New()}, leases: map[string]store.Lease{},
			allocs: map[string]store.Allocation{a.AllocationID: a}},
		ev:    &fakeEvidence{live: map[proc.Identity]bool{}, groups: map[int][]int{}, carriers: map[string][]int{}},
		c:     gitrepo.Checkout{TopLevel: wt, CommonDir: common, Key: "w1", Branch: branch},
		a:     a,
		me:    proc.Holder{ClientID: "me", PID: 1000, BootID: boot, StartTicks: 5},
		other: proc.Holder{ClientID: "other", PID: 2000, BootID: boot, StartTicks: 7},
	}
	f.ev.live[f.me.Identity()] = true
	// The fixture's holders are fakes: the fake evidence says who runs.
	real := holderLive
	holderLive = func(h proc.Holder) bool { return f.ev.live[h.Identity()] }
	t.Cleanup(func() { holderLive = real })
	return f
}

func (f *fixture) acquire(req Request) (Grant, error) {
	if req.Holder.ClientID == "" {
		req.Holder = f.me
	}
	if req.Kind == "" {
		req.Kind = "agent"
	}
	scans := 0
	scan := func() (Evidence, error) { scans++; return f.ev, nil }
	start := func(Grant) (*store.ChildGroup, error) { return &store.ChildGroup{PID: 3000, StartTicks: 9}, nil }
	return f.acquireWith(req, scan, start)
}

// acquireWith runs Acquire's sequence on the in-memory records, each
// section a call.
func (f *fixture) acquireWith(req Request, scan func() (Evidence, error), start Start) (Grant, error) {
	section := func(fn func(Records) error) error { return fn(f.recs) }
	target := func(Records) (alloc.Target, error) {
		return alloc.Target{Path: f.c.TopLevel, Key: "w1", Allocation: f.recs.allocs[f.a.AllocationID]}, nil
	}
	return acquire(section, target, f.c.CommonDir, f.c, req, sync.OnceValues(scan), start)
}

func (f *fixture) plant(l store.Lease) store.Lease {
	l.LeaseID, l.RepositoryID, l.AllocationID = ids.New(), f.recs.repo.RepositoryID, f.a.AllocationID
	l.WorktreePath, l.Owner, l.Generation = f.c.TopLevel, "alice", 3
	l.AcquiredAt, l.RenewedAt = "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"
	f.recs.leases[f.a.AllocationID] = l
	a := f.recs.allocs[f.a.AllocationID]
	a.LeaseGeneration = 3
	f.recs.allocs[f.a.AllocationID] = a
	return l
}

func (f *fixture) bind(h proc.Holder, leaseID string) string {
	v, err := proc.RuntimeBinding{Holder: h, LeaseID: &leaseID, Kind: "agent"}.Encode()
	if err != nil {
		f.t.Fatal(err)
	}
	a := f.recs.allocs[f.a.AllocationID]
	a.ExternalBindings = append(a.ExternalBindings, v)
	f.recs.allocs[f.a.AllocationID] = a
	return v
}

func TestAcquireFresh(t *testing.T) {
	f := newFixture(t)
	g, err := f.acquire(Request{})
	if err != nil || g.Code != decision.WriterLeaseAcquired || !g.Owned || !g.Started {
		t.Fatalf("%+v %v", g, err)
	}
	l := f.recs.leases[f.a.AllocationID]
	if l.Generation != 1 || f.recs.allocs[f.a.AllocationID].LeaseGeneration != 1 || l.Child == nil || l.Child.PID != 3000 {
		t.Fatalf("lease %+v", l)
	}
	if b := f.recs.allocs[f.a.AllocationID].ExternalBindings; len(b) != 1 || b[0] != g.Binding {
		t.Fatalf("binding %v", b)
	}
	reason, locked, _ := gitrepo.ReadLock(f.c.CommonDir, "w1")
	if !locked || reason != Reason(l) {
		t.Fatalf("lock %q %v", reason, locked)
	}
	if n := len(f.recs.events); n != 1 || f.recs.events[0].Event != "writer_lease_acquired" {
		t.Fatalf("events %+v", f.recs.events)
	}
}

func TestAcquireRenewal(t *testing.T) {
	f := newFixture(t)
	past := "2020-01-01T00:00:00Z"
	l := f.plant(store.Lease{Holder: f.me, ExpiresAt: &past})
	_, err := f.acquire(Request{})
	decisiontest.Want(t, err, decision.WriterLeaseExpired)
	if f.recs.writes != 0 {
		t.Fatal("a refusal wrote")
	}
	g, err := f.acquire(Request{TTL: time.Minute})
	if err != nil || g.Code != decision.WriterLeaseRenewed || g.Owned {
		t.Fatalf("%+v %v", g, err)
	}
	got := f.recs.leases[f.a.AllocationID]
	if got.LeaseID != l.LeaseID || got.Generation != 3 || got.ExpiresAt == nil || *got.ExpiresAt == past || got.Child != nil {
		t.Fatalf("renewed lease %+v", got)
	}
	// The same names with another session are another holder.
	s := "s2"
	me2 := f.me
	me2.SessionID = &s
	f.ev.live[me2.Identity()] = true
	_, err = f.acquire(Request{Holder: me2, TTL: time.Minute})
	decisiontest.Want(t, err, decision.WriterLeaseHeld)
}

func TestAcquireDrift(t *testing.T) {
	f := newFixture(t)
	l := f.plant(store.Lease{Holder: f.me})
	l.Owner = "mallory"
	f.recs.leases[f.a.AllocationID] = l
	_, err := f.acquire(Request{})
	decisiontest.Want(t, err, decision.WriterLeaseMismatch)
}

func TestAcquireTakeover(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *fixture, l store.Lease)
		held  string // "" for a takeover, else a fragment of the refusal
	}{
		{"dead", func(f *fixture, l store.Lease) {}, ""},
		{"holder live", func(f *fixture, l store.Lease) { f.ev.live[f.other.Identity()] = true }, "holder is running"},
		{"holder group", func(f *fixture, l store.Lease) { f.ev.groups[f.other.PID] = []int{2001} }, "holder's process group"},
		{"child group", func(f *fixture, l store.Lease) { f.ev.groups[4000] = []int{4000} }, "child's process group"},
		{"carrier", func(f *fixture, l store.Lease) { f.ev.carriers["WT_LEASE_ID="+l.LeaseID] = []int{4100} }, "carry the lease"},
		{"path user", func(f *fixture, l store.Lease) {
			f.ev.users = []proc.Use{{PID: 4200, Command: "vim", Why: proc.WhyCwd, Path: f.c.TopLevel}}
		}, "pid 4200 (vim) uses the worktree"},
		{"path user is the new holder", func(f *fixture, l store.Lease) {
			f.ev.users = []proc.Use{{PID: f.me.PID, Command: "me", Why: proc.WhyCwd, Path: f.c.TopLevel}}
		}, ""},
		// Evidence that cannot be read is never evidence of death.
		{"boot id unreadable", func(f *fixture, l store.Lease) {
			f.ev.bootErr = errors.New("permission denied")
		}, "boot id cannot be read"},
		{"another boot's group", func(f *fixture, l store.Lease) {
			l.Holder.BootID = "00000000-0000-4000-8000-000000000000"
			f.recs.leases[f.a.AllocationID] = l
			f.ev.groups[f.other.PID] = []int{2001}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			l := f.plant(store.Lease{Holder: f.other, Child: &store.ChildGroup{PID: 4000, StartTicks: 8}})
			tc.setup(f, l)
			g, err := f.acquire(Request{})
			if tc.held != "" {
				decisiontest.Want(t, err, decision.WriterLeaseHeld)
				if !strings.Contains(err.Error(), tc.held) {
					t.Fatalf("refusal %q lacks %q", err, tc.held)
				}
				return
			}
			if err != nil || g.Code != decision.WriterLeaseTakenOver || g.Previous == nil || g.Previous.LeaseID != l.LeaseID {
				t.Fatalf("%+v %v", g, err)
			}
			if got := f.recs.leases[f.a.AllocationID]; got.Generation != 4 || got.Holder != f.me {
				t.Fatalf("new lease %+v", got)
			}
		})
	}
}

func TestAcquireBindings(t *testing.T) {
	t.Run("stale binding cleared", func(t *testing.T) {
		f := newFixture(t)
		stale := f.bind(f.other, ids.New())
		g, err := f.acquire(Request{})
		if err != nil || len(g.Cleared) != 1 || g.Cleared[0] != stale {
			t.Fatalf("%+v %v", g, err)
		}
		for _, b := range f.recs.allocs[f.a.AllocationID].ExternalBindings {
			if b == stale {
				t.Fatal("stale binding kept")
			}
		}
		if f.recs.events[0].Event != "runtime_binding_cleared" {
			t.Fatalf("events %+v", f.recs.events)
		}
	})
	t.Run("a takeover clears the dead lease's binding, even with the same names", func(t *testing.T) {
		f := newFixture(t)
		prev := f.me
		prev.PID, prev.StartTicks = 2100, 11 // the caller's client, another (dead) process
		l := f.plant(store.Lease{Holder: prev})
		old := f.bind(prev, l.LeaseID)
		g, err := f.acquire(Request{})
		if err != nil || g.Code != decision.WriterLeaseTakenOver || len(g.Cleared) != 1 || g.Cleared[0] != old {
			t.Fatalf("%+v %v", g, err)
		}
		if b := f.recs.allocs[f.a.AllocationID].ExternalBindings; len(b) != 1 || b[0] != g.Binding {
			t.Fatalf("bindings after the takeover: %v", b)
		}
	})
	t.Run("live binding of a lease not written yet: a grant in progress", func(t *testing.T) {
		// In fleet mode a wt-exec asks etcd between writing its binding
		// and its lease: a contender then is told the worktree is held, so
		// that --wait waits, not EXTERNAL_BINDING.
		f := newFixture(t)
		f.bind(f.other, ids.New())
		f.ev.live[f.other.Identity()] = true
		_, err := f.acquire(Request{})
		decisiontest.Want(t, err, decision.WriterLeaseHeld)
	})
	t.Run("carrier of a lease never written", func(t *testing.T) {
		f := newFixture(t)
		id := ids.New()
		f.bind(f.other, id)
		f.ev.carriers["WT_LEASE_ID="+id] = []int{4300}
		_, err := f.acquire(Request{})
		decisiontest.Want(t, err, decision.WriterLeaseHeld)
	})
	t.Run("live binding of the current lease", func(t *testing.T) {
		f := newFixture(t)
		l := f.plant(store.Lease{Holder: f.other})
		f.bind(f.other, l.LeaseID)
		f.ev.live[f.other.Identity()] = true
		_, err := f.acquire(Request{})
		decisiontest.Want(t, err, decision.WriterLeaseHeld)
	})
	t.Run("opaque binding", func(t *testing.T) {
		f := newFixture(t)
		a := f.recs.allocs[f.a.AllocationID]
		a.ExternalBindings = []string{"ci:job-17"}
		f.recs.allocs[f.a.AllocationID] = a
		_, err := f.acquire(Request{})
		decisiontest.Want(t, err, decision.ExternalBinding)
	})
	t.Run("malformed runtime binding", func(t *testing.T) {
		f := newFixture(t)
		a := f.recs.allocs[f.a.AllocationID]
		a.ExternalBindings = []string{proc.RuntimeBindingPrefix + `{"holder":{}}`}
		f.recs.allocs[f.a.AllocationID] = a
		_, err := f.acquire(Request{})
		decisiontest.Want(t, err, decision.InvalidRuntimeBinding)
	})
}

func TestAcquireTargets(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *fixture)
		code  string
	}{
		{"audit", func(f *fixture) {
			a := f.recs.allocs[f.a.AllocationID]
			a.Role = store.RoleAudit
			f.recs.allocs[a.AllocationID] = a
		}, decision.AuditReadOnly},
		{"detached", func(f *fixture) { f.c.Detached = true }, decision.HeadOffTaskBranch},
		{"other branch", func(f *fixture) { f.c.Branch = "side" }, decision.HeadOffTaskBranch},
		{"moved", func(f *fixture) { f.c.TopLevel = filepath.Dir(f.c.TopLevel) }, decision.InvalidTarget},
		{"foreign lock", func(f *fixture) {
			os.WriteFile(gitrepo.LockFile(f.c.CommonDir, "w1"), []byte("moving disks\n"), 0o644)
		}, decision.InvalidTarget},
		{"retained", func(f *fixture) {
			a := f.recs.allocs[f.a.AllocationID]
			a.Lifecycle = store.Retained
			f.recs.allocs[a.AllocationID] = a
		}, decision.InvalidLifecycle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.setup(f)
			_, err := f.acquire(Request{})
			decisiontest.Want(t, err, tc.code)
			if f.recs.writes != 0 || len(f.recs.events) != 0 {
				t.Fatal("a refusal wrote")
			}
		})
	}
	t.Run("owner", func(t *testing.T) {
		f := newFixture(t)
		_, err := f.acquire(Request{Owner: "mallory"})
		decisiontest.Want(t, err, decision.OwnerMismatch)
		if _, err := f.acquire(Request{Owner: "alice"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("allocation", func(t *testing.T) {
		// wt-exec --task names its task's allocation: a worktree that
		// another allocation now holds at the same path is refused.
		f := newFixture(t)
		_, err := f.acquire(Request{Allocation: ids.New()})
		decisiontest.Want(t, err, decision.UnregisteredWorktree)
		if f.recs.writes != 0 || len(f.recs.events) != 0 {
			t.Fatal("a refusal wrote")
		}
		if _, err := f.acquire(Request{Allocation: f.a.AllocationID}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("not applicable", func(t *testing.T) {
		f := newFixture(t)
		a := f.recs.allocs[f.a.AllocationID]
		a.Role = store.RoleIntegration
		f.recs.allocs[a.AllocationID] = a
		g, err := f.acquire(Request{})
		if err != nil || g.Code != decision.NotApplicable || g.Applicable || !g.Started || f.recs.writes != 0 {
			t.Fatalf("%+v %v", g, err)
		}
	})
	t.Run("a stale wt lock is replaced", func(t *testing.T) {
		f := newFixture(t)
		old := reasonPrefix + ids.New() + " client x pid 9"
		os.WriteFile(gitrepo.LockFile(f.c.CommonDir, "w1"), []byte(old+"\n"), 0o644)
		g, err := f.acquire(Request{})
		if err != nil {
			t.Fatal(err)
		}
		if reason, _, _ := gitrepo.ReadLock(f.c.CommonDir, "w1"); reason != Reason(g.Lease) {
			t.Fatalf("lock %q", reason)
		}
	})
}

func TestAcquireStartFails(t *testing.T) {
	f := newFixture(t)
	boom := errors.New("boom")
	g, err := f.acquireWith(Request{Holder: f.me, Kind: "agent"},
		func() (Evidence, error) { return f.ev, nil }, func(Grant) (*store.ChildGroup, error) { return nil, boom })
	if !errors.Is(err, boom) || g.Started {
		t.Fatalf("%+v %v", g, err)
	}
	if _, ok := f.recs.leases[f.a.AllocationID]; ok {
		t.Fatal("the lease of a child that never started is left")
	}
	// The reservation is given back: no binding, git's lock as it was.
	if b := f.recs.allocs[f.a.AllocationID].ExternalBindings; len(b) != 0 {
		t.Fatalf("the binding of a grant whose child never started is left: %v", b)
	}
	if _, locked, _ := gitrepo.ReadLock(f.c.CommonDir, "w1"); locked {
		t.Fatal("git's lock is left by a grant whose child never started")
	}
}

func TestValidate(t *testing.T) {
	h := proc.Holder{ClientID: "ok", PID: 1, BootID: "b", StartTicks: 1}
	for _, tc := range []struct {
		req  Request
		code string
	}{
		{Request{Holder: proc.Holder{ClientID: "-x"}, Kind: "agent"}, decision.InvalidHolder},
		{Request{Holder: h, Kind: "agent", TTL: -time.Second}, decision.InvalidHolder},
		{Request{Holder: h, Kind: "daemon"}, decision.InvalidRuntimeBinding},
	} {
		decisiontest.Want(t, validate(tc.req), tc.code)
	}
	if err := validate(Request{Holder: h, Kind: "test"}); err != nil {
		t.Fatal(err)
	}
}

// TestAcquireStartsOutsideTheSections: the child starts (and the fleet is
// asked) with the store's lock free, between the section that reserves
// the grant and the one that writes its lease.
func TestAcquireStartsOutsideTheSections(t *testing.T) {
	f := newFixture(t)
	inSection, sections := false, 0
	section := func(fn func(Records) error) error {
		inSection = true
		sections++
		defer func() { inSection = false }()
		return fn(f.recs)
	}
	target := func(Records) (alloc.Target, error) {
		return alloc.Target{Path: f.c.TopLevel, Key: "w1", Allocation: f.recs.allocs[f.a.AllocationID]}, nil
	}
	start := func(g Grant) (*store.ChildGroup, error) {
		if inSection {
			t.Error("the child started inside an exclusive section")
		}
		// The lease is there for the child's first commit; its group is
		// added once it runs.
		if l, ok := f.recs.leases[f.a.AllocationID]; !ok || l.Child != nil {
			t.Errorf("at the child's start the lease is %+v (written: %v)", l, ok)
		}
		if b := f.recs.allocs[f.a.AllocationID].ExternalBindings; len(b) != 1 {
			t.Errorf("the child starts before its runtime binding is written: %v", b)
		}
		return &store.ChildGroup{PID: 3000, StartTicks: 9}, nil
	}
	g, err := acquire(section, target, f.c.CommonDir, f.c, Request{Holder: f.me, Kind: "agent"},
		func() (Evidence, error) { return f.ev, nil }, start)
	if err != nil || !g.Started || g.Code != decision.WriterLeaseAcquired {
		t.Fatalf("%+v %v", g, err)
	}
	if l := f.recs.leases[f.a.AllocationID]; l.Child == nil || l.Child.PID != 3000 || sections != 2 {
		t.Fatalf("lease %+v after %d sections", l, sections)
	}
}

func (f *fixture) reserve(to string, ttl time.Duration) {
	f.recs.PutHandoff(&store.Handoff{AllocationID: f.a.AllocationID, WorktreePath: f.c.TopLevel, ToClient: to,
		FromLeaseID: ids.New(), By: f.other.Identity(), ByClient: f.other.ClientID,
		CreatedAt: store.Stamp(time.Now()), ExpiresAt: store.Stamp(time.Now().Add(ttl))})
}

// TestHandoff: a reservation refuses every other client and is consumed by
// the one it names, with provenance; past its TTL it counts for nothing
// and is removed; a grant whose child never starts gives it back.
func TestHandoff(t *testing.T) {
	f := newFixture(t)
	f.reserve("worker", time.Minute)
	_, err := f.acquire(Request{})
	decisiontest.Want(t, err, decision.WriterLeaseReserved)
	if _, ok := f.recs.handoffs[f.a.AllocationID]; !ok {
		t.Fatal("a refused client consumed the reservation")
	}
	worker := proc.Holder{ClientID: "worker", PID: 4000, BootID: f.boot, StartTicks: 11}
	f.ev.live[worker.Identity()] = true
	boom := errors.New("boom")
	_, err = f.acquireWith(Request{Holder: worker, Kind: "agent"}, func() (Evidence, error) { return f.ev, nil },
		func(Grant) (*store.ChildGroup, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if _, ok := f.recs.handoffs[f.a.AllocationID]; !ok {
		t.Fatal("a grant whose child never started kept the reservation it consumed")
	}
	g, err := f.acquire(Request{Holder: worker})
	if err != nil || g.Code != decision.WriterLeaseAcquired {
		t.Fatalf("%+v %v", g, err)
	}
	if _, ok := f.recs.handoffs[f.a.AllocationID]; ok {
		t.Fatal("the reservation outlived its consumption")
	}
	if p := f.recs.leases[f.a.AllocationID].Provenance; p == nil || p.How != store.ProvenanceHandoff || p.ByClient != "other" {
		t.Fatalf("provenance %+v", p)
	}

	f2 := newFixture(t)
	f2.reserve("worker", -time.Second)
	if g, err := f2.acquire(Request{}); err != nil || g.Code != decision.WriterLeaseAcquired {
		t.Fatalf("an expired reservation still refuses: %+v %v", g, err)
	}
	if _, ok := f2.recs.handoffs[f2.a.AllocationID]; ok {
		t.Fatal("an expired reservation was not removed")
	}
}

// TestExpectations: a grant expecting another generation or HEAD writes
// nothing; --require-owner wants the owner named.
func TestExpectations(t *testing.T) {
	f := newFixture(t)
	n := 4
	_, err := f.acquire(Request{ExpectGeneration: &n})
	decisiontest.Want(t, err, decision.WriterLeaseMismatch)
	os.WriteFile(filepath.Join(f.c.CommonDir, "worktrees", "w1", "HEAD"), []byte("1111111111111111111111111111111111111111\n"), 0o644)
	f.c.GitDir = filepath.Join(f.c.CommonDir, "worktrees", "w1")
	_, err = f.acquire(Request{ExpectHead: "2222222222222222222222222222222222222222"})
	decisiontest.Want(t, err, decision.StaleHead)
	if f.recs.writes != 0 {
		t.Fatal("a refused expectation wrote")
	}
	zero := 0
	if g, err := f.acquire(Request{ExpectGeneration: &zero, ExpectHead: "1111111111111111111111111111111111111111"}); err != nil || g.Lease.Generation != 1 {
		t.Fatalf("%+v %v", g, err)
	}
}

// TestHolderDescribedAgain: a holder resolved before the lock that is not
// the same live process inside it is refused, and nothing is written.
func TestHolderDescribedAgain(t *testing.T) {
	f := newFixture(t)
	delete(f.ev.live, f.me.Identity())
	_, err := f.acquire(Request{})
	decisiontest.Want(t, err, decision.InvalidHolder)
	if !strings.Contains(err.Error(), "holder changed during acquisition") || f.recs.writes != 0 {
		t.Fatalf("%v (%d writes)", err, f.recs.writes)
	}
}
