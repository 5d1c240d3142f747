package install

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
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
