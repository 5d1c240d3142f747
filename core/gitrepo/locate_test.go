package gitrepo

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/wt-tool/wt/core/decision"
)

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@wt.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@wt.invalid")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// TestLocate finds checkouts from files alone, as git would, and agrees
// with git rev-parse on every path.
func TestLocate(t *testing.T) {
	top, _ := filepath.EvalSymlinks(t.TempDir())
	repo := filepath.Join(top, "repo")
	gitIn(t, top, "init", "-q", "-b", "main", repo)
	gitIn(t, repo, "commit", "-q", "--allow-empty", "-m", "init")
	gitIn(t, repo, "worktree", "add", "-q", "-b", "feat", "../w 1")
	gitIn(t, repo, "worktree", "add", "-q", "--detach", "../det")
	os.MkdirAll(filepath.Join(top, "w 1", "sub", "deeper"), 0o755)
	common := filepath.Join(repo, ".git")

	for _, tc := range []struct {
		dir, top, key, branch string
		detached              bool
	}{
		{repo, repo, MainKey, "main", false},
		// git names the admin dir of "w 1" w-1.
		{filepath.Join(top, "w 1"), filepath.Join(top, "w 1"), "w-1", "feat", false},
		{filepath.Join(top, "w 1", "sub", "deeper"), filepath.Join(top, "w 1"), "w-1", "feat", false},
		{filepath.Join(top, "det"), filepath.Join(top, "det"), "det", "", true},
	} {
		c, err := Locate(tc.dir)
		if err != nil {
			t.Fatalf("%s: %v", tc.dir, err)
		}
		if c.TopLevel != tc.top || c.CommonDir != common || c.Key != tc.key || c.Branch != tc.branch || c.Detached != tc.detached {
			t.Errorf("%s: got %+v", tc.dir, c)
		}
	}

	// A copy of a linked checkout names an admin dir that points elsewhere.
	if err := exec.Command("cp", "-a", filepath.Join(top, "w 1"), filepath.Join(top, "copy")).Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := Locate(filepath.Join(top, "copy")); decision.CodeOf(err) != decision.UnregisteredWorktree {
		t.Errorf("copy: %v", err)
	}
	// Outside any checkout, and a path that does not exist.
	os.Mkdir(filepath.Join(top, "plain"), 0o755)
	for _, d := range []string{filepath.Join(top, "plain"), filepath.Join(top, "missing")} {
		if _, err := Locate(d); decision.CodeOf(err) != decision.NotAGitRepository {
			t.Errorf("%s: %v", d, err)
		}
	}
	// Inside the git dir itself.
	for _, d := range []string{filepath.Join(common, "worktrees", "det"), common} {
		if _, err := Locate(d); decision.CodeOf(err) != decision.NotAGitRepository {
			t.Errorf("%s: %v", d, err)
		}
	}
}

func TestLocks(t *testing.T) {
	common := t.TempDir()
	os.MkdirAll(AdminDir(common, "w"), 0o755)
	if _, locked, _ := ReadLock(common, "w"); locked {
		t.Fatal("locked from the start")
	}
	if err := CreateLock(common, "w", "wt: one"); err != nil {
		t.Fatal(err)
	}
	if err := CreateLock(common, "w", "wt: two"); err != ErrLocked {
		t.Fatalf("second create: %v", err)
	}
	if b, _ := os.ReadFile(LockFile(common, "w")); string(b) != "wt: one\n" {
		t.Fatalf("lock file %q", b)
	}
	if removed, _ := RemoveLock(common, "w", "wt: two"); removed {
		t.Fatal("removed a lock with another reason")
	}
	if err := ReplaceLock(common, "w", "wt: three"); err != nil {
		t.Fatal(err)
	}
	if reason, locked, _ := ReadLock(common, "w"); !locked || reason != "wt: three" {
		t.Fatalf("after replace: %q %v", reason, locked)
	}
	if removed, err := RemoveLock(common, "w", "wt: three"); !removed || err != nil {
		t.Fatalf("remove: %v %v", removed, err)
	}
	if ents, _ := os.ReadDir(AdminDir(common, "w")); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}
