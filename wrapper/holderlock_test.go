package wrapper

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/liveness"
	"github.com/wt-tool/wt/core/store"
)

// TestHolderLock: the lock names the lease and is held until release,
// which empties it; a second taker, a file that is not a plain one and a
// symlink planted in its place are done without, and leave it as it was.
func TestHolderLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lock := liveness.HolderLockPath(dir)
	if err := os.WriteFile(lock, []byte("an older lease, longer than the new one"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := takeHolderLock(dir, "lease-1")
	if h == nil {
		t.Fatal("not taken")
	}
	if b, _ := os.ReadFile(lock); string(b) != "lease-1" || !liveness.HolderLocked(dir, "lease-1") {
		t.Fatalf("held: %q, locked %v", b, liveness.HolderLocked(dir, "lease-1"))
	}
	if again := takeHolderLock(dir, "lease-2"); again != nil {
		again.release()
		t.Fatal("taken twice")
	}
	if b, _ := os.ReadFile(lock); string(b) != "lease-1" {
		t.Errorf("the second taker wrote %q", b)
	}
	h.release()
	if b, _ := os.ReadFile(lock); len(b) != 0 || liveness.HolderLocked(dir, "lease-1") {
		t.Errorf("after release: %q, locked %v", b, liveness.HolderLocked(dir, "lease-1"))
	}
	var none *holderLock
	none.release() // a run that did without: nothing to give back

	for name, plant := range map[string]func(dir string) error{
		"a directory": func(dir string) error { return os.Mkdir(liveness.HolderLockPath(dir), 0o755) },
		"a symlink": func(dir string) error {
			return os.Symlink(filepath.Join(dir, "elsewhere"), liveness.HolderLockPath(dir))
		},
	} {
		dir := t.TempDir()
		if err := plant(dir); err != nil {
			t.Fatal(err)
		}
		if h := takeHolderLock(dir, "lease-1"); h != nil {
			h.release()
			t.Errorf("%s: taken", name)
		}
		if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); err == nil {
			t.Errorf("%s: the symlink was followed", name)
		}
	}
}

// TestRefusalsSaid: the end line counts the codes wt's hooks noted, in
// the order first met, and ignores what is not one of wt's codes; no
// file, an empty one or one of other words says nothing.
func TestRefusalsSaid(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	p, err := makeRefusals(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if p != filepath.Join(tmp, store.RefusalsName) {
		t.Errorf("made %s", p)
	}
	if fi, err := os.Stat(p); err != nil || fi.Size() != 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the refusals file: %v %v", fi, err)
	}
	if _, err := makeRefusals(tmp); err == nil {
		t.Error("made over an existing file")
	}
	if got := refusalsSaid(p); got != "" {
		t.Errorf("empty: %q", got)
	}
	if got := refusalsSaid(""); got != "" {
		t.Errorf("no file: %q", got)
	}
	if got := refusalsSaid(filepath.Join(tmp, "none")); got != "" {
		t.Errorf("missing file: %q", got)
	}
	lines := strings.Join([]string{decision.WriterLeaseRequired, "NOT_A_CODE", decision.HooksMissing, decision.WriterLeaseRequired, "rm -rf /"}, "\n")
	if err := os.WriteFile(p, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	want := "wt's hooks refused 3 thing(s) the run tried: " + decision.WriterLeaseRequired + " x2, " + decision.HooksMissing + " x1"
	if got := refusalsSaid(p); !strings.HasPrefix(got, want) {
		t.Errorf("said %q, want %q...", got, want)
	}
	if err := os.WriteFile(p, []byte("only words of the run's own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := refusalsSaid(p); got != "" {
		t.Errorf("no codes: %q", got)
	}
}
