package install

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/gitversion"
	"github.com/wt-tool/wt/internal/gittest"
)

// TestInstallConfigRegistersAndUninstallRemoves: each hook is registered
// in the repository's config with its shim in wt's gate dir (a path the
// shell would split given to git as an exec of the quoted path), a switch
// that turned wt's own hook off is removed, a second install changes
// nothing; a git that runs configured hooks would find every one; the
// uninstall removes the registrations and the shims, and the gate dir
// when nothing else is in it.
func TestInstallConfigRegistersAndUninstallRemoves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	top, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(top, "my repo")
	gittest.Git(t, top, "init", "-q", "-b", "main", dir)
	gittest.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "one")
	g := &gitrepo.Repo{CommonDir: filepath.Join(dir, ".git"), GitDir: filepath.Join(dir, ".git"), TopLevel: dir}
	gittest.Git(t, dir, "config", "hook.wt-pre-commit.enabled", "false")
	bin, _ := hookBin(t)

	hs, err := InstallConfig(ctx, g, bin)
	if err != nil || len(hs) != len(Hooks) {
		t.Fatalf("InstallConfig: %+v %v", hs, err)
	}
	for _, h := range hs {
		p := filepath.Join(ConfigDir(g.CommonDir), h.Hook)
		cmd := gittest.Git(t, dir, "config", "--get", "hook."+ConfigName(h.Hook)+".command")
		if back, ok := commandPath(cmd); !ok || back != p || !strings.HasPrefix(cmd, "exec ") {
			t.Errorf("%s: command %q", h.Hook, cmd)
		}
		if ev := gittest.Git(t, dir, "config", "--get-all", "hook."+ConfigName(h.Hook)+".event"); ev != h.Hook {
			t.Errorf("%s: event %q", h.Hook, ev)
		}
		if h.State != "wt" || h.Changed != "installed; registered" || !isShim(p, h.Hook) {
			t.Errorf("%s: %+v", h.Hook, h)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(g.CommonDir, "config")); strings.Contains(string(b), "enabled") {
		t.Errorf("wt's switched-off hook is still switched off:\n%s", b)
	}
	again, err := InstallConfig(ctx, g, bin)
	if err != nil || again[0].Changed != "unchanged" {
		t.Fatalf("a second install: %+v %v", again, err)
	}
	entries, err := gitrepo.Config(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := Evaluate(gitversion.Version{Major: 2, Minor: 54}, entries, dir, g.CommonDir)
	for _, h := range Hooks {
		if got := m.Hooks[slices.Index(Hooks, h)].By; !slices.Equal(got, []string{"hook." + ConfigName(h)}) {
			t.Errorf("%s under git 2.54 is gated by %q", h, got)
		}
	}

	// A file of someone else's in the gate dir is left, and the dir with it.
	writeExecutable(t, filepath.Join(ConfigDir(g.CommonDir), "mine"), "#!/bin/sh\n")
	un, err := UninstallConfig(ctx, g)
	if err != nil || len(un) != len(Hooks) || un[0].Changed != "unregistered; removed" {
		t.Fatalf("UninstallConfig: %+v %v", un, err)
	}
	if b, _ := os.ReadFile(filepath.Join(g.CommonDir, "config")); strings.Contains(string(b), "wt-") {
		t.Errorf("the config still names wt's hooks:\n%s", b)
	}
	if ents, _ := os.ReadDir(ConfigDir(g.CommonDir)); len(ents) != 1 || ents[0].Name() != "mine" {
		t.Errorf("the gate dir holds %v", ents)
	}
	os.Remove(filepath.Join(ConfigDir(g.CommonDir), "mine"))
	if un, err := UninstallConfig(ctx, g); err != nil || un[0].Changed != "not installed" {
		t.Fatalf("a second uninstall: %+v %v", un, err)
	}
	if _, err := os.Stat(ConfigDir(g.CommonDir)); !os.IsNotExist(err) {
		t.Errorf("the empty gate dir is still there: %v", err)
	}
}

// TestStatusGateListsConfiguredHooksTheGitDoesNotRun: under a git before
// 2.54, wt's configured hooks are listed only where something of them is
// there, as not used.
func TestStatusGateListsConfiguredHooksTheGitDoesNotRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v, err := gitrepo.GitVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v.ConfigHooks() {
		t.Skipf("git %s runs configured hooks", v)
	}
	g, _ := plainRepo(t)
	st, err := StatusGate(ctx, g)
	if err != nil || len(st.Hooks) != len(Hooks) || st.Hooks[0].Via != ViaHooksDir {
		t.Fatalf("nothing configured: %+v %v", st.Hooks, err)
	}
	bin, _ := hookBin(t)
	if _, err := InstallConfig(ctx, g, bin); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, g.TopLevel, "config", "hook.wt-pre-push.enabled", "false")
	os.WriteFile(filepath.Join(ConfigDir(g.CommonDir), "post-checkout"), []byte("#!/bin/sh\n"), 0o755)
	st, err = StatusGate(ctx, g)
	if err != nil || len(st.Hooks) != 2*len(Hooks) {
		t.Fatalf("configured: %+v %v", st.Hooks, err)
	}
	for _, h := range st.Hooks[:len(Hooks)] {
		want := "wt"
		switch h.Hook {
		case "post-checkout":
			want = "foreign"
		}
		if h.Via != ViaConfig || h.State != want || !strings.Contains(h.Changed, "not used by git "+v.String()) {
			t.Errorf("%s: %+v", h.Hook, h)
		}
		if h.Hook == "pre-push" && !strings.Contains(h.Changed, "switched off (hook.wt-pre-push.enabled)") {
			t.Errorf("pre-push switched off: %+v", h)
		}
	}
}

// TestEvaluate: what a git of a version, with a configuration, runs of
// wt's gate for reference-transaction, and the fix named for each way it
// is off.
func TestEvaluate(t *testing.T) {
	t.Parallel()
	const hook = "reference-transaction"
	v254, v239 := gitversion.Version{Major: 2, Minor: 54}, gitversion.Version{Major: 2, Minor: 39}
	home := os.Getenv("HOME")
	for _, tc := range []struct {
		name    string
		v       gitversion.Version
		setup   func(t *testing.T, top, common, shim string) []gitrepo.ConfigEntry
		by      func(top, common string) []string
		off     string // a reason Off holds
		fix     string // what Fix holds
		hooksAt func(top, common string) string
	}{
		{"configured", v254, func(t *testing.T, top, common, shim string) []gitrepo.ConfigEntry {
			return wtConfigured(common, shim, "local")
		}, func(string, string) []string { return []string{"hook.wt-" + hook} }, "", "wt-hook -C", nil},
		{"wt's hook switched off locally: install removes the switch", v254, func(t *testing.T, top, common, shim string) []gitrepo.ConfigEntry {
			return append(wtConfigured(common, shim, "local"), entry("local", "hook.wt-"+hook+".enabled", "false"))
		}, nil, "hook.wt-" + hook + ".enabled is false (local config)", "wt-hook -C", nil},
		{"wt's hook switched off in the worktree's config", v254, func(t *testing.T, top, common, shim string) []gitrepo.ConfigEntry {
			return append(wtConfigured(common, shim, "local"), entry("worktree", "hook.wt-"+hook+".enabled", "no"))
		}, nil, "(worktree config)", "config --worktree --unset-all hook.wt-" + hook + ".enabled", nil},
		{"the event switched off globally", v254, func(t *testing.T, top, common, shim string) []gitrepo.ConfigEntry {
			return append(wtConfigured(common, shim, "local"), entry("global", "hook."+hook+".enabled", "0"))
		}, nil, "every configured " + hook + " hook is off", "git config --global --unset-all hook." + hook + ".enabled", nil},
		{"switched off, then on", v254, func(t *testing.T, top, common, shim string) []gitrepo.ConfigEntry {
			e := entry("local", "hook.wt-"+hook+".enabled", "")
			e.HasValue = false // a bare key is true
			return append(wtConfigured(common, shim, "local"), entry("global", "hook.wt-"+hook+".enabled", "false"), e)
		}, func(string, string) []string { return []string{"hook.wt-" + hook} }, "", "", nil},
		{"its shim not executable", v254, func(t *testing.T, top, common, shim string) []gitrepo.ConfigEntry {
			os.Chmod(shim, 0o644)
			return wtConfigured(common, shim, "local")
		}, nil, "which is not executable", "", nil},
		{"its shim gone", v254, func(t *testing.T, top, common, shim string) []gitrepo.ConfigEntry {
			os.Remove(shim)
			return wtConfigured(common, shim, "local")
		}, nil, "which cannot be read", "", nil},
		{"its event list reset", v254, func(t *testing.T, top, common, shim string) []gitrepo.ConfigEntry {
			return append(wtConfigured(common, shim, "local"), entry("local", "hook.wt-"+hook+".event", ""))
		}, nil, "no hook defined in configuration runs wt's", "", nil},
		{"a command that is no path", v254, func(t *testing.T, top, common, shim string) []gitrepo.ConfigEntry {
			return []gitrepo.ConfigEntry{entry("local", "hook.x.command", "echo hi"), entry("local", "hook.x.event", hook)}
		}, nil, "no hook defined in configuration runs wt's", "", nil},
		{"configured, under a git that runs none", v239, func(t *testing.T, top, common, shim string) []gitrepo.ConfigEntry {
			return wtConfigured(common, shim, "local")
		}, nil, "git 2.39 runs no hooks defined in configuration", "", nil},
		{"the shim in the common dir's hooks", v239, func(t *testing.T, top, common, shim string) []gitrepo.ConfigEntry {
			installAt(t, filepath.Join(common, "hooks"), shim)
			return nil
		}, func(_, common string) []string { return []string{filepath.Join(common, "hooks", hook)} }, "", "", nil},
		{"a relative core.hooksPath", v239, func(t *testing.T, top, common, shim string) []gitrepo.ConfigEntry {
			installAt(t, filepath.Join(top, "hk"), shim)
			return []gitrepo.ConfigEntry{entry("local", "core.hookspath", "hk")}
		}, func(top, _ string) []string { return []string{filepath.Join(top, "hk", hook)} }, "", "",
			func(top, _ string) string { return filepath.Join(top, "hk") }},
		{"a core.hooksPath under home, empty", v239, func(t *testing.T, top, common, shim string) []gitrepo.ConfigEntry {
			return []gitrepo.ConfigEntry{entry("global", "core.hookspath", "~/wt-test-none")}
		}, nil, "core.hooksPath ~/wt-test-none (global config): no " + hook + " hook there", "",
			func(string, string) string { return filepath.Join(home, "wt-test-none") }},
		{"someone else's hook", v239, func(t *testing.T, top, common, shim string) []gitrepo.ConfigEntry {
			writeExecutable(t, filepath.Join(common, "hooks", hook), "#!/bin/sh\n")
			return nil
		}, nil, "is someone else's hook, not wt's", "", nil},
		{"wt's shim not executable in the hooks dir", v239, func(t *testing.T, top, common, shim string) []gitrepo.ConfigEntry {
			installAt(t, filepath.Join(common, "hooks"), shim)
			os.Chmod(filepath.Join(common, "hooks", hook), 0o644)
			return nil
		}, nil, "is wt's shim but not executable: git skips it", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			top := t.TempDir()
			common := filepath.Join(top, ".git")
			shim := filepath.Join(common, ConfigDirName, hook)
			s, _ := Render(hook, "/bin/wt-hook")
			writeExecutable(t, shim, s)
			m := Evaluate(tc.v, tc.setup(t, top, common, shim), top, common)
			var hm HookMeets
			for _, h := range m.Hooks {
				if h.Hook == hook {
					hm = h
				}
			}
			var want []string
			if tc.by != nil {
				want = tc.by(top, common)
			}
			if !slices.Equal(hm.By, want) && !(len(hm.By) == 0 && len(want) == 0) {
				t.Errorf("By %q, want %q", hm.By, want)
			}
			if m.Gated(hook) != (len(want) > 0) {
				t.Errorf("Gated %v with By %q", m.Gated(hook), hm.By)
			}
			if tc.off != "" && !strings.Contains(strings.Join(hm.Off, "; "), tc.off) {
				t.Errorf("Off %q, want %q in it", hm.Off, tc.off)
			}
			if tc.off != "" && m.Why(hook) == "" || len(want) > 0 && m.Why(hook) != "" {
				t.Errorf("Why %q", m.Why(hook))
			}
			if tc.fix != "" && !strings.Contains(m.Fix(hook, top), tc.fix) {
				t.Errorf("Fix %q, want %q in it", m.Fix(hook, top), tc.fix)
			}
			if tc.hooksAt != nil && m.HooksDir != tc.hooksAt(top, common) {
				t.Errorf("HooksDir %s, want %s", m.HooksDir, tc.hooksAt(top, common))
			}
		})
	}
}

// TestEvaluateFindsTheLegacyShim: the pre-commit framework's hook (its
// ID line) runs the hook it replaced, kept as pre-commit.legacy: where
// that is wt's shim, the gate runs; where it is not, it does not.
func TestEvaluateFindsTheLegacyShim(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	common := filepath.Join(top, ".git")
	hooks := filepath.Join(common, "hooks")
	writeExecutable(t, filepath.Join(hooks, "pre-commit"), "#!/usr/bin/env bash\n"+legacyIDs[0]+"\nexec pre-commit\n")
	v := gitversion.Version{Major: 2, Minor: 39}
	if m := Evaluate(v, nil, top, common); m.Gated("pre-commit") {
		t.Fatalf("gated with no legacy hook: %+v", m.Hooks)
	}
	s, _ := Render("pre-commit", "/bin/wt-hook")
	writeExecutable(t, filepath.Join(hooks, "pre-commit.legacy"), s)
	m := Evaluate(v, nil, top, common)
	if !m.Gated("pre-commit") || gatedBy(m, "pre-commit") != filepath.Join(hooks, "pre-commit.legacy") {
		t.Fatalf("the legacy shim: %+v", m.Hooks)
	}
	os.Chmod(filepath.Join(hooks, "pre-commit.legacy"), 0o644)
	if m := Evaluate(v, nil, top, common); m.Gated("pre-commit") {
		t.Errorf("gated by a legacy shim git cannot run")
	}
}

// wtConfigured is wt's configured hook for reference-transaction, running
// shim, as scope sets it.
func wtConfigured(common, shim, scope string) []gitrepo.ConfigEntry {
	return []gitrepo.ConfigEntry{
		entry(scope, "hook.wt-reference-transaction.command", shim),
		entry(scope, "hook.wt-reference-transaction.event", "reference-transaction"),
	}
}

func entry(scope, key, value string) gitrepo.ConfigEntry {
	return gitrepo.ConfigEntry{Scope: scope, Origin: "file:x", Key: key, Value: value, HasValue: true}
}

// installAt copies the shim at shim into dir under its own name.
func installAt(t *testing.T, dir, shim string) {
	t.Helper()
	b, err := os.ReadFile(shim)
	if err != nil {
		t.Fatal(err)
	}
	writeExecutable(t, filepath.Join(dir, filepath.Base(shim)), string(b))
}
