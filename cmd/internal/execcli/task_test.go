package execcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wtfixture"
)

// TestTaskPath: a task's new worktree sits beside the canonical checkout,
// named after it and the task ("/" in the key becomes "-").
func TestTaskPath(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ top, task, want string }{
		{"/src/app", "T-1", "/src/app-T-1"},
		{"/src/app", "team/T-2", "/src/app-team-T-2"},
		{"/src/app", "x.y_z", "/src/app-x.y_z"},
	} {
		if got := TaskPath(c.top, c.task); got != c.want {
			t.Errorf("TaskPath(%q, %q) = %q, want %q", c.top, c.task, got, c.want)
		}
	}
}

// TestTaskRefusesBeforeAllocating: --task allocates nothing, and makes no
// worktree, when its launch cannot go on: a task key outside its
// character set, a command that cannot be found (127, checked before any
// allocation), or hooks it cannot install (a test binary has no wt-hook
// beside it, which is where wt-exec takes the one it installs). The
// store and the hooks dir are left as they were.
func TestTaskRefusesBeforeAllocating(t *testing.T) {
	f := wtfixture.New(t, policy.Change{})
	common := f.R.Git.CommonDir
	before := snapshotDir(t, filepath.Join(common, "hooks"))
	for _, c := range []struct {
		name    string
		task    string
		command string
		status  int
		code    string
		said    string
	}{
		{"bad key", "no spaces", "true", ExitRefused, decision.InvalidTaskKey, `task key "no spaces" is not a letter or digit`},
		{"no command", "T-1", "wt-test-no-such-command", ExitNotFound, decision.CommandNotFound, ""},
		{"no hooks", "T-1", "true", ExitRefused, decision.HooksMissing, "wt-exec --task runs only in a gated repository, and it could not install the hooks of " + f.Dir + ": no wt-hook binary beside "},
	} {
		args := append(append([]string{"-C", f.Dir, "--task", c.task, "--owner", "alice"}, plain...), "--", c.command)
		code, _, stderr := execute(t, args...)
		if code != c.status || !strings.Contains(stderr, c.code+": ") || !strings.Contains(stderr, c.said) {
			t.Errorf("%s: exit %d, want %d with %s %q:\n%s", c.name, code, c.status, c.code, c.said, stderr)
		}
		var all []store.Allocation
		if err := f.R.Store.Read(func(tx *store.Tx) error {
			var err error
			all, err = tx.Allocations()
			return err
		}); err != nil {
			t.Fatal(err)
		}
		for _, a := range all {
			if a.Role != store.RoleCanonical {
				t.Errorf("%s: allocated %s at %s", c.name, a.TaskKey, a.WorktreePath)
			}
		}
		if _, err := os.Stat(TaskPath(f.Dir, "T-1")); !os.IsNotExist(err) {
			t.Errorf("%s: a worktree was made: %v", c.name, err)
		}
		if after := snapshotDir(t, filepath.Join(common, "hooks")); after != before {
			t.Errorf("%s: the hooks dir changed:\n%s\nwant:\n%s", c.name, after, before)
		}
	}
}
