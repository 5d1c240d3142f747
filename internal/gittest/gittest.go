// Package gittest finds the gits the tests run: the git on PATH (Debian
// 12's 2.39 on the machines wt is developed on) and, when the environment
// names one, a newer git (2.55, built by scripts/git-newer.sh) for what
// only newer gits do: reftable repositories (2.45) and hooks defined in
// configuration (2.54).
package gittest

import (
	"fmt"
	"os"
	"os/exec"
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
