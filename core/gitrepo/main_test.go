package gitrepo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wt-tool/wt/internal/gittest"
)

// TestMain keeps every git away from the configuration of the user and of
// the machine (gittest.Setenv), before any test runs.
func TestMain(m *testing.M) {
	gittest.Setenv()
	os.Exit(m.Run())
}

// newRepo is a repository on main at one empty commit (gittest.Repo),
// discovered: its checkout, its common dir and the commit.
func newRepo(t *testing.T) (r *Repo, top, base string) {
	t.Helper()
	top, dir, base := gittest.Repo(t)
	return &Repo{CommonDir: filepath.Join(dir, ".git"), GitDir: filepath.Join(dir, ".git"), TopLevel: dir}, top, base
}

// commitFile writes name in the checkout at dir, commits it and returns
// the new commit.
func commitFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, dir, "add", "--", name)
	gittest.Git(t, dir, "commit", "-q", "-m", "add "+name)
	return gittest.Git(t, dir, "rev-parse", "HEAD")
}
