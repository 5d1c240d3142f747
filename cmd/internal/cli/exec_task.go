package cli

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/shell"
)

// taskFlags are wt-exec's one-step launch: --task finds the task's worktree
// or allocates it, and makes sure the repository's hooks are installed.
func taskFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "task", Usage: "run in task `KEY`'s worktree, allocating it (with --owner) when the task has none; -C names the repository"},
		&ucli.StringFlag{Name: "base", Usage: "with --task, a new worktree starts at `REV` (default: the publication branch)"},
		&ucli.StringFlag{Name: "path", Usage: "with --task, where a new worktree goes (default: ../REPO-KEY beside the canonical checkout)"},
	}
}

// TaskPath is where wt-exec --task puts a task's new worktree: beside the
// canonical checkout top, named after it and the task key ("/" in the key
// becomes "-").
func TaskPath(top, task string) string {
	return filepath.Join(filepath.Dir(top), filepath.Base(top)+"-"+strings.ReplaceAll(task, "/", "-"))
}

// taskWorktree resolves --task: the worktree of the task's ACTIVE or
// RETAINED allocation (wt-exec then refuses a RETAINED one as it always
// does), or a new feature allocation by allocate's rules. Either way the
// repository's hooks are in place before the command runs: a one-step
// launch never leaves a worktree ungated.
func (e *env) taskWorktree(c *ucli.Context) (string, error) {
	task := c.String("task")
	if err := alloc.ValidTaskKey(task); err != nil {
		return "", err
	}
	dir := c.String("C")
	if dir == "" {
		dir = "."
	}
	ctx := context.Background()
	r, err := alloc.Open(ctx, dir)
	if err != nil {
		return "", err
	}
	if err := ensureExecHooks(ctx, r.Git); err != nil {
		return "", err
	}
	a, err := r.TaskAllocation(task)
	if err != nil {
		return "", err
	}
	if a != nil {
		return a.WorktreePath, nil
	}
	if !c.IsSet("owner") {
		return "", clikit.UsageErr("task %s has no worktree yet: allocating it needs --owner NAME", task)
	}
	path := c.String("path")
	if path == "" {
		path = TaskPath(r.Git.TopLevel, task)
	}
	res, err := r.Allocate(ctx, alloc.Request{TaskKey: task, Owner: c.String("owner"), Base: c.String("base"), Path: path})
	if decision.CodeOf(err) == decision.TaskKeyInUse {
		// Another launch allocated it meanwhile: run there (its lease
		// decides who writes).
		if a, err2 := r.TaskAllocation(task); err2 == nil && a != nil {
			return a.WorktreePath, nil
		}
	}
	if err != nil {
		return "", err
	}
	a = &res.Allocation
	branch := ""
	if a.Branch != nil {
		branch = *a.Branch
	}
	fmt.Fprintf(e.Stderr, "wt-exec: %s: task %s allocated at %s (branch %s, owner %s)\n", res.Code, clikit.Clean(a.TaskKey), clikit.Clean(a.WorktreePath), clikit.Clean(branch), clikit.Clean(a.Owner))
	return a.WorktreePath, nil
}

// ensureExecHooks installs the repository's hooks (with the wt-hook beside
// this binary) unless they are in place, and refuses when it cannot.
func ensureExecHooks(ctx context.Context, g *gitrepo.Repo) error {
	top := g.TopLevel
	_, _, err := ensureHooks(ctx, g)
	if err == nil {
		return nil
	}
	d, ok := decision.As(err)
	if !ok {
		return decision.Wrap(decision.HooksMissing, err, "install the hooks of %s", top)
	}
	if d.Code != decision.HooksMissing && d.Code != decision.HooksDirInWorktree {
		return err
	}
	return decision.New(decision.HooksMissing, "wt-exec --task runs only in a gated repository, and it could not install the hooks of %s: %s", top, d.Message).
		WithHint("%s", cmp.Or(d.Hint, fmt.Sprintf("(cd %s && wt-hook install)", shell.Word(top))))
}
