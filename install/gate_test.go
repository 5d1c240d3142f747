package install

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wtfixture"
)

// needsHooksDir skips a test of the hooks-dir gate under a git that runs
// configured hooks (2.54 and later), where InstallGate writes those.
func needsHooksDir(t *testing.T) {
	t.Helper()
	v, err := gitrepo.GitVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v.ConfigHooks() {
		t.Skipf("git %s runs configured hooks: the gate is not a hooks dir's", v)
	}
}

// TestInstallGateInThePlainHooksDir: in a repository without a hook
// manager, the gate goes into the common dir's hooks (a foreign hook kept
// and run after it), wt's own dir runs those for the governed worktrees,
// each of which names it as its core.hooksPath; a commit in a governed
// worktree meets the gate and then the foreign hook. Uninstall puts the
// hooks dir back byte for byte and records that the gate is off.
func TestInstallGateInThePlainHooksDir(t *testing.T) {
	t.Parallel()
	needsHooksDir(t)
	ctx := context.Background()
	f := wtfixture.New(t, policy.Change{})
	a := f.Allocate("T-1", "", "w1")
	g := f.R.Git
	hooks := filepath.Join(g.CommonDir, "hooks")
	own := OwnDir(g.CommonDir)
	bin, log := hookBin(t)
	writeExecutable(t, filepath.Join(hooks, "pre-commit"), "#!/bin/sh\necho foreign pre-commit >>'"+log+"'\n")
	os.Chmod(filepath.Join(hooks, "pre-commit"), 0o700)
	before := snapshot(t, hooks)

	if _, problems, err := CheckGate(ctx, g, nil); err != nil || len(problems) != len(Hooks) {
		t.Fatalf("CheckGate before the install: %+v %v, want every hook missing", problems, err)
	}
	res, err := InstallGate(ctx, g, bin, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.HooksDir != hooks || len(res.Hooks) != len(Hooks) {
		t.Fatalf("InstallGate: %+v", res)
	}
	for _, h := range Hooks {
		if !isShim(filepath.Join(hooks, h), h) || !isShim(filepath.Join(own, h), h) || !isShim(filepath.Join(own, h+".old"), h) {
			t.Errorf("%s: not wt's shim in the hooks dir, wt's own dir and its .old copy", h)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(hooks, "pre-commit"+ChainSuffix)); !strings.Contains(string(b), "foreign pre-commit") {
		t.Fatalf("the foreign hook is not kept: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(own, chainFile)); string(b) != hooks+"\nbase\n" {
		t.Errorf("wt's own dir runs %q", b)
	}
	if len(res.Worktrees) != 1 || res.Worktrees[0].Path != a.WorktreePath || res.Worktrees[0].HooksPath != own || res.Worktrees[0].Changed == "" {
		t.Fatalf("worktrees: %+v", res.Worktrees)
	}

	gittest.Git(t, a.WorktreePath, "commit", "-q", "--allow-empty", "-m", "gated")
	b, _ := os.ReadFile(log)
	if !strings.Contains(string(b), "run pre-commit\nforeign pre-commit\n") || !strings.Contains(string(b), "run reference-transaction prepared") {
		t.Fatalf("a commit in the governed worktree ran:\n%s", b)
	}
	if dir, problems, err := CheckGate(ctx, g, nil); err != nil || dir != hooks || len(problems) != 0 {
		t.Fatalf("CheckGate: %s %+v %v", dir, problems, err)
	}
	if _, installed, err := EnsureGate(ctx, g, bin); err != nil || installed {
		t.Fatalf("EnsureGate over a whole gate: installed %v %v", installed, err)
	}
	st, err := StatusGate(ctx, g)
	if err != nil || st.HooksDir != hooks || len(st.Worktrees) != 1 || st.Worktrees[0].HooksPath != own || st.Meets == nil || !st.Meets.Gated("reference-transaction") {
		t.Fatalf("StatusGate: %+v %v", st, err)
	}

	un, err := UninstallGate(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, hooks); after != before {
		t.Errorf("the hooks dir after uninstall:\n%s\nwant:\n%s", after, before)
	}
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Errorf("wt's own dir is still there: %v", err)
	}
	if len(un.Worktrees) != 1 || un.Worktrees[0].Changed != "its own core.hooksPath removed" {
		t.Errorf("worktrees after uninstall: %+v", un.Worktrees)
	}
	if b, _ := os.ReadFile(filepath.Join(gitrepo.AdminDir(g.CommonDir, a.WorktreeKey), "config.worktree")); strings.Contains(string(b), "hooksPath") {
		t.Errorf("config.worktree still names a hooks dir:\n%s", b)
	}
	if !SwitchedOff(g.CommonDir) {
		t.Error("the uninstall is not recorded as switching the gate off")
	}
	_, problems, err := CheckGate(ctx, g, nil)
	if err != nil || len(problems) != len(Hooks) || problems[0].Fix != GateFix(g.TopLevel) {
		t.Fatalf("CheckGate after uninstall: %+v %v", problems, err)
	}
	if _, err := InstallGate(ctx, g, bin, false); err != nil || SwitchedOff(g.CommonDir) {
		t.Fatalf("a new install leaves the gate switched off: %v", err)
	}
}

// TestEnsureBesideWithoutWtHookRefuses: with no wt-hook beside the running
// binary (a test binary has none), nothing is installed and nothing
// changes.
func TestEnsureBesideWithoutWtHookRefuses(t *testing.T) {
	t.Parallel()
	g, _ := plainRepo(t)
	before := snapshot(t, g.CommonDir)
	installed, where, err := EnsureBeside(context.Background(), g)
	if decision.CodeOf(err) != decision.HooksMissing || installed || where != "not installed" {
		t.Fatalf("EnsureBeside: %v %q %v", installed, where, err)
	}
	if after := snapshot(t, g.CommonDir); after != before {
		t.Errorf("the git dir changed:\n%s\nwant:\n%s", after, before)
	}
}
