package doctor

import (
	"fmt"
	"strings"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/install"
)

// checkAdminDirs: what a governed worktree's admin dir holds that git, or
// a program after it, would trip on or run (alloc.CheckAdminDirs: a FIFO
// or symlink as HEAD, a planted core.hooksPath, an executable); its fix
// puts it aside. Its first fix is the
// inventory's (s.adminFix).
func checkAdminDirs(s *scope) {
	r, repo := s.r, s.repo
	checks, err := r.CheckAdminDirs("")
	if err != nil {
		s.storeErr(err)
		return
	}
	first := ""
	// The hooks wt's hooks run from each worktree's own copy of a hook
	// manager's generated dir (husky's .husky/_): a run may have changed
	// them; the next wt-exec there puts them back.
	var allocs []store.Allocation
	_ = r.Store.Read(func(tx *store.Tx) error { // Best effort: the store's own check says what it cannot read.
		var err error
		allocs, err = tx.Allocations()
		return err
	})
	for _, a := range allocs {
		if a.Lifecycle == store.Released || a.WorktreeKey == "" || a.WorktreeKey == gitrepo.MainKey {
			continue
		}
		c := gitrepo.Checkout{CommonDir: r.Git.CommonDir, Key: a.WorktreeKey, TopLevel: a.WorktreePath}
		if _, _, rel, differ, err := install.ManagerDirDrift(c); err == nil && len(differ) > 0 {
			s.find(Finding{Subject: a.WorktreePath,
				Problem: fmt.Sprintf("the hooks %s that wt's hooks run in task %s's worktree differ from the main checkout's (%s): the next commit there would run them", rel, a.TaskKey, strings.Join(differ, ", ")),
				Fix:     fmt.Sprintf("wt-exec -C %s --no-confine -- true", shell.Word(a.WorktreePath))})
		}
	}
	for _, c := range checks {
		var what []string
		for _, p := range c.Problems {
			what = append(what, p.Rel+" "+p.Why)
		}
		fix := fmt.Sprintf("wt-admin --repo %s quarantine %s", repo, shell.Word(c.Allocation.WorktreePath))
		s.unsafe[c.Allocation.WorktreeKey] = true
		s.find(Finding{Subject: c.Allocation.WorktreePath,
			Problem: decision.AdminDirUnsafe + ": " + decision.Words(decision.AdminDirUnsafe, "task-admin-dir-holds", c.Allocation.TaskKey, strings.Join(what, "; ")),
			Fix:     fix})
		if first == "" {
			first = fix
		}
	}
	s.adminFix = first
}
