package execcli

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/wt-tool/wt/cmd/internal/textout"
	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/install"
)

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
func (r *run) taskWorktree(l *Line) (store.Allocation, error) {
	task := l.String("task")
	if err := store.ValidTaskKey(task); err != nil {
		return store.Allocation{}, err
	}
	dir := l.String("C")
	if dir == "" {
		dir = "."
	}
	ctx := context.Background()
	repo, err := alloc.Open(ctx, dir)
	if err != nil {
		return store.Allocation{}, err
	}
	if err := ensureHooks(ctx, repo.Git); err != nil {
		return store.Allocation{}, err
	}
	a, err := repo.TaskAllocation(task)
	if err != nil {
		return store.Allocation{}, err
	}
	if a != nil {
		return *a, stillTasks(repo, *a)
	}
	if !l.IsSet("owner") {
		return store.Allocation{}, usageErr("task-has", task)
	}
	path := l.String("path")
	if path == "" {
		path = TaskPath(repo.Git.TopLevel, task)
	}
	res, err := repo.Allocate(ctx, alloc.Request{TaskKey: task, Owner: l.String("owner"), Base: l.String("base"), Path: path, NewTask: l.Bool("new-task")})
	if code := decision.CodeOf(err); code == decision.TaskKeyInUse || code == decision.PathExists && !l.IsSet("path") {
		// Another launch allocated it meanwhile, or is allocating it now:
		// run there once it is recorded (its lease decides who writes).
		actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		a, err2 := repo.AwaitTask(actx, task)
		cancel()
		if err2 == nil && a != nil {
			return *a, nil
		}
	}
	if decision.CodeOf(err) == decision.PathExists && !l.IsSet("path") {
		// Whatever sits at the task's path (another task's worktree, a
		// checkout another tool made) is not this task's: never run there.
		return store.Allocation{}, decision.Say(decision.PathExists, "task-has", task, path, takenBy(repo, path)).
			WithHint("give task %s a path of its own: wt-exec --task %s --owner %s --path PATH -- COMMAND", task, shell.Word(task), shell.Word(l.String("owner")))
	}
	if err != nil {
		return store.Allocation{}, err
	}
	a = &res.Allocation
	did, err := install.PrepareWorktree(ctx, repo.Git, *a)
	if err != nil {
		return store.Allocation{}, err
	}
	for _, d := range did {
		fmt.Fprintf(r.stderr, "wt-exec: %s\n", textout.Clean(d))
	}
	branch := ""
	if a.Branch != nil {
		branch = *a.Branch
	}
	fmt.Fprintf(r.stderr, "wt-exec: %s: task %s allocated at %s (branch %s, owner %s)\n", res.Code, textout.Clean(a.TaskKey), textout.Clean(a.WorktreePath), textout.Clean(branch), textout.Clean(a.Owner))
	return *a, nil
}

// stillTasks refuses to run task a's command at the path its allocation
// records unless the worktree there is still the one wt registered for a:
// after git worktree remove, another allocation may be given the same path
// (and git the same admin dir name), and that worktree, its branch and its
// lease are another task's.
func stillTasks(repo *alloc.Repo, a store.Allocation) error {
	var t alloc.Target
	err := repo.Store.Read(func(tx *store.Tx) error {
		var err error
		t, err = repo.Resolve(tx, a.WorktreePath)
		if decision.CodeOf(err) == decision.UnregisteredWorktree {
			return nil // nobody's worktree, or none at all: not a's either
		}
		return err
	})
	if err != nil || t.Allocation.AllocationID == a.AllocationID {
		return err
	}
	there := ""
	if t.Allocation.TaskKey != "" {
		there = fmt.Sprintf(": the worktree there now is task %s's", t.Allocation.TaskKey)
	}
	return decision.Say(decision.UnregisteredWorktree, "task-but",
		a.TaskKey, a.Lifecycle, a.WorktreePath, there, a.TaskKey).
		WithHint("finish the task (its dry run shows what it keeps): wt-admin --repo %s finish --task %s --owner %s",
			shell.Word(repo.Git.TopLevel), shell.Word(a.TaskKey), shell.Word(a.Owner))
}

// takenBy says whose a taken path is: the task whose worktree it is, or
// "" when wt records none there.
func takenBy(repo *alloc.Repo, path string) string {
	task := ""
	_ = repo.Store.Read(func(tx *store.Tx) error { // Best effort: only words of a refusal.
		if t, err := repo.Resolve(tx, path); err == nil {
			task = t.Allocation.TaskKey
		}
		return nil
	})
	if task == "" {
		return ""
	}
	return fmt.Sprintf(" (it is task %s's worktree)", task)
}

// ensureHooks installs the repository's hooks (with the wt-hook beside
// this binary) unless they are in place, and refuses when it cannot.
func ensureHooks(ctx context.Context, g *gitrepo.Repo) error {
	top := g.TopLevel
	_, _, err := install.EnsureBeside(ctx, g)
	if err == nil {
		return nil
	}
	d, ok := decision.As(err)
	if !ok {
		return decision.SayWrap(decision.HooksMissing, err, "install-hooks", top)
	}
	if d.Code != decision.HooksMissing && d.Code != decision.HooksDirInWorktree {
		return err
	}
	return decision.Say(decision.HooksMissing, "wt-exec", top, d.Message).
		WithHint("%s", cmp.Or(d.Hint, fmt.Sprintf("(cd %s && wt-hook install)", shell.Word(top))))
}

// checkGate makes sure commits in the worktree the command is to run in
// meet wt's gate (install.CheckWorktree): it puts the gate back, and says
// so before the command starts, or refuses the launch.
func (r *run) checkGate(c gitrepo.Checkout) error {
	r.refreshHooks(c)
	gc, err := install.CheckWorktree(context.Background(), c, install.HookBinaryBeside)
	if err != nil {
		return err
	}
	if gc.Copied != "" {
		fmt.Fprintf(r.stderr, "wt-exec: %s\n", textout.Clean(gc.Copied))
	}
	if gc.Off != "" {
		fmt.Fprintf(r.stderr, "wt-exec: warning: %s: %s\n", decision.HooksMissing,
			decision.Words(decision.HooksMissing, "switched-off-here", textout.Clean(c.TopLevel), textout.Clean(gc.Off), install.GateFix(c.TopLevel)))
	}
	if gc.Repaired != "" {
		fmt.Fprintf(r.stderr, "wt-exec: %s: %s\n", decision.HooksInstalled,
			decision.Words(decision.HooksInstalled, "put-back", textout.Clean(c.TopLevel), textout.Clean(gc.Repaired), textout.Clean(gc.By)))
	}
	return nil
}

// refreshHooks puts the hook manager's generated hooks dir of worktree c
// back to the main checkout's when a run changed it
// (install.RefreshManagerDir), and says so.
func (r *run) refreshHooks(c gitrepo.Checkout) {
	did, err := install.RefreshManagerDir(c)
	switch {
	case err != nil:
		fmt.Fprintf(r.stderr, "wt-exec: warning: the hooks wt's hooks run in %s cannot be checked against the main checkout's: %s\n", textout.Clean(c.TopLevel), textout.Clean(err.Error()))
	case did != "":
		fmt.Fprintf(r.stderr, "wt-exec: warning: %s\n", textout.Clean(did))
	}
}

// explainUngated says why a move of the task branch met no gate, from what
// a commit in c meets now: the setting that takes the gate away there, or,
// with the gate in place, that the command ran git with hooks off.
func explainUngated(c gitrepo.Checkout) string {
	m, err := install.Probe(context.Background(), c.TopLevel, c.CommonDir)
	if err != nil {
		return ""
	}
	if !m.Gated("reference-transaction") {
		return "commits in " + c.TopLevel + " meet no gate now: " + m.Why("reference-transaction") + "; put it back: " + install.GateFix(c.TopLevel)
	}
	off := "git -c core.hooksPath=/dev/null"
	if m.Git.ConfigHooks() {
		off = "git -c core.hooksPath=/dev/null -c hook.reference-transaction.enabled=false"
	}
	return "the gate is in place here; the command ran git with hooks off (" + off + "), or wrote the ref by hand"
}
