package alloc

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/store"
)

// QuarantineDir is where the store at root keeps what was put aside from
// the admin dir of worktree key (gitrepo.Quarantine).
func QuarantineDir(root, key string) string { return filepath.Join(root, "quarantine", key) }

// AdminCheck is a governed worktree's admin dir as gitrepo.CheckAdmin
// judges it.
type AdminCheck struct {
	Allocation store.Allocation
	Problems   []gitrepo.AdminProblem
}

// CheckAdminDirs judges the admin dir of every live (ACTIVE or RETAINED)
// allocation of a linked worktree, or of the one of worktree key when key
// is given; those with nothing wrong are left out. It runs no git and
// blocks on nothing an agent could have planted.
func (r *Repo) CheckAdminDirs(key string) ([]AdminCheck, error) {
	var allocs []store.Allocation
	err := r.Store.Read(func(tx *store.Tx) error {
		if key != "" {
			// One worktree (wt-exec's start): its registration names it.
			a, err := r.RegisteredAllocation(tx, key)
			if err == nil && a != nil && a.Lifecycle != store.Released {
				allocs = append(allocs, *a)
			}
			return err
		}
		all, err := tx.Allocations()
		for _, a := range all {
			if a.Lifecycle != store.Released && a.WorktreeKey != "" && a.WorktreeKey != gitrepo.MainKey {
				allocs = append(allocs, a)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	var out []AdminCheck
	for _, a := range allocs {
		if ps := gitrepo.CheckAdmin(r.Git.CommonDir, a.WorktreeKey, r.AdminExpect(a)); len(ps) > 0 {
			out = append(out, AdminCheck{Allocation: a, Problems: ps})
		}
	}
	return out, nil
}

// AdminExpect is what allocation a's admin dir should say.
func (r *Repo) AdminExpect(a store.Allocation) gitrepo.AdminExpect {
	e := gitrepo.AdminExpect{Path: a.WorktreePath, Base: a.BaseCommit, HooksDir: gitrepo.OwnHooksDir(r.Git.CommonDir)}
	if a.Branch != nil {
		e.Branch = *a.Branch
	}
	return e
}

// QuarantineAdmin puts aside what CheckAdmin finds in the admin dir of the
// governed worktree key (into QuarantineDir), writes back what git needs
// (a HEAD on the task's branch, the commondir and gitdir wt records, the
// config.worktree's allowed keys with core.hooksPath wt's own), makes the
// index again from HEAD (git read-tree, hooks off, with wt's records) when
// it was put aside, and records it (event admin_quarantined). Nothing is
// removed: each file is kept, and Quarantined.RestoreCommand puts it
// back. nil when there was nothing to put aside.
func (r *Repo) QuarantineAdmin(ctx context.Context, key string) ([]gitrepo.Quarantined, error) {
	checks, err := r.CheckAdminDirs(key)
	if err != nil || len(checks) == 0 {
		return nil, err
	}
	a := checks[0].Allocation
	q, err := gitrepo.Quarantine(QuarantineDir(r.Store.Root(), key), checks[0].Problems)
	if err != nil {
		return q, decision.SayWrap(decision.InvalidMetadata, err, "put-aside", a.WorktreePath)
	}
	for _, x := range q {
		if x.Index {
			if _, err := r.Git.GitIn(ctx, a.WorktreeKey, a.WorktreePath, false, "read-tree", "HEAD"); err != nil {
				return q, decision.SayWrap(decision.GitFailed, err, "make-index", a.WorktreePath).
					WithHint("git -C %s read-tree HEAD", a.WorktreePath)
			}
		}
	}
	var kept []string
	for _, x := range q {
		kept = append(kept, x.Rel+" ("+x.Why+") -> "+x.Kept)
	}
	err = r.Store.Write(func(tx *store.Tx) error {
		return tx.LogEvent("admin_quarantined", a.AllocationID, map[string]any{"worktree": a.WorktreePath, "kept": kept})
	})
	return q, err
}

// DescribeQuarantine says in one line what QuarantineAdmin put aside, and
// how each comes back.
func DescribeQuarantine(path string, q []gitrepo.Quarantined) string {
	var parts []string
	for _, x := range q {
		parts = append(parts, fmt.Sprintf("%s (%s; put back: %s)", x.Rel, x.Why, x.RestoreCommand()))
	}
	return fmt.Sprintf("the admin dir of %s held what git, or a program after it, would trip on or run; put aside under wt's store: %s", path, strings.Join(parts, "; "))
}
