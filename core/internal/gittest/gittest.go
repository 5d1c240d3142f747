// Package gittest is what core's unit tests share to make real git
// repositories: a git kept away from the configuration of the user and of
// the machine, and a repository with one commit on main.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Env is the environment of every git a test runs, and of the git the
// package under test runs: no global or system configuration, one
// identity.
var Env = map[string]string{
	"GIT_CONFIG_GLOBAL":   "/dev/null",
	"GIT_CONFIG_NOSYSTEM": "1",
	"GIT_AUTHOR_NAME":     "wt test",
	"GIT_AUTHOR_EMAIL":    "test@wt.invalid",
	"GIT_COMMITTER_NAME":  "wt test",
	"GIT_COMMITTER_EMAIL": "test@wt.invalid",
}

// Setenv sets Env for the whole test binary: a package's TestMain calls it
// before any test runs, so that tests may run in parallel (t.Setenv may
// not).
func Setenv() {
	for k, v := range Env {
		os.Setenv(k, v)
	}
}

// Git runs git in dir and returns its output, trimmed; it fails the test
// when git fails.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Repo makes a repository in a new temporary directory, top (symlinks
// resolved): its canonical checkout top/repo, on main at one empty commit,
// base.
func Repo(t testing.TB) (top, dir, base string) {
	t.Helper()
	top, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(top, "repo")
	Git(t, top, "init", "-q", "-b", "main", dir)
	Git(t, dir, "commit", "-q", "--allow-empty", "-m", "one")
	return top, dir, Git(t, dir, "rev-parse", "HEAD")
}
