package hooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// The tests in this file set the environment (t.Setenv): none runs in
// parallel.

// TestHookCheckoutGitDir: a hook that git runs with $GIT_DIR naming the
// checkout's own git dir runs in that checkout; one that names another
// repository's (a push received, git --git-dir from elsewhere) runs in
// that git dir, without a checkout.
func TestHookCheckoutGitDir(t *testing.T) {
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	own := filepath.Join(f.Dir, ".git", "worktrees", a.WorktreeKey)
	for name, c := range map[string]struct{ dir, gitDir, top string }{
		"no GIT_DIR":                     {a.WorktreePath, "", a.WorktreePath},
		"its own, absolute":              {a.WorktreePath, own, a.WorktreePath},
		"its own, relative":              {f.Dir, ".git", f.Dir},
		"its own, through another path":  {f.Dir, filepath.Join(f.Dir, "..", "repo", ".git"), f.Dir},
		"another repository's":           {a.WorktreePath, filepath.Join(f.Dir, ".git"), ""},
		"a repository's from outside it": {f.Top, filepath.Join(f.Dir, ".git"), ""},
	} {
		t.Setenv("GIT_DIR", c.gitDir)
		if c.gitDir == "" {
			os.Unsetenv("GIT_DIR")
		}
		got, err := hookCheckout(c.dir)
		if err != nil || got.TopLevel != c.top || !gitrepo.SameFile(got.CommonDir, filepath.Join(f.Dir, ".git")) {
			t.Errorf("%s: %+v %v", name, got, err)
		}
	}
	t.Setenv("GIT_DIR", filepath.Join(f.Top, "nosuch"))
	if _, err := hookCheckout(f.Dir); err == nil {
		t.Error("a GIT_DIR that is no repository was taken")
	}

	// A transaction received into the repository (no checkout) still
	// guards the task branch.
	t.Setenv("GIT_DIR", filepath.Join(f.Dir, ".git"))
	next := commit(t, f.Dir, f.Base, "next")
	wantCodes(t, "a task branch from a git dir", tx(t, f.Top, me, f.Base+" "+next+" refs/heads/wt/T-1"), decision.WriterLeaseRequired)
	wantCodes(t, "a feature worktree's HEAD from a git dir", tx(t, f.Top, me, f.Base+" "+next+" worktrees/"+a.WorktreeKey+"/HEAD"), decision.WriterLeaseRequired)
}

// TestLedgerFileConfined: a move approved in a private view is recorded by
// wt-exec as it publishes it (the gate writes nothing); one approved under
// Landlock alone goes to the checkout's pending file, which the command
// may write.
func TestLedgerFileConfined(t *testing.T) {
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	f.Lease(a, wttest.Self(t), nil)
	ref := "refs/heads/wt/T-1"
	next := commit(t, f.Dir, f.Base, "next")
	pending := filepath.Join(f.Dir, ".git", "worktrees", a.WorktreeKey, store.PendingLedgerName)

	t.Setenv(store.ViewEnv, "1")
	wantCodes(t, "in a view", tx(t, a.WorktreePath, me, f.Base+" "+next+" "+ref), "")
	if got := gateLines(t, f, a.AllocationID, ref); len(got) != 0 {
		t.Errorf("the gate recorded a move of a view: %+v", got)
	}
	if _, err := os.Stat(pending); !os.IsNotExist(err) {
		t.Errorf("a pending file in a view: %v", err)
	}

	t.Setenv(store.ViewEnv, "")
	t.Setenv(confinedEnv, "1")
	wantCodes(t, "confined", tx(t, a.WorktreePath, me, f.Base+" "+next+" "+ref), "")
	if got := gateLines(t, f, a.AllocationID, ref); len(got) != 0 {
		t.Errorf("a confined move went to the store: %+v", got)
	}
	led, err := store.ReadLedgerFile(pending, ref, 0)
	if err != nil || len(led.Lines) != 1 || led.Lines[0].New != next || led.Lines[0].Via != store.ViaGate {
		t.Errorf("pending ledger: %+v %v", led, err)
	}
	// Confined, a push to a repository on this machine is refused, its
	// hint naming the worktree and its branch.
	d := ConfinedLocalPush(a.WorktreePath, "up", "file:///srv/up.git")
	if d == nil || d.Code != decision.PushLocalRemoteConfined || !strings.Contains(d.Hint, "wt-exec -C "+a.WorktreePath+" --no-confine -- git push up wt/T-1") {
		t.Errorf("a confined push from the worktree: %v", d)
	}
}

// TestForeignBindings: the lease's own runtime occupancy does not fence
// its writer; another lease's, an opaque binding and a malformed runtime
// binding do.
func TestForeignBindings(t *testing.T) {
	t.Parallel()
	l1, l2 := ids.New(), ids.New()
	l := store.Lease{LeaseID: l1}
	enc := func(id string) string {
		s, err := proc.RuntimeBinding{Holder: wttest.DeadHolder, LeaseID: &id, Kind: proc.OccupantKind}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		name     string
		bindings []string
		code     string
	}{
		{"none", nil, ""},
		{"its own lease's", []string{enc(l1)}, ""},
		{"another lease's", []string{enc(l1), enc(l2)}, decision.ExternalBinding},
		{"opaque", []string{"ci:job-42"}, decision.ExternalBinding},
		{"malformed", []string{proc.RuntimeBindingPrefix + "{"}, decision.InvalidRuntimeBinding},
	} {
		d := foreignBindings(store.Allocation{TaskKey: "T-1", ExternalBindings: c.bindings}, l)
		got := ""
		if d != nil {
			got = d.Code
		}
		if got != c.code {
			t.Errorf("%s: %v, want %q", c.name, d, c.code)
		}
	}
}

// TestInLeaseCgroup: a lease without a cgroup of its own gives no
// evidence, nor does one whose cgroup this process is not in.
func TestInLeaseCgroup(t *testing.T) {
	t.Parallel()
	if inLeaseCgroup(me, store.Lease{LeaseID: "L1"}) {
		t.Error("a lease without a child cgroup")
	}
	l := store.Lease{LeaseID: "L1", Child: &store.ChildGroup{Cgroup: "/sys/fs/cgroup/wt/wt-lease-L1"}}
	if inLeaseCgroup(me, l) {
		t.Error("this process is in the cgroup of lease L1")
	}
	if inLeaseCgroup(-1, l) {
		t.Error("a process that cannot be read")
	}
}
