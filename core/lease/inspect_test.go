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

var past = "2020-01-01T00:00:00Z"

// TestInspectSafeNextAction is the decision table of lease inspect: the
// caller's own lease or another's, its holder running, exited with
// something left, or exited with nothing left, expired, its worktree
// gone or moved.
func TestInspectSafeNextAction(t *testing.T) {
	t.Parallel()
	shared := sharedRepo(t)
	for i, tc := range []struct {
		name   string
		holder func(t *testing.T) proc.Holder
		change func(t *testing.T, l *store.Lease)
		setup  func(t *testing.T, g *gov)
		caller string
		action string
		block  bool
		next   string // a fragment of Next
	}{
		{name: "own, running", holder: self, caller: "test", action: OwnerResume},
		{name: "own, running, expired", holder: self, change: expired, caller: "test", action: OwnerResume, next: "--ttl DURATION"},
		{name: "own, exited, its group left", holder: leader("test"), caller: "test", action: OwnerResume, block: true, next: "wt-admin ps"},
		{name: "own, exited, nothing left", holder: gone("test"), caller: "test", action: ReleaseOwned, next: "lease release"},
		{name: "foreign, running", holder: self, caller: "other", action: WaitForeignActive, block: true, next: "wt-admin ps"},
		{name: "foreign, orphaned", holder: leader("gone"), caller: "other", action: WaitForeignActive, block: true, next: "wt-admin ps"},
		{name: "foreign, exited, expired", holder: gone("gone"), change: expired, caller: "other", action: ReclaimExpired, next: "lease expire"},
		{name: "foreign, exited", holder: gone("gone"), caller: "other", action: AbandonAllowed, next: "lease release"},
		{name: "foreign, worktree gone", holder: gone("gone"), caller: "other", action: AbandonAllowed, next: "lease abandon",
			setup: func(t *testing.T, g *gov) {
				if err := os.RemoveAll(g.a.WorktreePath); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "the lease records another path", holder: gone("gone"), caller: "other", action: InspectOnly, block: true,
			change: func(t *testing.T, l *store.Lease) { l.WorktreePath += "-moved" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := onRepo(t, shared, i+1)
			l := g.plant(tc.holder(t), func(l *store.Lease) {
				if tc.change != nil {
					tc.change(t, l)
				}
			})
			if tc.setup != nil {
				tc.setup(t, g)
			}
			before := g.snap()
			in, err := Inspect(g.R, g.a.WorktreePath, Caller{ClientID: tc.caller}, "")
			if err != nil {
				t.Fatal(err)
			}
			if in.SafeNextAction != tc.action || in.Block != tc.block || !strings.Contains(in.Next, tc.next) || len(in.Reasons) == 0 {
				t.Fatalf("inspection %+v", in)
			}
			if in.Lease.LeaseID != l.LeaseID || in.TaskKey != g.a.TaskKey || in.AllocationID != g.a.AllocationID {
				t.Fatalf("inspection names %+v", in)
			}
			g.unchanged(before)
		})
	}
}

// self, gone and leader make a lease's holder: this process, a process
// that exited, one that exited leaving its group behind.
func self(t *testing.T) proc.Holder { return wttest.Self(t) }

func gone(client string) func(t *testing.T) proc.Holder {
	return func(t *testing.T) proc.Holder { return exited(t, client) }
}

func leader(client string) func(t *testing.T) proc.Holder {
	return func(t *testing.T) proc.Holder { return exitedLeader(t, client) }
}

func expired(_ *testing.T, l *store.Lease) { l.ExpiresAt = &past }

// TestInspectPromptAndHandoff: a lease id the caller was told of that is
// not the worktree's is stale; a handoff to the caller on a dead lease
// says to consume it, one to another client is mentioned.
func TestInspectPromptAndHandoff(t *testing.T) {
	t.Parallel()
	g := newGov(t)
	l := g.plant(exited(t, "gone"), nil)
	in, err := Inspect(g.R, g.a.WorktreePath, Caller{ClientID: "worker"}, ids.New())
	if err != nil || in.SafeNextAction != StalePromptLease || !in.Block {
		t.Fatalf("stale prompt %+v %v", in, err)
	}
	if in, err := Inspect(g.R, g.a.WorktreePath, Caller{ClientID: "worker"}, l.LeaseID); err != nil || in.SafeNextAction != AbandonAllowed {
		t.Fatalf("the current lease named %+v %v", in, err)
	}
	if _, err := Handoff(g.R, g.a.WorktreePath, "worker", time.Hour, true, Expect{LeaseID: l.LeaseID}); err != nil {
		t.Fatal(err)
	}
	in, err = Inspect(g.R, g.a.WorktreePath, Caller{ClientID: "worker"}, "")
	if err != nil || in.SafeNextAction != ConsumeCrossRoleHandoff || in.Block || !strings.Contains(in.Next, "--client-id worker") || in.Handoff == nil {
		t.Fatalf("handoff to the caller %+v %v", in, err)
	}
	in, err = Inspect(g.R, g.a.WorktreePath, Caller{ClientID: "other"}, "")
	if err != nil || in.SafeNextAction != AbandonAllowed || !strings.Contains(strings.Join(in.Reasons, "\n"), "reserved for client worker") {
		t.Fatalf("handoff to another %+v %v", in, err)
	}
	wttest.WantCode(t, func() error { _, err := Inspect(g.R, g.a.WorktreePath, Caller{}, "NOT-AN-ID"); return err }(), decision.Usage)
}

// TestInspectWithoutALease: with no lease the answer is still given for
// a prompt's lease (it ended), a handoff, and git's lock naming a lease
// that is not there; otherwise NO_WRITER_LEASE.
func TestInspectWithoutALease(t *testing.T) {
	t.Parallel()
	shared := sharedRepo(t)
	for i, tc := range []struct {
		name    string
		setup   func(t *testing.T, g *gov)
		leaseID string
		action  string
		block   bool
	}{
		{name: "nothing", action: ""},
		{name: "a prompt's lease", leaseID: ids.New(), action: StalePromptLease, block: true},
		{name: "a handoff to the caller", action: ConsumeCrossRoleHandoff, setup: func(t *testing.T, g *gov) { g.reserve(t, "me") }},
		{name: "a handoff to another", action: WaitForeignActive, block: true, setup: func(t *testing.T, g *gov) { g.reserve(t, "worker") }},
		{name: "an orphan git lock", action: FileOrCommentNotAuthoritative, setup: func(t *testing.T, g *gov) {
			if err := gitrepo.CreateLock(g.R.Git.CommonDir, g.a.WorktreeKey, reasonPrefix+ids.New()+" client x pid 9"); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a foreign git lock", action: "", setup: func(t *testing.T, g *gov) {
			if err := gitrepo.CreateLock(g.R.Git.CommonDir, g.a.WorktreeKey, "moving disks"); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := onRepo(t, shared, i+1)
			if tc.setup != nil {
				tc.setup(t, g)
			}
			in, err := Inspect(g.R, g.a.WorktreePath, Caller{ClientID: "me"}, tc.leaseID)
			if tc.action == "" {
				wttest.WantCode(t, err, decision.NoWriterLease)
				return
			}
			if err != nil || in.SafeNextAction != tc.action || in.Block != tc.block || in.Freshness != "none" {
				t.Fatalf("%+v %v", in, err)
			}
		})
	}
}

// reserve makes an operator's handoff of the worktree to client to.
func (g *gov) reserve(t *testing.T, to string) {
	t.Helper()
	if _, err := Handoff(g.R, g.a.WorktreePath, to, time.Hour, true, Expect{}); err != nil {
		t.Fatal(err)
	}
}

// TestOrphanLockAndAGrantInProgress: git's lock naming a lease with no
// lease file is an orphan, unless a running wt-exec's binding names that
// lease (a grant between its two sections); a lease of the worktree's
// own, or no wt reason, is no orphan.
func TestOrphanLockAndAGrantInProgress(t *testing.T) {
	t.Parallel()
	g := newGov(t)
	id := ids.New()
	reason := reasonPrefix + id + " client test pid 1"
	if err := gitrepo.CreateLock(g.R.Git.CommonDir, g.a.WorktreeKey, reason); err != nil {
		t.Fatal(err)
	}
	a := g.alloc()
	if got := OrphanLock(g.R.Git.CommonDir, a); got != reason {
		t.Fatalf("orphan lock %q", got)
	}
	for _, tc := range []struct {
		h      proc.Holder
		orphan bool
	}{{wttest.Self(t), false}, {exited(t, "gone"), true}} {
		b, err := proc.RuntimeBinding{Holder: tc.h, LeaseID: &id, Kind: "agent"}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		a.ExternalBindings = []string{b}
		if got := OrphanLock(g.R.Git.CommonDir, a); (got != "") != tc.orphan {
			t.Fatalf("binding of %+v: orphan lock %q", tc.h, got)
		}
	}
	if err := gitrepo.ReplaceLock(g.R.Git.CommonDir, g.a.WorktreeKey, "moving disks"); err != nil {
		t.Fatal(err)
	}
	if got := OrphanLock(g.R.Git.CommonDir, g.alloc()); got != "" {
		t.Fatalf("a foreign lock is an orphan: %q", got)
	}
}

// TestAssess is the proof doctor reads: the caller's own lease, running,
// and a stranger's that exited, its worktree gone.
func TestAssess(t *testing.T) {
	t.Parallel()
	g := newGov(t)
	ev, err := proc.NewScan()
	if err != nil {
		t.Fatal(err)
	}
	s := "s1"
	me := wttest.Self(t)
	me.SessionID = &s
	l := store.Lease{LeaseID: ids.New(), WorktreePath: g.a.WorktreePath, Holder: me, ExpiresAt: &past}
	p := Assess(ev, l, time.Now(), Caller{ClientID: "test", SessionID: &s})
	if !p.HolderLive || p.DeadProcess || !p.SameOwner || !p.Expired || p.NoLiveMutationRisk || p.Risk == "" {
		t.Fatalf("own running lease %+v", p)
	}
	// Another session of the same client is not the owner.
	if p := Assess(ev, l, time.Now(), Caller{ClientID: "test"}); p.SameOwner {
		t.Fatalf("another session owns it: %+v", p)
	}
	l.Holder, l.ExpiresAt, l.WorktreePath = exited(t, "gone"), nil, g.a.WorktreePath+"-removed"
	p = Assess(ev, l, time.Now(), Caller{ClientID: "test"})
	if p.HolderLive || !p.DeadProcess || !p.MissingWorktree || p.Expired || !p.NoLiveMutationRisk || p.SameOwner {
		t.Fatalf("a dead stranger's lease %+v", p)
	}
	if ok, _ := p.sufficient(); !ok {
		t.Fatal("a dead holder's lease on a missing worktree cannot be abandoned")
	}
}

// TestValidExpectAndLeaseID: an operator's expectations are checked
// before anything is read.
func TestValidExpectAndLeaseID(t *testing.T) {
	neg, zero := -1, 0
	for _, tc := range []struct {
		e    Expect
		code string
	}{
		{Expect{}, ""},
		{Expect{LeaseID: ids.New(), Generation: &zero, Head: strings.Repeat("a", 40)}, ""},
		{Expect{LeaseID: strings.ToUpper(ids.New())}, decision.Usage},
		{Expect{LeaseID: "lease-1"}, decision.Usage},
		{Expect{Generation: &neg}, decision.Usage},
		{Expect{Head: "abc123"}, decision.Usage},
	} {
		if got := decision.CodeOf(ValidExpect(tc.e)); got != tc.code {
			t.Errorf("%+v: %q, want %q", tc.e, got, tc.code)
		}
	}
}
