package install

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestManagerBackups: the pre-commit framework, installed after wt, keeps
// wt's shim as pre-commit.legacy and runs it; lefthook keeps it as
// pre-commit.old. Run under such a name, the shim runs the gate but not
// the hook it chains (the manager's own, which pre-commit refuses to run
// from its legacy hook: "installed in migration mode"). wt-hook install
// then removes the kept shim (and a kept copy identical to the manager's
// hook) and chains the manager's hook once, after the gate; uninstall
// leaves no wt shim and the manager's hook as it was.
func TestManagerBackups(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "wt-hook")
	log := filepath.Join(dir, "log")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho gate \"$@\" >>'"+log+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	hooks := filepath.Join(dir, "hooks")
	if _, err := Install(hooks, bin); err != nil {
		t.Fatal(err)
	}
	manager := "#!/bin/sh\necho manager >>'" + log + "'\n"
	shim, _ := os.ReadFile(filepath.Join(hooks, "pre-commit"))
	// The manager takes pre-commit, keeping wt's shim under its backup
	// name, and an older copy of its own hook is still chained.
	for name, content := range map[string]string{"pre-commit.legacy": string(shim), "pre-commit": manager, "pre-commit.wt-chained": manager} {
		if err := os.WriteFile(filepath.Join(hooks, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(filepath.Join(hooks, "pre-commit.legacy")).CombinedOutput()
	if err != nil {
		t.Fatalf("the shim as pre-commit.legacy: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(log); strings.TrimSpace(string(b)) != "gate run pre-commit" {
		t.Fatalf("the shim as pre-commit.legacy ran %q, want the gate alone", b)
	}
	if _, err := Install(hooks, bin); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"pre-commit.legacy"} {
		if _, err := os.Stat(filepath.Join(hooks, gone)); err == nil {
			t.Errorf("install left %s", gone)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(hooks, "pre-commit.wt-chained")); string(b) != manager {
		t.Fatalf("the manager's hook is not chained: %q", b)
	}
	os.Remove(log)
	if out, err := exec.Command(filepath.Join(hooks, "pre-commit")).CombinedOutput(); err != nil {
		t.Fatalf("pre-commit: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(log); string(b) != "gate run pre-commit\nmanager\n" {
		t.Fatalf("pre-commit ran %q, want the gate, then the manager's hook once", b)
	}
	// The manager installs again over wt (keeping wt's shim as .old), then
	// wt is uninstalled without a reinstall.
	shim, _ = os.ReadFile(filepath.Join(hooks, "pre-commit"))
	for name, content := range map[string]string{"pre-commit.old": string(shim), "pre-commit": manager} {
		if err := os.WriteFile(filepath.Join(hooks, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Uninstall(hooks); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(hooks)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
		b, _ := os.ReadFile(filepath.Join(hooks, e.Name()))
		if _, _, ok := Recognize("pre-commit", b); ok {
			t.Errorf("uninstall left a wt shim as %s", e.Name())
		}
	}
	if b, _ := os.ReadFile(filepath.Join(hooks, "pre-commit")); string(b) != manager {
		t.Errorf("the manager's hook changed: %q", b)
	}
	if strings.Contains(strings.Join(names, " "), "wt-chained") {
		t.Errorf("uninstall left a copy of the manager's hook: %v", names)
	}
}
