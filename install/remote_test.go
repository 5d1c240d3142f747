package install

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/decision/decisiontest"
)

// TestInstallServerInABareHooksDir: a fenced remote's hooks dir without a
// forge: pre-receive installed with the foreign hook chained; with etcd
// as the record, post-receive is not needed, and a wt shim of it an
// earlier install left is removed; uninstall puts the foreign hook back.
func TestInstallServerInABareHooksDir(t *testing.T) {
	t.Parallel()
	hooks := t.TempDir()
	bin := "/usr/bin/wt-hook"
	foreign := "#!/bin/sh\necho mine\n"
	writeExecutable(t, filepath.Join(hooks, "pre-receive"), foreign)
	if _, err := InstallServer(hooks, bin, true); err != nil {
		t.Fatal(err)
	}
	if !isShim(filepath.Join(hooks, "post-receive"), "post-receive") {
		t.Fatal("local mode: no post-receive shim")
	}
	res, err := InstallServer(hooks, bin, false)
	if err != nil {
		t.Fatal(err)
	}
	if !isShim(filepath.Join(hooks, "pre-receive"), "pre-receive") {
		t.Error("no pre-receive shim")
	}
	if b, _ := os.ReadFile(filepath.Join(hooks, "pre-receive"+ChainSuffix)); string(b) != foreign {
		t.Errorf("the foreign pre-receive is not chained: %q", b)
	}
	if _, err := os.Stat(filepath.Join(hooks, "post-receive")); !os.IsNotExist(err) {
		t.Errorf("etcd mode left post-receive: %v", err)
	}
	if len(res.Hooks) != 2 || res.Hooks[0].Via != ViaHooksDir || res.Hooks[1].Hook != "post-receive" || res.Hooks[1].State != "missing" {
		t.Errorf("InstallServer: %+v", res.Hooks)
	}
	st, err := StatusServer(hooks, false)
	if err != nil || len(st.Hooks) != 1 || st.Hooks[0].State != "wt" || st.Hooks[0].Chained == "" {
		t.Errorf("StatusServer: %+v %v", st.Hooks, err)
	}
	if _, err := UninstallServer(hooks); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(hooks)
	if b, _ := os.ReadFile(filepath.Join(hooks, "pre-receive")); len(ents) != 1 || string(b) != foreign {
		t.Errorf("after uninstall: %v, pre-receive %q", ents, b)
	}
}

// TestRepairDispatcherLeavesAForeignHook: the forge's dispatcher kept
// under the chained name by an older wt is put back only over a wt shim;
// over someone else's hook both are left as they are.
func TestRepairDispatcherLeavesAForeignHook(t *testing.T) {
	t.Parallel()
	hooks := t.TempDir()
	writeExecutable(t, filepath.Join(hooks, "pre-receive"), "#!/bin/sh\necho mine\n")
	writeExecutable(t, filepath.Join(hooks, "pre-receive"+ChainSuffix), giteaDispatcher)
	before := snapshot(t, hooks)
	if did, err := repairDispatcher(hooks, "pre-receive"); err != nil || did {
		t.Fatalf("repairDispatcher: %v %v", did, err)
	}
	if after := snapshot(t, hooks); after != before {
		t.Errorf("changed:\n%s\nwant:\n%s", after, before)
	}
	// With no hook in its place at all, it goes back.
	os.Remove(filepath.Join(hooks, "pre-receive"))
	if did, err := repairDispatcher(hooks, "pre-receive"); err != nil || !did {
		t.Fatalf("repairDispatcher over nothing: %v %v", did, err)
	}
	if b, _ := os.ReadFile(filepath.Join(hooks, "pre-receive")); string(b) != giteaDispatcher {
		t.Errorf("pre-receive: %q", b)
	}
}

// gitoliteLayout is a repository's hooks dir as gitolite lays it out with
// repo-specific hooks on: pre-receive linked to the multi-hook driver in
// LOCAL_CODE, and a link for each code the repository's option lists.
func gitoliteLayout(t *testing.T, codes map[string][]string) (hooks, localCode string) {
	t.Helper()
	top := t.TempDir()
	localCode = filepath.Join(top, "local")
	hooks = filepath.Join(top, "repo.git", "hooks")
	for _, d := range []string{filepath.Join(localCode, "hooks", "repo-specific"), hooks} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeExecutable(t, filepath.Join(localCode, "hooks", multiHookDriver), "#!/bin/sh\n")
	if err := os.Symlink(filepath.Join(localCode, "hooks", multiHookDriver), filepath.Join(hooks, "pre-receive")); err != nil {
		t.Fatal(err)
	}
	for hook, cs := range codes {
		for i, c := range cs {
			target := filepath.Join(localCode, "hooks", "repo-specific", c)
			if c != RepoSpecificCode(hook) { // wt's own is the install's to write
				writeExecutable(t, target, "#!/bin/sh\n")
			}
			if err := os.Symlink(target, filepath.Join(hooks, hook+".h0"+string(rune('0'+i))+"-"+strings.ReplaceAll(c, "/", "-"))); err != nil {
				t.Fatal(err)
			}
		}
	}
	return hooks, localCode
}

// TestGitoliteRepoSpecificHooks: gitolite's layout is read (LOCAL_CODE
// from the driver's link, each hook's codes in its order); the option
// lines put wt's pre-receive first and its post-receive last; the shims go
// into the repo-specific dir, once, never over someone else's file; the
// status says where gitolite does not run them yet.
func TestGitoliteRepoSpecificHooks(t *testing.T) {
	t.Parallel()
	hooks, localCode := gitoliteLayout(t, map[string][]string{
		"pre-receive":  {"audit", "team/check"},
		"post-receive": {RepoSpecificCode("post-receive"), "notify"},
	})
	g, ok := GitoliteOf(hooks, "")
	if !ok || g.LocalCode != localCode {
		t.Fatalf("GitoliteOf: %+v %v", g, ok)
	}
	if !slices.Equal(g.Codes["pre-receive"], []string{"audit", "team/check"}) {
		t.Errorf("pre-receive codes: %q", g.Codes["pre-receive"])
	}
	lines := g.OptionLines(ServerHooks)
	want := []string{"option hook.pre-receive = wt-fence-pre-receive audit team/check", "option hook.post-receive = notify wt-fence-post-receive"}
	if !slices.Equal(lines, want) {
		t.Errorf("OptionLines: %q, want %q", lines, want)
	}

	if _, err := InstallRepoSpecific(g, "wt-hook", ServerHooks); decision.CodeOf(err) != decision.Usage {
		t.Errorf("a relative binary: %v", err)
	}
	res, err := InstallRepoSpecific(g, "/usr/bin/wt-hook", ServerHooks)
	if err != nil || len(res.Hooks) != 2 || res.Hooks[0].Changed != "installed" || res.Hooks[0].Via != ViaRepoSpecific {
		t.Fatalf("InstallRepoSpecific: %+v %v", res, err)
	}
	if res, err := InstallRepoSpecific(g, "/usr/bin/wt-hook", ServerHooks); err != nil || res.Hooks[1].Changed != "unchanged" {
		t.Fatalf("again: %+v %v", res, err)
	}
	st := StatusRepoSpecific(g, hooks, ServerHooks)
	if st.Hooks[0].State != "missing" || !strings.Contains(st.Hooks[0].Changed, "option hook.pre-receive") || st.Hooks[1].State != "wt" {
		t.Errorf("StatusRepoSpecific: %+v", st.Hooks)
	}

	// A file of someone else's under wt's code's name is refused, and left.
	p := filepath.Join(g.Dir(), RepoSpecificCode("pre-receive"))
	os.WriteFile(p, []byte("#!/bin/sh\necho mine\n"), 0o755)
	_, err = InstallRepoSpecific(g, "/usr/bin/wt-hook", ServerHooks)
	decisiontest.Want(t, err, decision.HookConflict)
	if b, _ := os.ReadFile(p); string(b) != "#!/bin/sh\necho mine\n" {
		t.Errorf("the foreign file changed: %q", b)
	}
}

// TestGitoliteOfWithoutRepoSpecificHooks: no LOCAL_CODE, or one without
// a repo-specific dir, is not gitolite's layout; LOCAL_CODE given (by
// gitolite itself) is used when no link names the driver.
func TestGitoliteOfWithoutRepoSpecificHooks(t *testing.T) {
	t.Parallel()
	if _, ok := GitoliteOf(t.TempDir(), ""); ok {
		t.Error("an empty hooks dir taken for gitolite's")
	}
	if _, ok := GitoliteOf(t.TempDir(), t.TempDir()); ok {
		t.Error("a LOCAL_CODE without hooks/repo-specific taken for gitolite's")
	}
	local := t.TempDir()
	os.MkdirAll(filepath.Join(local, "hooks", "repo-specific"), 0o755)
	if g, ok := GitoliteOf(t.TempDir(), local); !ok || g.LocalCode != local || len(g.Codes) != 0 {
		t.Errorf("LOCAL_CODE given: %+v %v", g, ok)
	}
	for name, want := range map[string]bool{"pre-receive.h00-x": true, "update.h00-x": false, "pre-receive.hx-y": false, "pre-receive.h01-": false, "pre-receive": false} {
		if _, _, ok := repoSpecificLink(name); ok != want {
			t.Errorf("repoSpecificLink(%q) = %v", name, ok)
		}
	}
}
