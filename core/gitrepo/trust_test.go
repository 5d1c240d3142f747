package gitrepo

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/decision/decisiontest"
)

// TestVerifyMetadata: a linked worktree's files are trusted only when
// each says what the repository's records say and its config.worktree
// sets nothing that would start a program; each refusal names the
// command that mends it.
func TestVerifyMetadata(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, common, admin, path string)
		hint  string // "" : trusted
	}{
		{"as git made it", func(*testing.T, string, string, string) {}, ""},
		{"the checkout gone", func(t *testing.T, _, _, path string) { os.RemoveAll(path) }, ""},
		{"a .git directory", func(t *testing.T, _, _, path string) {
			os.Remove(filepath.Join(path, ".git"))
			os.Mkdir(filepath.Join(path, ".git"), 0o755)
		}, "worktree repair"},
		{"a .git file naming another admin dir", func(t *testing.T, common, _, path string) {
			os.WriteFile(filepath.Join(path, ".git"), []byte("gitdir: "+filepath.Join(common, "worktrees", "other")+"\n"), 0o644)
		}, "worktree repair"},
		{"a .git file that is not one", func(t *testing.T, _, _, path string) {
			os.WriteFile(filepath.Join(path, ".git"), []byte("garbage\n"), 0o644)
		}, "worktree repair"},
		{"no commondir", func(t *testing.T, _, admin, _ string) { os.Remove(filepath.Join(admin, "commondir")) }, "worktree repair"},
		{"a commondir naming another repository", func(t *testing.T, _, admin, _ string) {
			other := filepath.Join(t.TempDir(), ".git")
			os.Mkdir(other, 0o755)
			os.WriteFile(filepath.Join(admin, "commondir"), []byte(other+"\n"), 0o644)
		}, "worktree repair"},
		{"a gitdir naming another checkout", func(t *testing.T, _, admin, _ string) {
			os.WriteFile(filepath.Join(admin, "gitdir"), []byte(filepath.Join(t.TempDir(), ".git")+"\n"), 0o644)
		}, "worktree repair"},
		{"wt's own hooks dir", func(t *testing.T, common, admin, _ string) {
			writeWorktreeConfig(t, admin, "[core]\n\thooksPath = "+OwnHooksDir(common)+"\n[user]\n\tname = agent\n")
		}, ""},
		{"hooks off", func(t *testing.T, _, admin, _ string) {
			writeWorktreeConfig(t, admin, "[core]\n\thooksPath = /dev/null\n")
		}, ""},
		{"another hooks dir", func(t *testing.T, _, admin, _ string) {
			writeWorktreeConfig(t, admin, "[core]\n\thooksPath = /tmp/evil\n")
		}, "core.hooksPath"},
		{"a program's key", func(t *testing.T, _, admin, _ string) {
			writeWorktreeConfig(t, admin, "[core]\n\tfsmonitor = /tmp/evil\n")
		}, "--unset-all core.fsmonitor"},
		{"a filter's section", func(t *testing.T, _, admin, _ string) {
			writeWorktreeConfig(t, admin, "[filter \"lfs\"]\n\tclean = /tmp/evil\n")
		}, "--remove-section filter.lfs"},
		{"wt's own hook switched", func(t *testing.T, _, admin, _ string) {
			writeWorktreeConfig(t, admin, "[hook \"wt-pre-commit\"]\n\tenabled = false\n")
		}, ""},
		{"another hook's command", func(t *testing.T, _, admin, _ string) {
			writeWorktreeConfig(t, admin, "[hook \"wt-pre-commit\"]\n\tcommand = /tmp/evil\n")
		}, "--unset-all hook.wt-pre-commit.command"},
		{"a config.worktree that is a FIFO", func(t *testing.T, _, admin, _ string) {
			if err := unix.Mkfifo(filepath.Join(admin, "config.worktree"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "worktree repair"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, top, _ := newRepo(t)
			path := linked(t, r, top, "w")
			admin := AdminDir(r.CommonDir, "w")
			tc.plant(t, r.CommonDir, admin, path)
			err := VerifyMetadata(r.CommonDir, "w", path)
			if tc.hint == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			decisiontest.WantHint(t, err, decision.GitMetadataUntrusted, tc.hint)
		})
	}
}

func writeWorktreeConfig(t *testing.T, admin, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(admin, "config.worktree"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
