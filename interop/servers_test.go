//go:build wt_network

package interop_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runner runs a program in dir with env added to this process's, and
// fails the test unless it succeeds exactly when wantOK; it returns what
// the program printed.
type runner func(dir string, wantOK bool, env []string, name string, args ...string) string

// serverBins makes a directory every user of this machine can read (named
// from prefix, removed when the test ends) and builds wt's binaries into
// its bin/: the server users of a test run them from their hooks.
func serverBins(t *testing.T, prefix string) (top, bin string, sh runner) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("needs root: it makes server users and runs servers as them (make interop runs as root)")
	}
	top, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	os.Chmod(top, 0o755)
	bin = filepath.Join(top, "bin")
	sh = newRunner(t)
	buildWT(sh, bin)
	sh(top, true, nil, "chmod", "-R", "a+rX", top)
	return top, bin, sh
}

// newRunner is a runner that fails tb.
func newRunner(tb testing.TB) runner {
	return func(dir string, wantOK bool, env []string, name string, args ...string) string {
		tb.Helper()
		c := exec.Command(name, args...)
		c.Dir, c.Env = dir, append(os.Environ(), env...)
		out, err := c.CombinedOutput()
		if (err == nil) != wantOK {
			tb.Fatalf("%s %v: %v (want success %v)\n%s", filepath.Base(name), args, err, wantOK, out)
		}
		return string(out)
	}
}

// buildWT builds wt's binaries into bin, static as make builds them.
func buildWT(sh runner, bin string) {
	root, _ := filepath.Abs("..")
	sh(root, true, []string{"CGO_ENABLED=0"}, "go", "build", "-tags", "urfave_cli_no_docs", "-o", bin+"/", "./cmd/wt-admin", "./cmd/wt-exec", "./cmd/wt-hook", "./cmd/wt-gate")
}

// sharingGroup makes group and each user (a member of it) where missing,
// and adds the existing ones to it.
func sharingGroup(sh runner, group string, users ...string) {
	if exec.Command("getent", "group", group).Run() != nil {
		sh("/", true, nil, "groupadd", group)
	}
	for _, u := range users {
		if exec.Command("id", u).Run() != nil {
			sh("/", true, nil, "useradd", "-m", "-s", "/bin/sh", "-G", group, u)
		} else {
			sh("/", true, nil, "usermod", "-a", "-G", group, u)
		}
	}
}

// clientEnv is the environment of the clients of a test's server: wt's
// binaries from bin first on PATH, a home of their own under work, a
// committer, no lease inherited from the test's environment, and extra.
func clientEnv(bin, work string, extra ...string) []string {
	return append([]string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + filepath.Join(work, "home"),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@wt.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@wt.invalid",
		"WT_CLIENT_ID=", "WT_HOLDER_PID=", "WT_LEASE_ID="}, extra...)
}

// clientRunner is a runner in clientEnv, wt's binaries named by their
// names.
func clientRunner(tb testing.TB, sh runner, bin, work string, extra ...string) func(dir string, wantOK bool, name string, args ...string) string {
	env := clientEnv(bin, work, extra...)
	return func(dir string, wantOK bool, name string, args ...string) string {
		tb.Helper()
		if strings.HasPrefix(name, "wt-") {
			name = filepath.Join(bin, name)
		}
		return sh(dir, wantOK, env, name, args...)
	}
}
