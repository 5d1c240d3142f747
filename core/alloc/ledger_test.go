package alloc

import (
	"testing"

	"github.com/wt-tool/wt/core/ledger"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/store"
)

// TestBeginLedger: a ledger with no file begins with a baseline (the
// branch's tip and how many reflog entries it has); one that has a file
// is left as it is.
func TestBeginLedger(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	f.git("branch", "topic")
	ledger.Begin(f.r.Git.CommonDir, f.r.Store.Root(), "L1", "refs/heads/topic")
	ledger.Begin(f.r.Git.CommonDir, f.r.Store.Root(), "L1", "refs/heads/topic")
	led, err := store.ReadLedger(f.r.Store.Root(), "L1", "refs/heads/topic")
	if err != nil {
		t.Fatal(err)
	}
	want := store.LedgerLine{Via: store.ViaInit, Ref: "refs/heads/topic", New: f.base, Entries: 1}
	if len(led.Lines) != 1 {
		t.Fatalf("lines: %+v", led.Lines)
	}
	got := led.Lines[0]
	got.Time = 0
	if got != want {
		t.Errorf("baseline:\n got %+v\nwant %+v", got, want)
	}
	// No publication branch: nothing is written.
	before, err := store.ReadLedger(f.r.Store.Root(), store.PublicationLedger, "refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	if err := policy.PublicationBaseline(f.r.Git, f.r.Store, ""); err != nil {
		t.Errorf("no publication branch: %v", err)
	}
	after, err := store.ReadLedger(f.r.Store.Root(), store.PublicationLedger, "refs/heads/main")
	if err != nil || len(after.Lines) != len(before.Lines) || len(before.Lines) != 1 {
		t.Errorf("the publication ledger changed: %d lines, then %d (%v)", len(before.Lines), len(after.Lines), err)
	}
}
