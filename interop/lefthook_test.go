//go:build wt_network

// Built only with the wt_network tag (make interop): it installs a tool
// from the Go proxy, and make test never reaches the network.

// Package interop_test runs wt beside the hook managers people use, with
// the real programs.
package interop_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// lefthookVersion is the lefthook the bench measures and this test runs.
const lefthookVersion = "v1.13.6"

// TestLefthookCoexistence: wt set up first, then lefthook installed, which
// renames wt's pre-commit shim away and writes its own. doctor says so and
// names the fix; wt-hook install chains lefthook's hook behind wt's shim,
// so both run; a commit without the lease is refused by the gate, and
// with it lefthook's command runs. Should lefthook rewrite pre-commit
// again (lefthook install, or its automatic sync), the
// reference-transaction gate, which lefthook does not manage, still
// refuses the commit.
func TestLefthookCoexistence(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries and lefthook")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]string{}
	run := func(dir string, env []string, wantOK bool, name string, args ...string) string {
		t.Helper()
		if p, ok := tools[name]; ok {
			name = p // exec.Command looks names up on this process's PATH
		}
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), append([]string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@wt.invalid",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@wt.invalid", "WT_CLIENT_ID=", "WT_HOLDER_PID=", "WT_LEASE_ID="}, env...)...)
		out, err := cmd.CombinedOutput()
		if (err == nil) != wantOK {
			t.Fatalf("%s %v: %v (want success %v)\n%s", name, args, err, wantOK, out)
		}
		return string(out)
	}
	lefthook := filepath.Join(root, "bin", "tools", "lefthook")
	if _, err := os.Stat(lefthook); err != nil {
		run(root, []string{"GOBIN=" + filepath.Dir(lefthook), "GOFLAGS="}, true, "go", "install", "github.com/evilmartians/lefthook@"+lefthookVersion)
	}
	bin := filepath.Join(t.TempDir(), "bin")
	run(root, []string{"CGO_ENABLED=0"}, true, "go", "build", "-tags", "urfave_cli_no_docs", "-o", bin+"/", "./cmd/wt-admin", "./cmd/wt-exec", "./cmd/wt-hook")
	path := []string{"PATH=" + bin + ":" + filepath.Dir(lefthook) + ":" + os.Getenv("PATH")}
	tools["lefthook"] = lefthook
	for _, b := range []string{"wt-admin", "wt-exec", "wt-hook"} {
		tools[b] = filepath.Join(bin, b)
	}

	top := t.TempDir()
	repo, w1 := filepath.Join(top, "repo"), filepath.Join(top, "w1")
	run(top, path, true, "git", "init", "-q", "-b", "main", repo)
	run(repo, path, true, "git", "commit", "-q", "--allow-empty", "-m", "init")
	run(repo, path, true, "wt-admin", "init")
	config := "pre-commit:\n  commands:\n    hello:\n      run: echo lefthook-ran > " + filepath.Join(top, "lefthook-ran") + "\n"
	if err := os.WriteFile(filepath.Join(repo, "lefthook.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	run(repo, path, true, "git", "add", "lefthook.yml")
	run(repo, path, true, "git", "commit", "-q", "-m", "lefthook config")
	run(repo, path, true, "lefthook", "install")
	hooks := filepath.Join(repo, ".git", "hooks")
	if b, _ := os.ReadFile(filepath.Join(hooks, "pre-commit")); !strings.Contains(string(b), "lefthook") {
		t.Fatalf("lefthook did not take pre-commit:\n%s", b)
	}
	out := run(repo, path, false, "wt-admin", "doctor")
	if !strings.Contains(out, "the pre-commit hook is someone else's") || !strings.Contains(out, "wt-hook -C "+repo+" install") {
		t.Fatalf("doctor after lefthook install:\n%s", out)
	}
	out = run(repo, path, true, "wt-hook", "install")
	if !strings.Contains(out, "pre-commit.wt-chained") {
		t.Fatalf("wt-hook install did not chain lefthook's hook:\n%s", out)
	}
	run(repo, path, true, "wt-admin", "doctor")

	run(repo, path, true, "wt-admin", "allocate", "--task", "T-1", "--owner", "alice", w1)
	out = run(w1, path, false, "git", "commit", "-q", "--allow-empty", "-m", "rogue")
	if !strings.Contains(out, "WRITER_LEASE_REQUIRED") {
		t.Fatalf("an unentitled commit:\n%s", out)
	}
	marker := filepath.Join(top, "lefthook-ran")
	os.Remove(marker)
	// lefthook skips its commands when nothing is staged: stage a file.
	if err := os.WriteFile(filepath.Join(w1, "work.txt"), []byte("work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(w1, path, true, "git", "add", "work.txt")
	run(w1, path, true, "wt-exec", "--", "git", "commit", "-q", "-m", "entitled")
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("lefthook's command did not run in the entitled commit")
	}

	// lefthook rewrites pre-commit again: the transaction gate still holds.
	run(repo, path, true, "lefthook", "install", "--force")
	out = run(w1, path, false, "git", "commit", "-q", "--allow-empty", "--no-verify", "-m", "rogue again")
	if !strings.Contains(out, "WRITER_LEASE_REQUIRED") {
		t.Fatalf("after lefthook rewrote pre-commit, an unentitled commit:\n%s", out)
	}

	// lefthook install, after wt, kept wt's shim as pre-commit.old (which
	// lefthook does not run). wt-hook install removes it and chains
	// lefthook's hook again; wt-hook uninstall leaves no wt shim anywhere and
	// lefthook's hook byte for byte; lefthook uninstall then has no wt shim
	// to put back.
	lefthookHook, err := os.ReadFile(filepath.Join(hooks, "pre-commit"))
	if err != nil {
		t.Fatal(err)
	}
	run(repo, path, true, "lefthook", "install", "--force")
	out = run(repo, path, true, "wt-hook", "install")
	if _, err := os.Stat(filepath.Join(hooks, "pre-commit.old")); err == nil {
		t.Fatalf("wt-hook install left a pre-commit.old:\n%s", out)
	}
	run(repo, path, true, "wt-hook", "uninstall")
	assertNoShim(t, hooks)
	if b, _ := os.ReadFile(filepath.Join(hooks, "pre-commit")); string(b) != string(lefthookHook) {
		t.Fatalf("after wt-hook uninstall, pre-commit is not lefthook's hook as it was:\n%s", b)
	}
	run(repo, path, true, "lefthook", "uninstall")
	assertNoShim(t, hooks)

	// wt first, then lefthook, then wt-hook uninstall without a reinstall:
	// the shim lefthook kept as pre-commit.old goes too.
	run(repo, path, true, "wt-hook", "install")
	run(repo, path, true, "lefthook", "install")
	if _, err := os.Stat(filepath.Join(hooks, "pre-commit.old")); err != nil {
		t.Fatalf("lefthook install did not keep wt's shim as pre-commit.old: %v", err)
	}
	run(repo, path, true, "wt-hook", "uninstall")
	assertNoShim(t, hooks)
	run(repo, path, true, "lefthook", "uninstall")
	assertNoShim(t, hooks)
}

// assertNoShim fails when any file of dir holds "wt-hook shim".
func assertNoShim(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil && strings.Contains(string(b), "wt-hook shim") {
			t.Errorf("%s is a wt shim", e.Name())
		}
	}
}
