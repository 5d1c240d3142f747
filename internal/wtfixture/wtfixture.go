// Package wtfixture makes a governed repository for the unit tests of the
// packages above allocation (core/view, hooks): a real repository with one
// commit on main, set up by policy.Init and opened by alloc.Open, and the
// few writes those tests make through wt's own API or its store.
package wtfixture

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
)

// Repo is a repository set up by policy.Init in a temporary directory
// (Top, symlinks resolved): its canonical checkout (Dir) on main, at one
// commit (Base), opened as R.
type Repo struct {
	T    *testing.T
	Ctx  context.Context
	Top  string
	Dir  string
	Base string
	R    *alloc.Repo
}

// New makes the repository and runs Init with change. The package's
// TestMain calls gittest.Setenv.
func New(t *testing.T, change policy.Change) *Repo {
	t.Helper()
	top, dir, base := gittest.Repo(t)
	f := &Repo{T: t, Ctx: context.Background(), Top: top, Dir: dir, Base: base}
	res, err := policy.Init(f.Ctx, f.Dir, change)
	if err != nil {
		t.Fatal(err)
	}
	if res.Code != decision.StoreInitialized {
		t.Fatalf("Init: %+v", res)
	}
	if f.R, err = alloc.Open(f.Ctx, f.Dir); err != nil {
		t.Fatal(err)
	}
	return f
}

// Git runs git in the canonical checkout.
func (f *Repo) Git(args ...string) string {
	f.T.Helper()
	return gittest.Git(f.T, f.Dir, args...)
}

// Path is a path beside the canonical checkout.
func (f *Repo) Path(name string) string { return filepath.Join(f.Top, name) }

// Allocate allocates, for owner alice, a worktree of task with role (""
// for feature) at path name.
func (f *Repo) Allocate(task, role, name string) store.Allocation {
	f.T.Helper()
	res, err := f.R.Allocate(f.Ctx, alloc.Request{TaskKey: task, Owner: "alice", Role: role, Path: f.Path(name), NewTask: true})
	if err != nil {
		f.T.Fatalf("allocate %s: %v", task, err)
	}
	return res.Allocation
}

// Write runs fn in an exclusive section of the store.
func (f *Repo) Write(fn func(tx *store.Tx) error) {
	f.T.Helper()
	if err := f.R.Store.Write(fn); err != nil {
		f.T.Fatal(err)
	}
}

// SetPolicy changes the policy, failing the test on a refusal.
func (f *Repo) SetPolicy(c policy.Change) {
	f.T.Helper()
	if _, err := policy.Set(f.Ctx, f.R.Git, f.R.Store, c); err != nil {
		f.T.Fatal(err)
	}
}

// Lease writes a writer lease of allocation a held by h, matching the
// records; change, if not nil, edits it before it is written.
func (f *Repo) Lease(a store.Allocation, h proc.Holder, change func(l *store.Lease)) store.Lease {
	f.T.Helper()
	var l store.Lease
	f.Write(func(tx *store.Tx) error {
		repo, err := tx.Repository()
		if err != nil {
			return err
		}
		l = store.Lease{LeaseID: ids.New(), RepositoryID: repo.RepositoryID, AllocationID: a.AllocationID,
			WorktreePath: a.WorktreePath, Owner: a.Owner, Holder: h, Generation: 1,
			AcquiredAt: store.Now(), RenewedAt: store.Now()}
		if change != nil {
			change(&l)
		}
		return tx.PutLease(&l)
	})
	return l
}
