package land

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
)

// TestLandFollowsTheCheckoutsOfMain: the canonical checkout (on main)
// with changes of its own is left behind, recorded for status, and
// brought forward from where it was left once it is clean again; one
// whose index is at an earlier tip of main is brought forward from that
// tip; one that moved to another branch is no longer recorded.
func TestLandFollowsTheCheckoutsOfMain(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		f.task(k, k, k)
	}
	f.onMain("tracked", "1")
	root := f.R.Store.Root()
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(f.Dir, name))
		return err == nil
	}
	land := func(task string) Result {
		t.Helper()
		res := f.land(Options{Batch: 1}, task)
		if res.Code != decision.Landed || len(res.Checkouts) != 1 || res.Checkouts[0].Path != f.Dir {
			t.Fatalf("%s: %+v", task, res)
		}
		return res
	}
	wts := func() []gitrepo.Worktree {
		w, err := f.R.Git.Inventory(f.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}

	// Changes not staged: left behind, at the tip it had.
	if err := os.WriteFile(filepath.Join(f.Dir, "tracked"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	onto := f.Git("rev-parse", "main")
	res := land("a")
	n := res.Checkouts[0]
	if n.Code != CheckoutBehind || n.From != onto || n.To != res.Tip || !strings.Contains(n.Why, "not staged") || !strings.Contains(n.Fix, "read-tree -u -m "+onto+" "+res.Tip) {
		t.Errorf("a: %+v", n)
	}
	if got := Behind(root); got[f.Dir] != onto || len(got) != 1 {
		t.Errorf("recorded behind: %v", got)
	}
	if exists("a") || f.Git("diff", "--name-only") != "tracked" {
		t.Errorf("the checkout's files changed: a there %v, changed %q", exists("a"), f.Git("diff", "--name-only"))
	}
	if !StillBehind(f.Ctx, wts(), f.Dir, "main", onto) || StillBehind(f.Ctx, wts(), f.Dir, "main", res.Tip) || StillBehind(f.Ctx, wts(), f.Dir, "other", onto) {
		t.Errorf("StillBehind does not say the checkout is behind at %s alone", onto)
	}

	// Clean again: brought forward from the tip recorded.
	f.Git("checkout", "--", "tracked")
	res = land("b")
	if n := res.Checkouts[0]; n.Code != CheckoutUpdated || n.From != onto || !exists("a") || !exists("b") {
		t.Errorf("b: %+v, a there %v, b there %v", n, exists("a"), exists("b"))
	}
	if got := Behind(root); len(got) != 0 {
		t.Errorf("still recorded behind: %v", got)
	}
	if _, err := os.Stat(filepath.Join(root, BehindName)); !os.IsNotExist(err) {
		t.Errorf("%s is left: %v", BehindName, err)
	}

	// A change staged: left behind; then reset to main's tip, which
	// later moves: brought forward from that tip, found in main's reflog.
	if err := os.WriteFile(filepath.Join(f.Dir, "staged"), []byte("s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.Git("add", "staged")
	res = land("c")
	if n := res.Checkouts[0]; n.Code != CheckoutBehind || n.Why != dirtyStaged {
		t.Errorf("c: %+v", n)
	}
	f.Git("reset", "-q", "--hard", "main")
	cTip := f.Git("rev-parse", "main")
	res = land("d")
	if n := res.Checkouts[0]; n.Code != CheckoutUpdated || n.From != cTip || !exists("d") || exists("staged") {
		t.Errorf("d: %+v (c's tip %s)", n, cTip)
	}

	// Left behind, then on another branch: no longer recorded.
	if err := os.WriteFile(filepath.Join(f.Dir, "tracked"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	land("e")
	if len(Behind(root)) != 1 {
		t.Fatalf("e: not recorded behind: %v", Behind(root))
	}
	f.Git("checkout", "-q", "-b", "elsewhere")
	f.task("f", "f", "f")
	res = f.land(Options{Batch: 1}, "f")
	if res.Code != decision.Landed || len(res.Checkouts) != 0 || len(Behind(root)) != 0 {
		t.Errorf("f: checkouts %+v, recorded behind %v", res.Checkouts, Behind(root))
	}
}
