// Package gittest finds the gits the tests run: the git on PATH (Debian
// 12's 2.39 on the machines wt is developed on) and, when the environment
// names one, a newer git (2.55, built by scripts/git-newer.sh) for what
// only newer gits do: reftable repositories (2.45) and hooks defined in
// configuration (2.54); and what core's unit tests share to make real
// repositories (Setenv, Git, Repo).
package gittest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/gitversion"
)

// NewerEnv names the environment variable that holds the path of a newer
// git binary for the tests (make test-newer-git sets it).
const NewerEnv = "WT_TEST_GIT_NEWER"

// VersionOf runs `git version` of the git binary at path.
func VersionOf(path string) (gitversion.Version, error) {
	out, err := exec.Command(path, "version").Output()
	if err != nil {
		return gitversion.Version{}, fmt.Errorf("%s version: %w", path, err)
	}
	return gitversion.Parse(string(out))
}

// Newer returns the git the environment names in WT_TEST_GIT_NEWER, or
// the git on PATH, whichever is at least major.minor; the test is skipped,
// saying how to run it, when neither is.
func Newer(tb testing.TB, major, minor int) string {
	tb.Helper()
	var cands []string
	if p := os.Getenv(NewerEnv); p != "" {
		cands = append(cands, p)
	}
	if p, err := exec.LookPath("git"); err == nil {
		cands = append(cands, p)
	}
	for _, p := range cands {
		if v, err := VersionOf(p); err == nil && v.AtLeast(major, minor) {
			return p
		}
	}
	tb.Skipf("needs git %d.%d or later: set %s to one (make test-newer-git builds git 2.55 and does)", major, minor, NewerEnv)
	return ""
}

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

// Unset are the variables of the caller's environment that would change
// what a test's git does: a hook's repository (GIT_DIR and the like, set
// when go test runs from a git hook), configuration given on a command
// line (git -c), dates. Setenv removes them.
var Unset = []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
	"GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"}

// Setenv sets Env, and removes Unset, for the whole test binary: a
// package's TestMain calls it before any test runs, so that tests may run
// in parallel (t.Setenv may not).
func Setenv() {
	for _, k := range Unset {
		os.Unsetenv(k)
	}
	for k, v := range Env {
		os.Setenv(k, v)
	}
}

// Git runs git in dir and returns its output, trimmed; it fails the test
// when git fails.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
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

// Outside returns a new temporary directory that no git repository
// contains, or skips the test where the machine's temporary directory is
// inside one (a test of what happens outside any repository would act on
// that one).
func Outside(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if exec.Command("git", "-C", dir, "rev-parse", "--git-dir").Run() == nil {
		t.Skipf("%s is inside a git repository", dir)
	}
	return dir
}
