package ledger

import (
	"testing"
	"time"

	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/store"
)

// TestCover: a ledger line covers exactly the reflog entry of its move
// (same old and new, a null value and none alike), each line one entry;
// a baseline covers none, and a line from the same parent to another
// commit covers nothing (an aborted commit's approval covers no
// stranger's commit).
func TestCover(t *testing.T) {
	const (
		a    = "1111111111111111111111111111111111111111"
		b    = "2222222222222222222222222222222222222222"
		c    = "3333333333333333333333333333333333333333"
		d    = "4444444444444444444444444444444444444444"
		zero = "0000000000000000000000000000000000000000"
	)
	now := time.Now()
	entries := []gitrepo.ReflogEntry{
		{Old: zero, New: a, When: now}, // the branch created
		{Old: a, New: b, When: now},    // approved
		{Old: b, New: c, When: now},    // a stranger's, from the parent an aborted commit was approved from
		{Old: c, New: b, When: now},    // reset back, approved
		{Old: b, New: c, When: now},    // the same move again: covered only if approved twice
	}
	lines := []store.LedgerLine{
		{Via: store.ViaInit, Ref: "r", New: a},
		{Via: store.ViaAllocate, Ref: "r", New: a},
		{Via: store.ViaGate, Ref: "r", Old: a, New: b},
		{Via: store.ViaPass, Ref: "r", Old: b, New: d}, // the aborted commit's
		{Via: store.ViaGate, Ref: "r", Old: c, New: b},
		{Via: store.ViaGate, Ref: "r", Old: b, New: c},
	}
	got := Cover(entries, lines, nil)
	want := []int{1, 2, 5, 4, -1}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("cover = %v, want %v", got, want)
		}
	}
	skipped := Cover(entries, lines, func(i int, _ gitrepo.ReflogEntry) bool { return i < 2 })
	if skipped[0] != -1 || skipped[1] != -1 || skipped[2] != 5 {
		t.Fatalf("with the first two skipped: %v", skipped)
	}
}

// TestLedgerWords: null object names, the last value a reflog gave, and
// the restore command a missing branch's finding prints.
func TestLedgerWords(t *testing.T) {
	t.Parallel()
	zero := "0000000000000000000000000000000000000000"
	for _, c := range []struct {
		oid  string
		want bool
	}{{zero, true}, {"0000", true}, {"", false}, {"1000000000000000000000000000000000000000", false}} {
		if got := IsZeroOID(c.oid); got != c.want {
			t.Errorf("IsZeroOID(%q) = %v", c.oid, got)
		}
	}
	if !sameOID(zero, "") || !sameOID("", zero) || sameOID(zero, "1") || !sameOID("ab", "ab") {
		t.Error("sameOID: a null name and none are alike, nothing else")
	}
	if got := LastNew(nil); got != "" {
		t.Errorf("LastNew of none: %q", got)
	}
	if got := LastNew([]gitrepo.ReflogEntry{{New: "a"}, {New: "b"}}); got != "b" {
		t.Errorf("LastNew: %q", got)
	}
	if got := RestoreBranch("/w x", "refs/heads/wt/T-1", "abc"); got != "wt-exec -C '/w x' -- git update-ref refs/heads/wt/T-1 abc" {
		t.Errorf("RestoreBranch: %q", got)
	}
	if got := Cover(nil, nil, nil); len(got) != 0 {
		t.Errorf("Cover of nothing: %v", got)
	}
}
