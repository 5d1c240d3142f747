package install

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/decision/decisiontest"
	"github.com/wt-tool/wt/internal/gittest"
)

// TestInstallRefusesTwoForeignHooks: a foreign hook with another foreign
// hook already kept beside it under the chained name is refused, neither
// being overwritten, and the hooks dir is left as it was.
func TestInstallRefusesTwoForeignHooks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := Hooks[0]
	writeExecutable(t, filepath.Join(dir, first), "#!/bin/sh\necho mine\n")
	writeExecutable(t, filepath.Join(dir, first+ChainSuffix), "#!/bin/sh\necho also mine\n")
	before := snapshot(t, dir)
	_, err := Install(dir, "/bin/wt-hook")
	decisiontest.WantHint(t, err, decision.HookConflict, "merge them by hand")
	if after := snapshot(t, dir); after != before {
		t.Errorf("the hooks dir after a refusal:\n%s\nwant:\n%s", after, before)
	}
	// Uninstall leaves both, saying so.
	res, err := Uninstall(dir)
	if err != nil || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "wt did not write either") {
		t.Fatalf("Uninstall: %+v %v", res, err)
	}
	if after := snapshot(t, dir); after != before {
		t.Errorf("the hooks dir after uninstall:\n%s\nwant:\n%s", after, before)
	}
}

// TestWriteShimFileRefusesAForeignFile: where a file of wt's alone goes (a
// configured hook's command, a gitolite repo-specific hook), a file that
// is not a wt shim is refused and left as it was; an older shim is
// updated, the current one left.
func TestWriteShimFileRefusesAForeignFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "pre-commit")
	writeExecutable(t, p, "#!/bin/sh\necho mine\n")
	_, err := writeShimFile(p, "pre-commit", "/bin/wt-hook")
	decisiontest.WantHint(t, err, decision.HookConflict, "mv ")
	if b, _ := os.ReadFile(p); string(b) != "#!/bin/sh\necho mine\n" {
		t.Fatalf("the foreign file changed: %q", b)
	}
	os.Remove(p)
	for _, want := range []string{"installed", "unchanged"} {
		if got, err := writeShimFile(p, "pre-commit", "/bin/wt-hook"); err != nil || got != want {
			t.Fatalf("writeShimFile: %q %v, want %q", got, err, want)
		}
	}
	if got, err := writeShimFile(p, "pre-commit", "/opt/wt-hook"); err != nil || got != "updated" || !isShim(p, "pre-commit") {
		t.Fatalf("another binary: %q %v", got, err)
	}
}

// TestInstallConfigRefusesAForeignCommandFile: a file of someone else's
// where wt's configured hook's shim goes is refused; the file stays and no
// hook is registered.
func TestInstallConfigRefusesAForeignCommandFile(t *testing.T) {
	t.Parallel()
	g, _ := plainRepo(t)
	p := filepath.Join(ConfigDir(g.CommonDir), Hooks[0])
	writeExecutable(t, p, "#!/bin/sh\necho mine\n")
	configBefore, _ := os.ReadFile(filepath.Join(g.CommonDir, "config"))
	_, err := InstallConfig(context.Background(), g, "/bin/wt-hook")
	decisiontest.Want(t, err, decision.HookConflict)
	if b, _ := os.ReadFile(p); string(b) != "#!/bin/sh\necho mine\n" {
		t.Errorf("the foreign file changed: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(g.CommonDir, "config")); string(b) != string(configBefore) {
		t.Errorf("the config changed:\n%s", b)
	}
}

// TestInstallConfigRefusesAnEventSwitchedOff: hook.H.enabled = false in
// the repository's config switches off everyone's configured hooks of H,
// so it is the user's to remove: refused, with the command, and nothing
// written.
func TestInstallConfigRefusesAnEventSwitchedOff(t *testing.T) {
	t.Parallel()
	g, _ := plainRepo(t)
	gittest.Git(t, g.TopLevel, "config", "hook."+Hooks[0]+".enabled", "off")
	configBefore, _ := os.ReadFile(filepath.Join(g.CommonDir, "config"))
	_, err := InstallConfig(context.Background(), g, "/bin/wt-hook")
	decisiontest.WantHint(t, err, decision.HookConflict, "--unset-all hook."+Hooks[0]+".enabled")
	if b, _ := os.ReadFile(filepath.Join(g.CommonDir, "config")); string(b) != string(configBefore) {
		t.Errorf("the config changed:\n%s", b)
	}
	if ents, _ := os.ReadDir(ConfigDir(g.CommonDir)); len(ents) != 0 {
		t.Errorf("shims written: %v", ents)
	}
}
