package install

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/store"
)

// TestInstallConfigEnabled: InstallConfig refuses a repository whose own
// config switches off every configured hook of an event, reading the
// switch as git does: "enabled" given without a value is true (git reads a
// bare boolean key so), "enabled =" with an empty value is false.
func TestInstallConfigEnabled(t *testing.T) {
	bin, err := os.Executable() // any executable file stands for wt-hook
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, setting string
		refused       bool
	}{
		{"without a value", "\tenabled\n", false},
		{"true", "\tenabled = true\n", false},
		{"false", "\tenabled = false\n", true},
		{"empty", "\tenabled =\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := filepath.Join(t.TempDir(), "repo")
			if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			f, err := os.OpenFile(filepath.Join(repo, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("[hook \"pre-commit\"]\n" + tc.setting)
			f.Close()
			g := &gitrepo.Repo{CommonDir: filepath.Join(repo, ".git"), GitDir: filepath.Join(repo, ".git"), TopLevel: repo}
			_, err = InstallConfig(context.Background(), g, bin)
			if tc.refused != (decision.CodeOf(err) == decision.HookConflict) {
				t.Fatalf("hook.pre-commit.enabled %q: %v", tc.setting, err)
			}
			if !tc.refused && err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestHalfMadeWorktree: git's failure on another worktree's metadata that
// a concurrent git worktree add has not filled yet is recognised (and
// waited out by setWorktreeHooksPath); other failures are not.
func TestHalfMadeWorktree(t *testing.T) {
	msg := errors.New("git config --worktree core.hooksPath /r/.git/wt-hooks: fatal: failed to read /r/.git/worktrees/repo-T-10/commondir: Success")
	if got := halfMadeWorktree(msg); got != "/r/.git/worktrees/repo-T-10/commondir" {
		t.Fatalf("got %q", got)
	}
	for _, e := range []error{nil, errors.New("fatal: failed to read /etc/passwd: x"), errors.New("fatal: not a git repository")} {
		if got := halfMadeWorktree(e); got != "" {
			t.Errorf("%v: got %q", e, got)
		}
	}
}

// TestSetWorktreeHooksPathLocked: another process (a wt-exec --task
// started at the same time) holds the lock of the worktree's
// config.worktree. When it has set the value already, the write is taken
// as made, lock still held; when it has not, the write waits for the
// lock to go and is made then.
func TestSetWorktreeHooksPathLocked(t *testing.T) {
	ctx := context.Background()
	top, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(top, "repo")
	run := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@wt.invalid"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run(top, "init", "-q", "-b", "main", repo)
	run(repo, "commit", "-q", "--allow-empty", "-m", "init")
	run(repo, "config", "extensions.worktreeConfig", "true")
	g, err := gitrepo.Discover(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	own := OwnDir(g.CommonDir)
	for i, setAlready := range []bool{true, false} {
		key := fmt.Sprintf("w%d", i)
		path := filepath.Join(top, key)
		run(repo, "worktree", "add", "-q", "-b", key, path)
		a := store.Allocation{WorktreeKey: key, WorktreePath: path}
		if setAlready {
			run(path, "config", "--worktree", "core.hooksPath", own)
		}
		lock := filepath.Join(gitrepo.AdminDir(g.CommonDir, key), "config.worktree.lock")
		if err := os.WriteFile(lock, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- setWorktreeHooksPath(ctx, g, a, own) }()
		if !setAlready {
			os.Remove(lock) // the other process ends its write
		}
		if err := <-done; err != nil {
			t.Fatalf("set already %v: %v", setAlready, err)
		}
		os.Remove(lock)
		if cur, err := worktreeHooksPath(ctx, g, a); err != nil || cur != own {
			t.Errorf("set already %v: core.hooksPath %q %v, want %s", setAlready, cur, err, own)
		}
	}
	if !configLocked(errors.New("error: could not lock config file .git/config: File exists")) || configLocked(errors.New("fatal: not a git repository")) || configLocked(nil) {
		t.Error("configLocked tells a taken lock wrongly")
	}
	// The repository's config, for extensions.worktreeConfig: its lock
	// taken, the setting made by the other process.
	lock := filepath.Join(g.CommonDir, "config.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err = enableWorktreeConfig(ctx, g)
	os.Remove(lock)
	if err != nil {
		t.Errorf("extensions.worktreeConfig, set already, its lock taken: %v", err)
	}
}
