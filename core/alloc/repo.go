package alloc

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// Repo is a governed repository: git plus the store.
type Repo struct {
	Git   *gitrepo.Repo
	Store *store.Store
}

// Open finds the repository containing dir and opens its store.
func Open(ctx context.Context, dir string) (*Repo, error) {
	g, err := gitrepo.Discover(ctx, dir)
	if err != nil {
		return nil, err
	}
	s, err := store.Open(g.CommonDir)
	if err != nil {
		return nil, err
	}
	return &Repo{Git: g, Store: s}, nil
}

// OpenCheckout opens the store of the repository that a checkout found by
// gitrepo.Locate belongs to, without running git: the hot path of wt-exec.
// Only Store and the paths of Git are usable; methods of Git that run git
// work too, from the checkout's top level.
func OpenCheckout(c gitrepo.Checkout) (*Repo, error) {
	s, err := store.Open(c.CommonDir)
	if err != nil {
		return nil, err
	}
	return &Repo{Git: &gitrepo.Repo{CommonDir: c.CommonDir, GitDir: c.GitDir, TopLevel: c.TopLevel}, Store: s}, nil
}

// event appends event name about allocation a (none when nil) to
// events.jsonl (store.Tx.LogEvent).
func event(tx *store.Tx, name string, a *store.Allocation, detail map[string]any) error {
	id := ""
	if a != nil {
		id = a.AllocationID
	}
	return tx.LogEvent(name, id, detail)
}

// Target is one governed worktree resolved from a path.
type Target struct {
	Path         string
	Key          string
	Allocation   store.Allocation
	Registration store.Registration
}

// Resolve finds the allocation governing the worktree at path, reading a
// constant number of files: <path>/.git, the binding, the registration and
// its marker, and the allocation. A path whose checkout is gone is looked up
// among git's admin dirs instead. Must run inside a store transaction.
func (r *Repo) Resolve(tx *store.Tx, path string) (Target, error) {
	abs, err := proc.Canonical(path)
	if err != nil {
		return Target{}, decision.SayWrap(decision.UnregisteredWorktree, err, "path", path)
	}
	key, ok := gitrepo.KeyOfCheckout(r.Git.CommonDir, abs)
	if !ok {
		if _, err := os.Lstat(filepath.Join(abs, ".git")); err == nil {
			return Target{}, decision.Say(decision.UnregisteredWorktree, "not-worktree", abs).
				WithHint("pass --repo naming a checkout of the repository that owns it")
		}
		keys, err := gitrepo.AdminKeys(r.Git.CommonDir)
		if err != nil {
			return Target{}, err
		}
		if key, ok = keys[abs]; !ok {
			return Target{}, decision.Say(decision.UnregisteredWorktree, "not-worktree", abs).
				WithHint("list the governed worktrees with wt-admin status")
		}
	}
	if key == gitrepo.MainKey {
		return Target{}, decision.Say(decision.UnregisteredWorktree, "canonical-checkout", abs).
			WithHint("allocate a worktree with wt-admin allocate --task KEY --owner NAME PATH")
	}
	return r.resolveKey(tx, key, abs)
}

// ResolveCheckout is Resolve for a checkout gitrepo.Locate found: it reads
// the binding, the registration and its marker, and the allocation. The main
// checkout resolves to a canonical pseudo-allocation (role canonical), which
// takes no writer lease.
func (r *Repo) ResolveCheckout(tx *store.Tx, c gitrepo.Checkout) (Target, error) {
	if c.Key == gitrepo.MainKey {
		return Target{Path: c.TopLevel, Key: c.Key, Allocation: store.Allocation{Role: store.RoleCanonical,
			WorktreePath: c.TopLevel, WorktreeKey: c.Key, Lifecycle: store.Active}}, nil
	}
	return r.resolveKey(tx, c.Key, c.TopLevel)
}

func (r *Repo) resolveKey(tx *store.Tx, key, abs string) (Target, error) {
	b, ok, err := tx.Binding(key)
	if err != nil {
		return Target{}, err
	}
	if !ok {
		return Target{}, decision.Say(decision.UnregisteredWorktree, "worktree-key", abs, key).
			WithHint("bring it under wt as a task's worktree, its branch kept: wt-admin --repo %s adopt %s --task KEY --owner NAME (a dry run; then --apply PLAN_ID)", shell.Word(abs), shell.Word(abs))
	}
	reg, registered, err := tx.Registered(key)
	if err != nil {
		return Target{}, err
	}
	if !registered || reg.AllocationID != b.AllocationID {
		return Target{}, decision.Say(decision.UnregisteredWorktree, "worktree-key-bound", abs, key).
			WithHint("run wt-admin status to see it; a re-created worktree does not inherit the old allocation")
	}
	a, err := tx.Allocation(b.AllocationID)
	if errors.Is(err, store.ErrNotFound) {
		return Target{}, decision.Say(decision.InvalidMetadata, "binding-names", key, b.AllocationID).
			WithHint("inspect %s by hand", shell.Word(filepath.Join(r.Store.Root(), "bindings", key+".json")))
	}
	if err != nil {
		return Target{}, err
	}
	return Target{Path: abs, Key: key, Allocation: a, Registration: reg}, nil
}

// RegisteredAllocation returns the allocation the linked worktree key is
// registered to, or nil when it has no binding, its registration does not
// count (no document, or no matching marker), or the record is gone.
func (r *Repo) RegisteredAllocation(tx *store.Tx, key string) (*store.Allocation, error) {
	b, ok, err := tx.Binding(key)
	if err != nil || !ok {
		return nil, err
	}
	reg, registered, err := tx.Registered(key)
	if err != nil || !registered || reg.AllocationID != b.AllocationID {
		return nil, err
	}
	a, err := tx.Allocation(b.AllocationID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// AwaitingBackfill returns the allocation id that the linked worktree key
// is bound to when the binding has no registration document: a binding
// written before registrations existed, or one whose registration a crash
// cut short (PutRegistration writes the document last). Backfill registers
// it; it is not a task whose worktree is gone, which finish would end.
func AwaitingBackfill(tx *store.Tx, key string) (string, bool, error) {
	b, ok, err := tx.Binding(key)
	if err != nil || !ok {
		return "", false, err
	}
	_, _, hasDoc, err := tx.Registration(key)
	if err != nil || hasDoc {
		return "", false, err
	}
	return b.AllocationID, true, nil
}

func requireOwner(a store.Allocation, owner string) error {
	if a.Owner != owner {
		return decision.Say(decision.OwnerMismatch, "allocation-task", a.TaskKey, a.Owner, owner).
			WithHint("pass --owner %s", shell.Word(a.Owner))
	}
	return nil
}
