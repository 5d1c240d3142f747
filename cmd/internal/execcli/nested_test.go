package execcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/internal/wttest"
	"github.com/wt-tool/wt/wrapper"
)

// TestNestedRunNeedsItsAncestorsLease: inside a confined command (whose
// store is read-only) a wt-exec runs under the lease an ancestor holds
// and writes nothing; it is refused where no lease is held, or where the
// holder is not its ancestor. Not parallel: it sets the environment.
func TestNestedRunNeedsItsAncestorsLease(t *testing.T) {
	f, a := gatedOff(t)
	none := f.Allocate("T-2", "", "w2")
	other := f.Allocate("T-3", "", "w3")
	// This test process plays the confined command's wt-exec: it holds
	// a's lease itself.
	own := f.Lease(a, wttest.Self(t), nil)
	f.Lease(other, otherProcess(t), nil)
	t.Setenv(wrapper.ConfinedEnv, "1")
	ran := filepath.Join(t.TempDir(), "ran")

	for _, c := range []struct {
		dir, code, said string
	}{
		{none.WorktreePath, decision.WriterLeaseRequired, "no live writer holds " + none.WorktreePath},
		{other.WorktreePath, decision.WriterLeaseHeld, "this process does not descend from it"},
	} {
		code, _, stderr := launch(t, c.dir, nil, "/bin/sh", "-c", `touch "$0"`, ran)
		if code != ExitRefused || !strings.Contains(stderr, "wt-exec: refused: "+c.code+": ") || !strings.Contains(stderr, c.said) {
			t.Errorf("-C %s: exit %d, want %d with %s %q:\n%s", c.dir, code, ExitRefused, c.code, c.said, stderr)
		}
		if _, err := os.Stat(ran); !os.IsNotExist(err) {
			t.Fatalf("-C %s: the command ran: %v", c.dir, err)
		}
	}

	// The holder's own worktree: the command runs (after the refusals
	// above: a nested run stops what this process started, the other
	// holder included, as leftovers) and the lease stays its holder's.
	code, _, stderr := launch(t, a.WorktreePath, nil, "/bin/sh", "-c", `touch "$0"; exit 6`, ran)
	if code != 6 {
		t.Fatalf("exit %d, want 6:\n%s", code, stderr)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Errorf("the command did not run: %v", err)
	}
	if l, ok := leaseOf(t, f, a); !ok || l.LeaseID != own.LeaseID || l.Generation != own.Generation {
		t.Errorf("the ancestor's lease changed: %+v (had %+v)", l, own)
	}
}
