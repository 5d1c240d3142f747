package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// checkPrunable: a retained audit worktree whose checkout is gone keeps a
// registration that prune can release (docs/decisions.md, "Registration maintenance"; prune's dry run checks
// every other precondition).
func checkPrunable(s *scope) {
	allocs, repo := s.allocs, s.repo
	for _, a := range allocs {
		if a.Role != store.RoleAudit || a.Lifecycle != store.Retained {
			continue
		}
		if _, err := os.Lstat(a.WorktreePath); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		s.find(Finding{Subject: a.WorktreePath,
			Problem: fmt.Sprintf("retained audit worktree of task %s is gone; its registration can be pruned", a.TaskKey),
			Fix:     fmt.Sprintf("wt-admin --repo %s prune %s --owner %s", repo, shell.Word(a.WorktreePath), shell.Word(a.Owner))})
	}
}
