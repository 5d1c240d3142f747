// Tests of three faults found while covering the package, each of which
// failed before its fix: a refusal on a later hook or event left the
// earlier ones written, and uninstall dropped its word of the shims it
// removed from the common dir's hooks.

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

// TestInstallRefusalOnALaterHookWritesNothing: a conflict on the last of
// the hooks is refused with the hooks dir as it was, the hooks before it
// not installed.
func TestInstallRefusalOnALaterHookWritesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	last := Hooks[len(Hooks)-1]
	writeExecutable(t, filepath.Join(dir, Hooks[0]), "#!/bin/sh\necho mine\n")
	writeExecutable(t, filepath.Join(dir, last), "#!/bin/sh\necho mine\n")
	writeExecutable(t, filepath.Join(dir, last+ChainSuffix), "#!/bin/sh\necho also mine\n")
	before := snapshot(t, dir)
	_, err := Install(dir, "/bin/wt-hook")
	decisiontest.Want(t, err, decision.HookConflict)
	if after := snapshot(t, dir); after != before {
		t.Errorf("the hooks dir after a refusal:\n%s\nwant:\n%s", after, before)
	}
}

// TestInstallConfigRefusalOnALaterEventWritesNothing: an event switched
// off that is not the first of the hooks is refused with the repository's
// config as it was, no hook of an earlier event registered.
func TestInstallConfigRefusalOnALaterEventWritesNothing(t *testing.T) {
	t.Parallel()
	g, _ := plainRepo(t)
	gittest.Git(t, g.TopLevel, "config", "hook."+Hooks[len(Hooks)-1]+".enabled", "false")
	configBefore, _ := os.ReadFile(filepath.Join(g.CommonDir, "config"))
	_, err := InstallConfig(context.Background(), g, "/bin/wt-hook")
	decisiontest.Want(t, err, decision.HookConflict)
	if b, _ := os.ReadFile(filepath.Join(g.CommonDir, "config")); string(b) != string(configBefore) {
		t.Errorf("the config after a refusal:\n%s\nwant:\n%s", b, configBefore)
	}
}

// TestUninstallGateSaysItRemovedEarlierShims: uninstalling a gate in wt's
// own dir also removes the shims an install before the hook manager left
// in the common dir's hooks, and says so.
func TestUninstallGateSaysItRemovedEarlierShims(t *testing.T) {
	t.Parallel()
	needsHooksDir(t)
	ctx := context.Background()
	bin, log := hookBin(t)
	g, _ := huskyRepo(t, true, log)
	plain := filepath.Join(g.CommonDir, "hooks")
	if _, err := Install(plain, bin); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallGate(ctx, g, bin, false); err != nil {
		t.Fatal(err)
	}
	res, err := UninstallGate(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "also removed wt's shims from "+plain) {
		t.Errorf("warnings %q, want the removal from %s said", res.Warnings, plain)
	}
}

// TestInstallConfigForeignShimFileWritesNothing: a file that is not wt's
// where a later event's shim goes is refused with the config and the
// other shims as they were, no hook of an earlier event registered.
func TestInstallConfigForeignShimFileWritesNothing(t *testing.T) {
	t.Parallel()
	g, _ := plainRepo(t)
	dir := ConfigDir(g.CommonDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeExecutable(t, filepath.Join(dir, Hooks[len(Hooks)-1]), "#!/bin/sh\necho mine\n")
	configBefore, _ := os.ReadFile(filepath.Join(g.CommonDir, "config"))
	before := snapshot(t, dir)
	_, err := InstallConfig(context.Background(), g, "/bin/wt-hook")
	decisiontest.Want(t, err, decision.HookConflict)
	if b, _ := os.ReadFile(filepath.Join(g.CommonDir, "config")); string(b) != string(configBefore) {
		t.Errorf("the config after a refusal:\n%s\nwant:\n%s", b, configBefore)
	}
	if after := snapshot(t, dir); after != before {
		t.Errorf("the shims' dir after a refusal:\n%s\nwant:\n%s", after, before)
	}
}
