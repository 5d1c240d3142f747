// Package packaging_test builds wt's .deb as `make package` does (nfpm with
// the repository's nfpm.yaml) and installs it into a scratch root.
package packaging_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDebPackage builds the binaries, the man pages and completions, and the
// .deb (with the nfpm version the Makefile pins, installed into bin/tools
// when missing), unpacks it with dpkg-deb into a scratch root, and runs
// wt-admin --version from there; the man pages and completions are where
// man and the shells look.
func TestDebPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries and a package")
	}
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("dpkg-deb is not installed")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	run := func(dir string, env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	nfpm := filepath.Join(root, "bin", "tools", "nfpm")
	if _, err := os.Stat(nfpm); err != nil {
		mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
		if err != nil {
			t.Fatal(err)
		}
		_, rest, _ := strings.Cut(string(mk), "NFPM_VERSION ?= ")
		version, _, _ := strings.Cut(rest, "\n")
		run(root, []string{"GOBIN=" + filepath.Dir(nfpm), "GOFLAGS="}, "go", "install", "github.com/goreleaser/nfpm/v2/cmd/nfpm@"+strings.TrimSpace(version))
	}
	work := t.TempDir()
	for _, f := range []string{"nfpm.yaml", "LICENSE"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(root, []string{"CGO_ENABLED=0"}, "go", "build", "-trimpath", "-tags", "urfave_cli_no_docs",
		"-ldflags", "-X github.com/wt-tool/wt/cmd/internal/cli.stamped=v1.2.3-pkgtest", "-o", filepath.Join(work, "bin")+"/",
		"./cmd/wt-exec", "./cmd/wt-hook", "./cmd/wt-admin", "./cmd/wt-fleet")
	run(root, nil, "go", "run", "-tags", "wt_gendocs", "./cmd/internal/gendocs", filepath.Join(work, "build", "docs"))
	run(work, []string{"PKG_VERSION=1.2.3~pkgtest"}, nfpm, "pkg", "--packager", "deb", "--target", work+"/")
	debs, _ := filepath.Glob(filepath.Join(work, "*.deb"))
	if len(debs) != 1 {
		t.Fatalf("want one .deb, got %v", debs)
	}
	if v := strings.TrimSpace(run(work, nil, "dpkg-deb", "-f", debs[0], "Version")); v != "1.2.3~pkgtest" {
		t.Errorf("package version %q", v)
	}
	scratch := filepath.Join(work, "root")
	run(work, nil, "dpkg-deb", "-x", debs[0], scratch)
	if out := run(work, nil, filepath.Join(scratch, "usr", "bin", "wt-admin"), "--version"); strings.TrimSpace(out) != "wt-admin version v1.2.3-pkgtest" {
		t.Errorf("wt-admin --version from the package: %q", out)
	}
	for _, f := range []string{"usr/bin/wt-exec", "usr/bin/wt-hook", "usr/bin/wt-fleet", "usr/share/man/man1/wt-admin.1",
		"usr/share/man/man1/wt-fleet.1", "usr/share/bash-completion/completions/wt-admin", "usr/share/zsh/vendor-completions/_wt-exec",
		"usr/share/fish/vendor_completions.d/wt-hook.fish", "usr/share/doc/wt/copyright"} {
		if _, err := os.Stat(filepath.Join(scratch, f)); err != nil {
			t.Errorf("the package lacks /%s", f)
		}
	}
}
