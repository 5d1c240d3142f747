package gate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/store"
)

// TestNoteRefusal: a refusal's code goes to the run's file only when the
// variable names an existing regular file of that name: never through a
// symlink, never a file made here, never one of another name; a usage
// error is no refusal.
func TestNoteRefusal(t *testing.T) {
	dir := t.TempDir()
	refused := decision.Relay(decision.WriterLeaseHeld, "held")
	good := filepath.Join(dir, store.RefusalsName)
	if err := os.WriteFile(good, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(store.RefusalsEnv, good)
	noteRefusal(refused)
	noteRefusal(decision.Relay(decision.Usage, "bad call"))
	if b, _ := os.ReadFile(good); string(b) != decision.WriterLeaseHeld+"\n" {
		t.Errorf("the run's file holds %q", b)
	}

	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), store.RefusalsName)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), store.RefusalsName)
	for _, p := range []string{link, other, missing} {
		t.Setenv(store.RefusalsEnv, p)
		noteRefusal(refused)
	}
	for _, p := range []string{target, other} {
		if b, _ := os.ReadFile(p); len(b) != 0 {
			t.Errorf("%s was written: %q", p, b)
		}
	}
	if _, err := os.Lstat(missing); err == nil {
		t.Errorf("%s was made", missing)
	}
}
