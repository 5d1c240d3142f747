package maint

import (
	"strings"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// taskAudit is the audit of branch in res.
func taskAudit(t *testing.T, res AuditResult, branch string) TaskAudit {
	t.Helper()
	for _, ta := range res.Tasks {
		if ta.Branch == branch {
			return ta
		}
	}
	t.Fatalf("no audit of %s in %+v", branch, res.Tasks)
	return TaskAudit{}
}

// TestAudit: a move the gate never saw (here every commit: no hooks are
// installed) is UNGATED_REF_MOVE, with the command that undoes it; a move
// the ledger records is counted under its lease; a task branch deleted is
// TASK_BRANCH_MISSING; the publication branch is audited from its
// baseline; what audit showed is marked (MarkAudit, LastAudit), and an
// audit since the mark lists only what came after.
func TestAudit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a1 := f.allocate("T-1", "alice", "", "w1", "")
	a2 := f.allocate("T-2", "alice", "", "w2", "")
	a3 := f.allocate("T-3", "alice", "", "w3", "")
	f.allocate("R-1", "rev", "audit", "r1", "") // no branch: not audited

	res, err := Audit(f.r, time.Time{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Code != decision.AuditShown || res.Ungated != 0 || res.Missing != 0 || len(res.Tasks) != 4 {
		t.Fatalf("fresh allocations: %+v", res)
	}
	if p := res.Tasks[0]; !p.Publication || p.Branch != "main" || p.Tip != f.ref("main") {
		t.Fatalf("the publication branch first: %+v", p)
	}
	if ta := taskAudit(t, res, "wt/T-1"); ta.TaskKey != "T-1" || ta.Recorded != a1.BaseCommit || ta.Tip != a1.BaseCommit || ta.Unseen != "" {
		t.Fatalf("a fresh task: %+v", ta)
	}

	// T-1: a commit no gate saw.
	old := f.ref("wt/T-1")
	ungated := f.commit(f.path("w1"), "ungated")
	// T-2: a commit the gate approved under lease L (its ledger line).
	approved := f.commit(f.path("w2"), "approved")
	if err := store.AppendLedger(f.r.Store.Root(), a2.AllocationID, store.LedgerLine{Via: store.ViaGate,
		Ref: "refs/heads/wt/T-2", Old: a2.BaseCommit, New: approved, LeaseID: "L", Generation: 1}); err != nil {
		t.Fatal(err)
	}
	// T-3: its branch deleted.
	f.git(f.main, "update-ref", "-d", "refs/heads/wt/T-3")
	// main: a commit on the publication branch, which no gate saw.
	f.commit(f.main, "on main")

	res, err = Audit(f.r, time.Time{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ungated != 2 || res.Missing != 1 {
		t.Fatalf("ungated %d, missing %d: %+v", res.Ungated, res.Missing, res.Tasks)
	}
	t1 := taskAudit(t, res, "wt/T-1")
	if len(t1.Ungated) != 1 {
		t.Fatalf("T-1: %+v", t1)
	}
	m := t1.Ungated[0]
	if m.Code != decision.UngatedRefMove || m.Old != old || m.New != ungated || m.Time == "" || !m.NoLease || m.Holder != "" ||
		!strings.Contains(m.Restore, "update-ref refs/wt/ungated/T-1/1 "+ungated) || !strings.HasSuffix(m.Restore, "git reset -q --keep "+old) {
		t.Fatalf("T-1's move: %+v", m)
	}
	if t2 := taskAudit(t, res, "wt/T-2"); len(t2.Ungated) != 0 || t2.ByLease["L"] != 1 || t2.Recorded != approved {
		t.Fatalf("T-2: %+v", t2)
	}
	t3 := taskAudit(t, res, "wt/T-3")
	if t3.Missing == nil || t3.Missing.Code != decision.TaskBranchMissing || t3.Missing.Recorded != a3.BaseCommit ||
		!strings.Contains(t3.Missing.Restore, a3.BaseCommit) {
		t.Fatalf("T-3: %+v", t3)
	}
	if p := taskAudit(t, res, "main"); len(p.Ungated) != 1 || p.Missing != nil || p.Ungated[0].Restore != "" {
		t.Fatalf("main: %+v", p)
	}
	if _, ok := res.Tasks[0].ByLease[""]; ok {
		t.Fatal("the baseline counts as a move")
	}

	// Since after every move: no reflog entry is listed, but a tip the
	// ledger does not account for still is (with no time), and the
	// missing branch.
	later, err := Audit(f.r, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), nil)
	if err != nil {
		t.Fatal(err)
	}
	if t1 := taskAudit(t, later, "wt/T-1"); later.Ungated != 2 || later.Missing != 1 || t1.Ungated[0].Time != "" || t1.Ungated[0].New != ungated {
		t.Fatalf("since later: %+v", later)
	}

	// What audit showed is marked; the next moves alone count.
	if len(LastAudit(f.r.Git.CommonDir)) != 0 {
		t.Fatal("a mark before any audit")
	}
	MarkAudit(f.r.Git.CommonDir, res)
	seen := LastAudit(f.r.Git.CommonDir)
	if seen["refs/heads/wt/T-1"].Tip != ungated || seen["refs/heads/wt/T-1"].Entries == 0 {
		t.Fatalf("the mark: %+v", seen)
	}
	again, err := Audit(f.r, time.Time{}, seen)
	if err != nil {
		t.Fatal(err)
	}
	if again.Ungated != 0 {
		t.Fatalf("moves shown already count again: %+v", again.Tasks)
	}
	next := f.commit(f.path("w1"), "after the audit")
	again, err = Audit(f.r, time.Time{}, seen)
	if err != nil {
		t.Fatal(err)
	}
	if t1 := taskAudit(t, again, "wt/T-1"); again.Ungated != 1 || t1.Ungated[0].New != next || t1.Ungated[0].Old != ungated {
		t.Fatalf("the move after the audit: %+v", again.Tasks)
	}
}

// TestAuditTipWithoutReflog: a tip the ledger does not account for is a
// finding even when the reflog does not show the move (written directly).
func TestAuditTipWithoutReflog(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.allocate("T-1", "alice", "", "w1", "")
	moved := f.commit(f.path("w1"), "work")
	// The reflog loses its entry.
	f.git(f.main, "reflog", "expire", "--expire=all", "--all")
	res, err := Audit(f.r, time.Time{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t1 := taskAudit(t, res, "wt/T-1")
	if len(t1.Ungated) != 1 || t1.Ungated[0].Old != a.BaseCommit || t1.Ungated[0].New != moved || t1.Ungated[0].Time != "" ||
		t1.Ungated[0].NoLease || !strings.Contains(t1.Ungated[0].Message, "its reflog does not show how") || t1.Ungated[0].Restore == "" {
		t.Fatalf("T-1: %+v", t1)
	}
	// Marked as shown, the same tip is not reported again.
	MarkAudit(f.r.Git.CommonDir, res)
	again, err := Audit(f.r, time.Time{}, LastAudit(f.r.Git.CommonDir))
	if err != nil {
		t.Fatal(err)
	}
	if again.Ungated != 0 {
		t.Fatalf("a tip shown already: %+v", again.Tasks)
	}
}

// TestLeaseAt: a move is put to the lease live over its whole second;
// one that began or ended within that second is named with that said;
// another allocation's lease, or none, is no lease.
func TestLeaseAt(t *testing.T) {
	t.Parallel()
	h := proc.Holder{ClientID: "agent", PID: 42}
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	leases := []lease.Entry{
		{LeaseID: "L1", AllocationID: "A", Holder: h, Generation: 1, From: "2026-01-01T10:00:00Z", To: "2026-01-01T11:00:00Z"},
		{LeaseID: "L2", AllocationID: "A", Holder: h, Generation: 2, From: "2026-01-01T11:00:00.5Z"},
		{LeaseID: "X", AllocationID: "B", Holder: h, Generation: 1, From: "2026-01-01T00:00:00Z"},
		{LeaseID: "bad", AllocationID: "A", Holder: h, From: "not a time"},
		// Expired at 14:00:00.5 (recorded by lease expire at 15:00), and a
		// current one past its expiry: neither is live after it.
		{LeaseID: "L3", AllocationID: "C", Holder: h, Generation: 1, From: "2026-01-01T13:00:00Z", To: "2026-01-01T15:00:00Z", ExpiresAt: "2026-01-01T14:00:00.5Z"},
		{LeaseID: "L4", AllocationID: "C", Holder: h, Generation: 2, From: "2026-01-01T16:00:00Z", ExpiresAt: "2026-01-01T17:00:00Z"},
	}
	holder := leaseAt(leases, "A")
	for _, c := range []struct {
		when   string
		want   string // a part of the answer
		ok     bool
		unsure bool
	}{
		{"2026-01-01T10:30:00Z", "lease L1, generation 1", true, false},
		{"2026-01-01T10:59:59.9Z", "lease L1", true, false},
		{"2026-01-01T11:00:00.7Z", "lease L2", true, true},
		{"2026-01-01T12:00:00Z", "lease L2, generation 2", true, false},
		{"2026-01-01T09:00:00Z", "", false, false},
	} {
		got, ok := holder(at(c.when))
		if ok != c.ok || !strings.Contains(got, c.want) || strings.Contains(got, "within the second") != c.unsure {
			t.Errorf("%s: %q %t, want %q %t (unsure %t)", c.when, got, ok, c.want, c.ok, c.unsure)
		}
	}
	holder = leaseAt(leases, "C")
	for _, c := range []struct {
		when   string
		want   string
		ok     bool
		unsure bool
	}{
		{"2026-01-01T13:30:00Z", "lease L3, generation 1", true, false},
		{"2026-01-01T14:00:00.7Z", "lease L3", true, true},
		{"2026-01-01T14:30:00Z", "", false, false},
		{"2026-01-01T16:30:00Z", "lease L4, generation 2", true, false},
		{"2026-01-01T17:30:00Z", "", false, false},
	} {
		got, ok := holder(at(c.when))
		if ok != c.ok || !strings.Contains(got, c.want) || strings.Contains(got, "within the second") != c.unsure {
			t.Errorf("%s: %q %t, want %q %t (unsure %t)", c.when, got, ok, c.want, c.ok, c.unsure)
		}
	}
}

// TestBaselineAt: entries before a baseline's second are left out; of its
// own second, those it counted.
func TestBaselineAt(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 1, 1, 10, 0, 0, 500, time.UTC)
	e := func(sec int) gitrepo.ReflogEntry {
		return gitrepo.ReflogEntry{When: base.Truncate(time.Second).Add(time.Duration(sec) * time.Second)}
	}
	counted := baselineAt(base, 2)
	unknown := baselineAt(base, -1)
	for _, c := range []struct {
		i                int
		e                gitrepo.ReflogEntry
		counted, unknown bool
	}{
		{0, e(-1), true, true},
		{1, e(0), true, true},
		{2, e(0), false, true},
		{3, e(1), false, false},
	} {
		if got := counted(c.i, c.e); got != c.counted {
			t.Errorf("entry %d, counted 2: %t", c.i, got)
		}
		if got := unknown(c.i, c.e); got != c.unknown {
			t.Errorf("entry %d, count unknown: %t", c.i, got)
		}
	}
}
