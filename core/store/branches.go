package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// branchesDir holds the branch index: branches/<sha256(ref)>.json names the
// allocation whose branch ref is, so that the reference-transaction gate
// finds the allocation guarding a ref by reading one file, whatever the
// number of allocations (docs/decisions.md, "Hooks": task branches are
// guarded by record). It is not one of subdirs: stores made before it existed have
// none, and [Tx.EnsureBranchIndex] builds it under the exclusive lock.
const branchesDir = "branches"

// BranchEntry is branches/<sha256(ref)>.json. Entries are never trusted on
// their own: the allocation they name is read, and only its role, lifecycle
// and branch decide whether the ref is guarded. An entry whose allocation
// was released or reallocated is harmless.
type BranchEntry struct {
	Meta
	Ref          string `json:"ref"`
	AllocationID string `json:"allocation_id"`
}

func branchFile(ref string) string {
	sum := sha256.Sum256([]byte(ref))
	return hex.EncodeToString(sum[:]) + ".json"
}

// HasBranchIndex reports whether the branch index exists (stores made by an
// older wt have none until a write command builds it).
func (tx *Tx) HasBranchIndex() (bool, error) { return tx.hasDir(branchesDir) }

// BranchAllocation returns the allocation the index names for ref (a full
// ref name, refs/heads/...), and whether there is one. Without an index
// (an older store) it reads every allocation instead, so that no task
// branch is ever unguarded for want of an index; [Tx.EnsureBranchIndex]
// ends that cost.
func (tx *Tx) BranchAllocation(ref string) (Allocation, bool, error) {
	has, err := tx.HasBranchIndex()
	if err != nil {
		return Allocation{}, false, err
	}
	if !has {
		all, err := tx.Allocations()
		if err != nil {
			return Allocation{}, false, err
		}
		var found *Allocation
		for i, a := range all {
			if a.Branch == nil || "refs/heads/"+*a.Branch != ref {
				continue
			}
			// Several records may have named the branch over time: the one
			// that is ACTIVE or RETAINED is the one that guards it.
			if found == nil || a.Lifecycle != Released {
				found = &all[i]
			}
		}
		if found == nil {
			return Allocation{}, false, nil
		}
		return *found, true, nil
	}
	var e BranchEntry
	p := tx.path(branchesDir, branchFile(ref))
	ok, err := readRecord(p, &e)
	if err != nil || !ok {
		return Allocation{}, false, err
	}
	if e.Ref != ref {
		return Allocation{}, false, invalid(p, fmt.Errorf("ref %q does not match the file name", e.Ref))
	}
	a, err := tx.Allocation(e.AllocationID)
	if errors.Is(err, ErrNotFound) {
		// The record guards, not the entry: an entry written just before a
		// crash kept allocate from writing the record (which its recovery
		// writes), or a record removed by hand, guards nothing.
		return a, false, nil
	}
	if err != nil {
		return a, false, err
	}
	if a.Branch == nil || "refs/heads/"+*a.Branch != ref {
		return a, false, nil // the allocation moved on: the entry is stale
	}
	return a, true, nil
}

// PutBranch indexes a's branch (a no-op for a detached allocation).
func (tx *Tx) PutBranch(a Allocation) error {
	if a.Branch == nil {
		return nil
	}
	if _, err := tx.HasBranchIndex(); err != nil {
		return err
	}
	if err := mkdirNoFollow(tx.path(branchesDir)); err != nil {
		return err
	}
	ref := "refs/heads/" + *a.Branch
	p := tx.path(branchesDir, branchFile(ref))
	var e BranchEntry
	if _, err := readRecord(p, &e); err != nil {
		return err
	}
	e.Ref, e.AllocationID = ref, a.AllocationID
	return tx.put(p, &e, durable)
}

// EnsureBranchIndex builds the branch index of a store that has none, from
// every allocation with a branch, and makes it appear whole: the entries are
// written into a temporary directory that is then renamed into place, so
// a reader sees either no index (and reads every allocation) or all of it.
func (tx *Tx) EnsureBranchIndex() error {
	tx.mustWrite()
	has, err := tx.HasBranchIndex()
	if err != nil || has {
		return err
	}
	all, err := tx.Allocations()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(tx.path(), "."+branchesDir+".tmp-*")
	if err != nil {
		return invalid(tx.path(), err)
	}
	defer os.RemoveAll(tmp) // Best effort: gone after the rename.
	// A released record never displaces a live one for the same branch.
	for _, a := range all {
		if a.Branch == nil || a.Lifecycle == Released {
			continue
		}
		ref := "refs/heads/" + *a.Branch
		e := BranchEntry{Ref: ref, AllocationID: a.AllocationID}
		if err := tx.put(filepath.Join(tmp, branchFile(ref)), &e, dataOnly); err != nil {
			return err
		}
	}
	if err := syncDir(tmp); err != nil {
		return err
	}
	tx.durable = true
	if err := os.Rename(tmp, tx.path(branchesDir)); err != nil {
		return fmt.Errorf("place the branch index: %w", err)
	}
	if err := syncDir(tx.path()); err != nil {
		return err
	}
	return nil
}
