// Package gitrepo asks git about a repository: where its common dir is, which
// worktrees it has (from `git worktree list --porcelain -z` and the admin dirs
// under <common-dir>/worktrees), and whether one commit descends from another.
//
// Git always runs with an argument list, never through a shell, with -C naming
// the directory, and with the GIT_DIR family of variables removed from its
// environment so that a hook's environment cannot point it elsewhere.
// Read-only commands run with GIT_OPTIONAL_LOCKS=0 so wt never contends for a
// sibling worktree's index.lock (docs/design.md, "Liveness").
package gitrepo
