//go:build wt_network

// Built only with the wt_network tag (make interop): it installs a tool
// from the Go proxy, and make test never reaches the network.

// Package packaging_test builds wt's .deb and .rpm as `make package` does
// (nfpm with the repository's nfpm.yaml) and unpacks each into a scratch
// root.
package packaging_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackages builds the binaries, the man pages and completions, and the
// packages (with the nfpm version the Makefile pins, installed into
// bin/tools when missing); each package is unpacked into a scratch root
// (dpkg-deb -x; rpm2cpio | cpio), wt-admin --version runs from there, and
// the man pages and completions are where man and the shells look.
func TestPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries and packages")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, dir string, env []string, name string, args ...string) string {
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
		run(t, root, []string{"GOBIN=" + filepath.Dir(nfpm), "GOFLAGS="}, "go", "install", "github.com/goreleaser/nfpm/v2/cmd/nfpm@"+strings.TrimSpace(version))
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
	run(t, root, []string{"CGO_ENABLED=0"}, "go", "build", "-trimpath", "-tags", "urfave_cli_no_docs,grpcnotrace",
		"-ldflags", "-X github.com/wt-tool/wt/cmd/internal/textout.stamped=v1.2.3-pkgtest", "-o", filepath.Join(work, "bin")+"/",
		"./cmd/wt-exec", "./cmd/wt-hook", "./cmd/wt-gate", "./cmd/wt-admin", "./cmd/wt-fleet")
	run(t, root, nil, "go", "run", "-tags", "wt_gendocs", "./cmd/internal/gendocs", filepath.Join(work, "build", "docs"))

	// unpacked checks a package unpacked into scratch.
	unpacked := func(t *testing.T, scratch string, files []string) {
		if out := run(t, work, nil, filepath.Join(scratch, "usr", "bin", "wt-admin"), "--version"); strings.TrimSpace(out) != "wt-admin version v1.2.3-pkgtest" {
			t.Errorf("wt-admin --version from the package: %q", out)
		}
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(scratch, f)); err != nil {
				t.Errorf("the package lacks /%s", f)
			}
		}
	}
	common := []string{"usr/bin/wt-exec", "usr/bin/wt-hook", "usr/bin/wt-gate", "usr/bin/wt-fleet", "usr/share/man/man1/wt-admin.1",
		"usr/share/man/man1/wt-fleet.1", "usr/share/bash-completion/completions/wt-admin",
		"usr/share/fish/vendor_completions.d/wt-hook.fish", "usr/share/doc/wt/copyright"}
	pkg := func(t *testing.T, packager string) string {
		dir := filepath.Join(work, packager)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		run(t, work, []string{"PKG_VERSION=1.2.3~pkgtest"}, nfpm, "pkg", "--packager", packager, "--target", dir+"/")
		got, _ := filepath.Glob(filepath.Join(dir, "*."+packager))
		if len(got) != 1 {
			t.Fatalf("want one .%s, got %v", packager, got)
		}
		return got[0]
	}

	t.Run("deb", func(t *testing.T) {
		if _, err := exec.LookPath("dpkg-deb"); err != nil {
			t.Skip("dpkg-deb is not installed")
		}
		deb := pkg(t, "deb")
		if v := strings.TrimSpace(run(t, work, nil, "dpkg-deb", "-f", deb, "Version")); v != "1.2.3~pkgtest" {
			t.Errorf("package version %q", v)
		}
		scratch := filepath.Join(work, "deb-root")
		run(t, work, nil, "dpkg-deb", "-x", deb, scratch)
		unpacked(t, scratch, append(common, "usr/share/zsh/vendor-completions/_wt-exec"))
	})
	t.Run("rpm", func(t *testing.T) {
		for _, tool := range []string{"rpm2cpio", "cpio"} {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("%s is not installed (.ci/run installs it)", tool)
			}
		}
		rpm := pkg(t, "rpm")
		if !strings.Contains(filepath.Base(rpm), "1.2.3~pkgtest") {
			t.Errorf("package file %s does not carry the version", filepath.Base(rpm))
		}
		scratch := filepath.Join(work, "rpm-root")
		if err := os.Mkdir(scratch, 0o755); err != nil {
			t.Fatal(err)
		}
		// The archive's paths are absolute: --no-absolute-filenames keeps
		// them below scratch (without it, cpio writes into /usr).
		run(t, scratch, nil, "sh", "-c", `rpm2cpio "$0" | cpio -idm --quiet --no-absolute-filenames`, rpm)
		unpacked(t, scratch, append(common, "usr/share/zsh/vendor-completions/_wt-exec"))
	})
}
