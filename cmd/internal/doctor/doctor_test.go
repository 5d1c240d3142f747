package doctor

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRefLocks: the locks doctor looks for include each linked worktree's
// table stack's, wherever the repository is: a path with the characters
// a glob pattern reads ([, *, ?) names itself.
func TestRefLocks(t *testing.T) {
	common := filepath.Join(t.TempDir(), "a [b] *?", ".git")
	lock := filepath.Join(common, "worktrees", "w1", "reftable", "tables.list.lock")
	if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := refLocks(common)
	for _, want := range []string{lock, filepath.Join(common, "reftable", "tables.list.lock"), filepath.Join(common, "packed-refs.lock"), filepath.Join(common, "config.lock")} {
		if !slices.Contains(got, want) {
			t.Errorf("refLocks(%q) = %q: %q missing", common, got, want)
		}
	}
}
