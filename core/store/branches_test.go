package store

import (
	"os"
	"testing"

	"github.com/wt-tool/wt/core/ids"
)

// TestBranchIndex: a store without the index (an older wt's) finds a task
// branch's allocation by reading every record; EnsureBranchIndex builds the
// index, after which the one-file lookup gives the same answers, including
// a released record not displacing the live one of the same branch.
func TestBranchIndex(t *testing.T) {
	s := newStore(t)
	branch := func(b string) *string { return &b }
	live := Allocation{AllocationID: ids.New(), TaskKey: "T-1", Owner: "a", Role: RoleFeature, Lifecycle: Active, Branch: branch("wt/T-1")}
	old := Allocation{AllocationID: ids.New(), TaskKey: "T-1", Owner: "a", Role: RoleFeature, Lifecycle: Released, Branch: branch("wt/T-1")}
	audit := Allocation{AllocationID: ids.New(), TaskKey: "R-1", Owner: "a", Role: RoleAudit, Lifecycle: Active}
	if err := s.Write(func(tx *Tx) error {
		for _, a := range []*Allocation{&live, &old, &audit} {
			if err := tx.PutAllocation(a); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	lookup := func(ref string) (Allocation, bool) {
		var a Allocation
		var ok bool
		if err := s.Read(func(tx *Tx) (err error) { a, ok, err = tx.BranchAllocation(ref); return err }); err != nil {
			t.Fatal(err)
		}
		return a, ok
	}
	for round, build := range []bool{false, true} {
		if build {
			if err := s.Write(func(tx *Tx) error { return tx.EnsureBranchIndex() }); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(s.Root() + "/branches"); err != nil {
				t.Fatal(err)
			}
		}
		if a, ok := lookup("refs/heads/wt/T-1"); !ok || a.AllocationID != live.AllocationID {
			t.Errorf("round %d: wt/T-1 -> %v %v, want the live allocation", round, a.AllocationID, ok)
		}
		if _, ok := lookup("refs/heads/main"); ok {
			t.Errorf("round %d: main is guarded", round)
		}
	}
	// The record decides, not the entry: an entry whose record is gone
	// guards nothing, and a record that no longer has the branch neither.
	if err := os.Remove(s.Root() + "/allocations/" + live.AllocationID + ".json"); err != nil {
		t.Fatal(err)
	}
	if _, ok := lookup("refs/heads/wt/T-1"); ok {
		t.Error("an entry without its record guards")
	}
	other := Allocation{AllocationID: ids.New(), TaskKey: "T-2", Owner: "a", Role: RoleFeature, Lifecycle: Active, Branch: branch("wt/T-2")}
	if err := s.Write(func(tx *Tx) error {
		if err := tx.PutBranch(other); err != nil {
			return err
		}
		other.Branch = branch("elsewhere")
		return tx.PutAllocation(&other)
	}); err != nil {
		t.Fatal(err)
	}
	if _, ok := lookup("refs/heads/wt/T-2"); ok {
		t.Error("a stale entry guards a branch its record no longer has")
	}
}
