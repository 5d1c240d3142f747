package install

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/decision/decisiontest"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wtfixture"
)

// governedWorktree is a governed repository with one feature worktree
// (task T-1 at w1), the checkout of that worktree as wt-exec finds it.
func governedWorktree(t *testing.T) (*wtfixture.Repo, store.Allocation, gitrepo.Checkout) {
	t.Helper()
	f := wtfixture.New(t, policy.Change{})
	a := f.Allocate("T-1", "", "w1")
	c, err := gitrepo.Locate(a.WorktreePath)
	if err != nil {
		t.Fatal(err)
	}
	return f, a, c
}

func binOf(bin string) func() (string, error) { return func() (string, error) { return bin, nil } }

// TestCheckWorktreeKeepsAGatedAnswer: a worktree whose commits meet the
// gate is found so by git once; the answer is kept, reused while nothing
// it was read from changes, and asked of git again when something does.
func TestCheckWorktreeKeepsAGatedAnswer(t *testing.T) {
	t.Parallel()
	needsHooksDir(t)
	ctx := context.Background()
	f, _, c := governedWorktree(t)
	bin, _ := hookBin(t)
	if _, err := InstallGate(ctx, f.R.Git, bin, false); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(OwnDir(c.CommonDir), "reference-transaction")
	gc, err := CheckWorktree(ctx, c, binOf(bin))
	if err != nil || gc.By != want || gc.Meets == nil || gc.Repaired != "" {
		t.Fatalf("first check: %+v %v", gc, err)
	}
	if _, err := os.Stat(checkFile(c.CommonDir, c.Key)); err != nil {
		t.Fatalf("no answer kept: %v", err)
	}
	if gc, err := CheckWorktree(ctx, c, binOf(bin)); err != nil || gc.By != want || gc.Meets != nil {
		t.Fatalf("second check, nothing changed: %+v %v, want the kept answer", gc, err)
	}
	if by, why, _, err := GateState(ctx, c); err != nil || by != want || why != "" {
		t.Fatalf("GateState: %q %q %v", by, why, err)
	}
	gittest.Git(t, f.Dir, "config", "wt.test", "changed")
	if gc, err := CheckWorktree(ctx, c, binOf(bin)); err != nil || gc.By != want || gc.Meets == nil {
		t.Fatalf("after the config changed: %+v %v, want git asked again", gc, err)
	}
	if msg := Ungated(ctx, c.TopLevel); msg != "" {
		t.Errorf("Ungated: %q", msg)
	}
}

// TestCheckWorktreeWhereTheGateIsOff: with no gate installed, a launch is
// refused (HOOKS_MISSING, naming the fix) when no wt-hook can be found,
// and nothing is written; when the operator switched the gate off it is
// said, not undone; otherwise the gate is installed, wt's own hooks'
// switches in the worktree's config are cleared, and the repair said.
func TestCheckWorktreeWhereTheGateIsOff(t *testing.T) {
	t.Parallel()
	needsHooksDir(t)
	ctx := context.Background()
	f, a, c := governedWorktree(t)
	gittest.Git(t, f.Dir, "config", "extensions.worktreeConfig", "true")
	cw := filepath.Join(gitrepo.AdminDir(c.CommonDir, c.Key), "config.worktree")
	os.WriteFile(cw, []byte("[hook \"wt-pre-commit\"]\n\tenabled = false\n"), 0o644)
	if msg := Ungated(ctx, a.WorktreePath); !strings.HasPrefix(msg, decision.HooksMissing) || !strings.Contains(msg, GateFix(a.WorktreePath)) {
		t.Errorf("Ungated: %q", msg)
	}

	before := snapshot(t, c.CommonDir)
	_, err := CheckWorktree(ctx, c, func() (string, error) { return "", errors.New("no wt-hook here") })
	d := decisiontest.WantHint(t, err, decision.HooksMissing, GateFix(c.TopLevel))
	if d.Facts["worktree_path"] != c.TopLevel {
		t.Errorf("facts: %v", d.Facts)
	}
	if after := snapshot(t, c.CommonDir); after != before {
		t.Errorf("a refused launch changed the git dir:\n%s\nwant:\n%s", after, before)
	}

	if err := SwitchOff(c.CommonDir); err != nil {
		t.Fatal(err)
	}
	gc, err := CheckWorktree(ctx, c, func() (string, error) { t.Error("wt-hook asked for"); return "", nil })
	if err != nil || gc.Off == "" || gc.By != "" {
		t.Fatalf("switched off: %+v %v", gc, err)
	}
	if err := SwitchOn(c.CommonDir); err != nil {
		t.Fatal(err)
	}

	bin, _ := hookBin(t)
	gc, err = CheckWorktree(ctx, c, binOf(bin))
	if err != nil || gc.Repaired == "" || gc.By != filepath.Join(OwnDir(c.CommonDir), "reference-transaction") {
		t.Fatalf("repair: %+v %v", gc, err)
	}
	if b, _ := os.ReadFile(cw); strings.Contains(string(b), "enabled") || !strings.Contains(string(b), OwnDir(c.CommonDir)) {
		t.Errorf("config.worktree after the repair:\n%s", b)
	}
	if ps, err := Check(filepath.Join(c.CommonDir, "hooks")); err != nil || len(ps) != 0 {
		t.Errorf("the hooks dir after the repair: %+v %v", ps, err)
	}
}

// TestCheckWorktreeUnderAnEnvironmentWithHooksOff: a launch from an
// environment whose git -c settings switch hooks off cannot be repaired
// by an install: refused, with the hint to launch without them.
func TestCheckWorktreeUnderAnEnvironmentWithHooksOff(t *testing.T) {
	needsHooksDir(t)
	ctx := context.Background()
	f, _, c := governedWorktree(t)
	bin, _ := hookBin(t)
	if _, err := InstallGate(ctx, f.R.Git, bin, false); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.hookspath'='/dev/null'")
	_, err := CheckWorktree(ctx, c, binOf(bin))
	decisiontest.WantHint(t, err, decision.HooksMissing, "env -u GIT_CONFIG_PARAMETERS")
}

// TestCheckGateFindsAWorktreeWithHooksOff: the repository's gate in place,
// a governed worktree whose own config switches hooks off (/dev/null,
// which its checks allow) is named, with the fix; the worktree's own
// core.hooksPath someone else set is left by uninstall.
func TestCheckGateFindsAWorktreeWithHooksOff(t *testing.T) {
	t.Parallel()
	needsHooksDir(t)
	ctx := context.Background()
	f, a, _ := governedWorktree(t)
	bin, _ := hookBin(t)
	if _, err := InstallGate(ctx, f.R.Git, bin, false); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, a.WorktreePath, "config", "--worktree", "core.hooksPath", "/dev/null")
	_, problems, err := CheckGate(ctx, f.R.Git, nil)
	if err != nil || len(problems) != 1 || problems[0].Path != a.WorktreePath || !strings.Contains(problems[0].Message, "task T-1") || problems[0].Fix == "" {
		t.Fatalf("CheckGate: %+v %v", problems, err)
	}
	ws, err := RemoveWorktrees(ctx, f.R.Git)
	if err != nil || len(ws) != 0 {
		t.Fatalf("RemoveWorktrees: %+v %v", ws, err)
	}
	if got := gittest.Git(t, a.WorktreePath, "config", "--worktree", "core.hooksPath"); got != "/dev/null" {
		t.Errorf("core.hooksPath %q after RemoveWorktrees", got)
	}
}

// TestEnsureWorktreesSkipsWhatItCannotTrust: a governed worktree whose
// checkout is gone, or whose git files lead elsewhere, is skipped and said
// so; nothing is written for it.
func TestEnsureWorktreesSkipsWhatItCannotTrust(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := wtfixture.New(t, policy.Change{})
	gone := f.Allocate("T-1", "", "w1")
	odd := f.Allocate("T-2", "", "w2")
	os.RemoveAll(gone.WorktreePath)
	os.WriteFile(filepath.Join(odd.WorktreePath, ".git"), []byte("gitdir: /elsewhere\n"), 0o644)
	ws, err := EnsureWorktrees(ctx, f.R.Git, nil)
	if err != nil || len(ws) != 2 {
		t.Fatalf("EnsureWorktrees: %+v %v", ws, err)
	}
	for _, w := range ws {
		want := map[string]string{gone.WorktreePath: "skipped: its checkout is not there", odd.WorktreePath: "skipped: " + decision.GitMetadataUntrusted}[w.Path]
		if want == "" || !strings.HasPrefix(w.Changed, want) || w.HooksPath != "" {
			t.Errorf("%s: %+v", w.Path, w)
		}
	}
	if _, err := os.Stat(filepath.Join(gitrepo.AdminDir(f.R.Git.CommonDir, odd.WorktreeKey), "config.worktree")); !os.IsNotExist(err) {
		t.Errorf("config.worktree written for an untrusted worktree: %v", err)
	}
}
