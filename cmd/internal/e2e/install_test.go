package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeInstallNonRoot runs the Makefile's install target as an
// unprivileged user (nobody, through setpriv): it installs into
// ~/.local/bin, says so, and prints the PATH line; with PREFIX=/usr/local
// it refuses with a hint instead of install's raw "Permission denied". The
// build and docs steps are skipped (make -o build -o docs): the binaries
// and pages are stand-ins.
func TestMakeInstallNonRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run make as another user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) is not installed")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	t.Parallel()
	// Not t.TempDir(): its parent is closed to other users.
	dir, err := os.MkdirTemp("", "wt-install-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	mk, err := os.ReadFile(filepath.Join("..", "..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	for _, d := range []string{filepath.Join(dir, "bin"), home} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string][]byte{"Makefile": mk, "build/docs/man/man1/wt-admin.1": []byte(".TH wt-admin 1\n"),
		"build/docs/completions/bash/wt-admin": []byte("complete\n"), "build/docs/completions/zsh/_wt-admin": []byte("#compdef\n"),
		"build/docs/completions/fish/wt-admin.fish": []byte("complete\n")}
	for _, b := range []string{"wt-exec", "wt-hook", "wt-gate", "wt-admin", "wt-fleet"} {
		files[filepath.Join("bin", b)] = []byte("#!/bin/sh\n")
	}
	for name, data := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{dir, filepath.Join(dir, "bin"), home} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	asNobody := func(args ...string) (string, error) {
		cmd := exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "make", "-o", "build", "-o", "docs"}, args...)...)
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := asNobody("install")
	if err != nil {
		t.Fatalf("make install as nobody: %v\n%s", err, out)
	}
	local := filepath.Join(home, ".local", "bin")
	if !strings.Contains(out, "installed wt-exec wt-hook wt-gate wt-admin wt-fleet into "+local) ||
		!strings.Contains(out, `add it: export PATH="`+local+`:$PATH"`) {
		t.Errorf("make install as nobody said:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(local, "wt-exec")); err != nil {
		t.Errorf("nothing installed into %s: %v", local, err)
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "share", "man", "man1", "wt-admin.1")); err != nil {
		t.Errorf("no man page installed: %v", err)
	}
	out, err = asNobody("install", "PREFIX=/usr/local")
	if err == nil || !strings.Contains(out, "make install: cannot write /usr/local/bin") || !strings.Contains(out, "hint: make install PREFIX=$HOME/.local") {
		t.Errorf("make install PREFIX=/usr/local as nobody: %v\n%s", err, out)
	}
}
