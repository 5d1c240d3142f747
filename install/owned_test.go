package install

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/decision/decisiontest"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/internal/gittest"
)

// huskyRepo is a repository whose hook manager keeps its hooks in the
// working tree, as husky does: core.hooksPath .husky/_ (set in the
// repository's own config when local, else in the global config this
// test names), a generated and ignored directory holding its pre-commit
// and commit-msg, each noting its run in log.
func huskyRepo(t *testing.T, local bool, log string) (g *gitrepo.Repo, manager string) {
	t.Helper()
	g, _ = plainRepo(t)
	os.WriteFile(filepath.Join(g.TopLevel, ".gitignore"), []byte(".husky/_/\n"), 0o644)
	gittest.Git(t, g.TopLevel, "add", ".gitignore")
	gittest.Git(t, g.TopLevel, "commit", "-q", "-m", "ignore husky's generated dir")
	manager = filepath.Join(g.TopLevel, ".husky", "_")
	for _, h := range []string{"pre-commit", "commit-msg"} {
		writeExecutable(t, filepath.Join(manager, h), "#!/bin/sh\necho manager "+h+" >>'"+log+"'\n")
	}
	if local {
		gittest.Git(t, g.TopLevel, "config", "--local", "core.hooksPath", ".husky/_")
	} else {
		global := filepath.Join(t.TempDir(), "gitconfig")
		os.WriteFile(global, []byte("[core]\n\thooksPath = .husky/_\n"), 0o644)
		t.Setenv("GIT_CONFIG_GLOBAL", global)
	}
	return g, manager
}

// localHooksPath is core.hooksPath in the repository's own config ("" when
// unset).
func localHooksPath(t *testing.T, g *gitrepo.Repo) string {
	t.Helper()
	v, err := configValue(context.Background(), g, "--local")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestInstallGateTakesAManagersHooksPath: a hook manager's hooks dir in
// the working tree (set locally, or inherited from the global config) is
// taken over: core.hooksPath names wt's own dir, which runs the manager's
// hooks after the gate and forwards those it does not judge, for every
// worktree alike. Uninstall puts core.hooksPath back where it was set,
// removes shims an install before the manager left in the common dir's
// hooks, and leaves the manager's dir as it was.
func TestInstallGateTakesAManagersHooksPath(t *testing.T) {
	needsHooksDir(t)
	for _, local := range []bool{true, false} {
		scope := map[bool]string{true: "local", false: "inherited"}[local]
		t.Run(scope, func(t *testing.T) {
			ctx := context.Background()
			bin, log := hookBin(t)
			g, manager := huskyRepo(t, local, log)
			plain := filepath.Join(g.CommonDir, "hooks")
			// An install from before the manager came.
			if _, err := Install(plain, bin); err != nil {
				t.Fatal(err)
			}
			managerBefore := snapshot(t, manager)
			own := OwnDir(g.CommonDir)

			tg, err := PlanTarget(ctx, g)
			want := Target{Dir: own, Owned: true, Chain: ".husky/_", ChainLocal: local, Takeover: true, Before: manager}
			if err != nil || tg != want {
				t.Fatalf("PlanTarget: %+v %v, want %+v", tg, err, want)
			}
			if ps, err := CheckTarget(tg); err != nil || len(ps) != 1 || ps[0].Hook != "core.hooksPath" {
				t.Fatalf("CheckTarget before the takeover: %+v %v", ps, err)
			}
			if _, err := InstallGate(ctx, g, bin, false); err != nil {
				t.Fatal(err)
			}
			if got := localHooksPath(t, g); got != own {
				t.Fatalf("core.hooksPath %q, want wt's own dir", got)
			}
			if b, _ := os.ReadFile(filepath.Join(own, chainFile)); string(b) != ".husky/_\n"+map[bool]string{true: "local", false: "inherited"}[local]+"\n" {
				t.Errorf("chain file %q", b)
			}
			if b, err := os.ReadFile(filepath.Join(own, "commit-msg")); err != nil || !IsForwarder(b) {
				t.Errorf("no forwarder for the manager's commit-msg: %v", err)
			}
			if _, err := os.Stat(filepath.Join(own, "post-merge")); !os.IsNotExist(err) {
				t.Errorf("a forwarder for a hook the manager lacks: %v", err)
			}
			if tg, err := PlanTarget(ctx, g); err != nil || !tg.Owned || tg.Takeover || tg.Chain != ".husky/_" || tg.ChainLocal != local {
				t.Fatalf("PlanTarget after the install: %+v %v", tg, err)
			}

			gittest.Git(t, g.TopLevel, "commit", "-q", "--allow-empty", "-m", "through the manager")
			b, _ := os.ReadFile(log)
			if !strings.Contains(string(b), "run pre-commit\nmanager pre-commit\n") || !strings.Contains(string(b), "manager commit-msg") {
				t.Fatalf("a commit ran:\n%s", b)
			}

			if st, _ := Status(plain); !holdsShim(st) {
				t.Fatalf("the earlier install's shims are gone before the uninstall: %+v", st)
			}
			res, err := UninstallGate(ctx, g)
			if err != nil || len(res.Hooks) == 0 {
				t.Fatalf("UninstallGate: %+v %v", res, err)
			}
			wantLocal := map[bool]string{true: ".husky/_", false: ""}[local]
			if got := localHooksPath(t, g); got != wantLocal {
				t.Errorf("core.hooksPath in the repository's config %q, want %q", got, wantLocal)
			}
			if v, _ := configValue(ctx, g, ""); v != ".husky/_" {
				t.Errorf("core.hooksPath as git reads it: %q", v)
			}
			if _, err := os.Stat(own); !os.IsNotExist(err) {
				t.Errorf("wt's own dir is still there: %v", err)
			}
			if st, _ := Status(plain); holdsShim(st) {
				t.Errorf("the earlier install's shims are still there: %+v", st)
			}
			if after := snapshot(t, manager); after != managerBefore {
				t.Errorf("the manager's dir changed:\n%s\nwant:\n%s", after, managerBefore)
			}
		})
	}
}

// TestInstallTargetRefusesAForeignFileInItsOwnDir: a file of someone
// else's where wt's forwarder goes is never overwritten, and the takeover
// is not made: core.hooksPath still names the manager's dir.
func TestInstallTargetRefusesAForeignFileInItsOwnDir(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin, log := hookBin(t)
	g, _ := huskyRepo(t, true, log)
	mine := filepath.Join(OwnDir(g.CommonDir), "commit-msg")
	writeExecutable(t, mine, "#!/bin/sh\necho mine\n")
	tg, err := PlanTarget(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	_, err = InstallTarget(ctx, g, tg, bin)
	decisiontest.WantHint(t, err, decision.HookConflict, "move it into the hook manager's dir (.husky/_)")
	if b, _ := os.ReadFile(mine); string(b) != "#!/bin/sh\necho mine\n" {
		t.Errorf("the foreign file was changed: %q", b)
	}
	if got := localHooksPath(t, g); got != ".husky/_" {
		t.Errorf("core.hooksPath %q after a refused takeover", got)
	}
}

// TestPlanTarget: where the shims go for each core.hooksPath: the common
// dir's hooks when unset, an absolute dir outside the tree itself (shared
// by every worktree), wt's own dir for one inside the tree, and a chain
// file wt cannot read refused.
func TestPlanTarget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		set     func(g *gitrepo.Repo, top string) string // the value; "" unset
		want    func(g *gitrepo.Repo, top string) Target
		refused string
	}{
		{"unset", func(*gitrepo.Repo, string) string { return "" },
			func(g *gitrepo.Repo, _ string) Target { return Target{Dir: filepath.Join(g.CommonDir, "hooks")} }, ""},
		{"absolute, outside the tree", func(_ *gitrepo.Repo, top string) string { return filepath.Join(top, "shared-hooks") },
			func(_ *gitrepo.Repo, top string) Target { return Target{Dir: filepath.Join(top, "shared-hooks")} }, ""},
		{"absolute, inside the tree", func(g *gitrepo.Repo, _ string) string { return filepath.Join(g.TopLevel, ".githooks") },
			func(g *gitrepo.Repo, _ string) Target {
				return Target{Dir: OwnDir(g.CommonDir), Owned: true, Chain: filepath.Join(g.TopLevel, ".githooks"), ChainLocal: true, Takeover: true, Before: filepath.Join(g.TopLevel, ".githooks")}
			}, ""},
		{"wt's own, with a chain file it cannot read", func(g *gitrepo.Repo, _ string) string {
			writeExecutable(t, filepath.Join(OwnDir(g.CommonDir), chainFile), "one line only")
			return OwnDir(g.CommonDir)
		}, nil, decision.HookConflict},
		{"wt's own, chaining nothing", func(g *gitrepo.Repo, _ string) string {
			os.MkdirAll(OwnDir(g.CommonDir), 0o755)
			return OwnDir(g.CommonDir)
		}, func(g *gitrepo.Repo, _ string) Target { return Target{Dir: OwnDir(g.CommonDir), Owned: true} }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, top := plainRepo(t)
			if v := tc.set(g, top); v != "" {
				gittest.Git(t, g.TopLevel, "config", "core.hooksPath", v)
			}
			got, err := PlanTarget(ctx, g)
			if tc.refused != "" {
				decisiontest.Want(t, err, tc.refused)
				return
			}
			if want := tc.want(g, top); err != nil || got != want {
				t.Fatalf("PlanTarget: %+v %v, want %+v", got, err, want)
			}
			// Seen from a linked worktree, the plan is the main checkout's.
			w := filepath.Join(top, "w")
			gittest.Git(t, g.TopLevel, "worktree", "add", "-q", "--detach", w)
			lg, err := gitrepo.Discover(ctx, w)
			if err != nil {
				t.Fatal(err)
			}
			if again, err := PlanTarget(ctx, lg); err != nil || again != got {
				t.Errorf("from a linked worktree: %+v %v, want %+v", again, err, got)
			}
		})
	}
}

// TestHooksDirOfTellsTheTreesOwn: the hooks dir git uses, and whether it
// lies in the working tree (a tracked .githooks/) or not (the git dir's).
func TestHooksDirOfTellsTheTreesOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, _ := plainRepo(t)
	if dir, in, err := HooksDirOf(ctx, g); err != nil || dir != filepath.Join(g.CommonDir, "hooks") || in {
		t.Errorf("default: %s %v %v", dir, in, err)
	}
	gittest.Git(t, g.TopLevel, "config", "core.hooksPath", ".githooks")
	if dir, in, err := HooksDirOf(ctx, g); err != nil || dir != filepath.Join(g.TopLevel, ".githooks") || !in {
		t.Errorf(".githooks: %s %v %v", dir, in, err)
	}
	gone := &gitrepo.Repo{CommonDir: g.CommonDir, GitDir: g.GitDir, TopLevel: filepath.Join(g.TopLevel, "none")}
	if _, _, err := HooksDirOf(ctx, gone); decision.CodeOf(err) != decision.GitFailed {
		t.Errorf("a checkout that is not there: %v", err)
	}
}
