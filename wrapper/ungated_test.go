package wrapper

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/store"
)

// grantOf is an owned grant of the fixture's allocation under lease L1.
func grantOf(f fixture) lease.Grant {
	return lease.Grant{Applicable: true, Owned: true, Role: store.RoleFeature, Allocation: f.a,
		Lease: store.Lease{LeaseID: "L1", AllocationID: f.a.AllocationID, Generation: 1, AcquiredAt: "2026-01-02T03:04:05Z"}}
}

// events are the lines of the store's events.jsonl that hold name.
func events(t *testing.T, f fixture, name string) []string {
	b, _ := os.ReadFile(filepath.Join(f.repo.Store.Root(), "events.jsonl"))
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"`+name+`"`) {
			out = append(out, l)
		}
	}
	return out
}

// TestReportUngated: a move of the run's task branch that no ledger line
// covers (git with hooks off) is said at release and recorded
// (ungated_ref_moves); a move the run's publication recorded in the
// ledger is not; nor is anything for a grant the run does not own or a
// branch that did not move.
func TestReportUngated(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	g := grantOf(f)
	mark := markBranch(f.c, g)
	if mark.Ref != "refs/heads/wt/T-1" || mark.Tip != f.base {
		t.Fatalf("mark: %+v", mark)
	}
	var n notes
	reportUngated(f.repo, f.c, g, mark, nil, n.notify)
	if n.said != nil {
		t.Fatalf("an unmoved branch: %q", n.said)
	}
	hgit(t, f.c.TopLevel, "commit", "-q", "--allow-empty", "-m", "ungated")
	notOwned := g
	notOwned.Owned = false
	reportUngated(f.repo, f.c, notOwned, mark, nil, n.notify)
	if n.said != nil {
		t.Fatalf("a grant not owned: %q", n.said)
	}
	reportUngated(f.repo, f.c, g, mark, func(gitrepo.Checkout) string { return "hooks off in its harness" }, n.notify)
	if len(n.said) != 1 || !strings.HasPrefix(n.said[0], "UNGATED_REF_MOVE: task T-1's branch wt/T-1 moved 1 time(s) during this run with no gate approval (hooks off in its harness); see wt-admin --repo "+f.c.TopLevel+" audit --since 2026-01-02T03:04:05Z") {
		t.Fatalf("notices: %q", n.said)
	}
	if ev := events(t, f, "ungated_ref_moves"); len(ev) != 1 || !strings.Contains(ev[0], `"count":1`) {
		t.Errorf("events: %q", ev)
	}
	// The same move, recorded by the run's publication: covered.
	tip := hgit(t, f.c.TopLevel, "rev-parse", "HEAD")
	publishLedger(f.repo.Store.Root(), g.Allocation, g.Lease)(f.base, tip)
	n.said = nil
	reportUngated(f.repo, f.c, g, mark, nil, n.notify)
	if n.said != nil {
		t.Errorf("a published move reported: %q", n.said)
	}
	if publishLedger(f.repo.Store.Root(), store.Allocation{}, g.Lease) != nil {
		t.Error("a ledger for a detached allocation")
	}
	if m := markBranch(f.c, lease.Grant{Role: store.RoleFeature}); m.Ref != "" {
		t.Errorf("a mark without a branch: %+v", m)
	}
}

// TestImportPending: the moves the gate of a command confined by Landlock
// alone wrote beside its git dir come into the ledger (as confined) when
// the reflog shows them; others are dropped, and the file goes.
func TestImportPending(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	g := grantOf(f)
	mark := markBranch(f.c, g)
	hgit(t, f.c.TopLevel, "commit", "-q", "--allow-empty", "-m", "confined")
	tip := hgit(t, f.c.TopLevel, "rev-parse", "HEAD")
	p := filepath.Join(f.c.GitDir, store.PendingLedgerName)
	for _, l := range []store.LedgerLine{{Via: "gate", Ref: mark.Ref, Old: f.base, New: tip, LeaseID: "L1"}, {Via: "gate", Ref: mark.Ref, Old: tip, New: f.base}} {
		if err := store.AppendLedgerAt(p, l); err != nil {
			t.Fatal(err)
		}
	}
	importPending(f.repo, f.c, g, mark)
	if exists := fileExists(p); exists {
		t.Error("the pending file stays")
	}
	led, err := store.ReadLedger(f.repo.Store.Root(), f.a.AllocationID, mark.Ref)
	if err != nil {
		t.Fatal(err)
	}
	var confined []store.LedgerLine
	for _, l := range led.Lines {
		if l.Via == store.ViaConfined {
			confined = append(confined, l)
		}
	}
	if len(confined) != 1 || confined[0].Old != f.base || confined[0].New != tip || confined[0].LeaseID != "L1" {
		t.Errorf("confined lines: %+v", confined)
	}
	var n notes
	reportUngated(f.repo, f.c, g, mark, nil, n.notify)
	if n.said != nil {
		t.Errorf("an imported move reported as ungated: %q", n.said)
	}
	// Without a mark the file still goes.
	store.AppendLedgerAt(p, store.LedgerLine{Via: "gate", Ref: mark.Ref, New: tip})
	importPending(f.repo, f.c, g, gitrepo.ReflogMark{})
	if fileExists(p) {
		t.Error("the pending file stays without a mark")
	}
}

// TestBranchBase: where the task branch stands at the grant.
func TestBranchBase(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if got, err := branchBase(f.c, f.a); err != nil || got != f.base {
		t.Errorf("branchBase: %q %v", got, err)
	}
	if got, err := branchBase(f.c, store.Allocation{}); err != nil || got != "" {
		t.Errorf("detached: %q %v", got, err)
	}
	bad := "bad..name"
	if _, err := branchBase(f.c, store.Allocation{Branch: &bad}); err == nil {
		t.Error("an invalid branch read")
	}
}
