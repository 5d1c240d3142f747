package alloc

import (
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/store"
)

// TestGateOf: a feature worktree is gated by the writer lease, an audit is
// read-only, the ungated roles say what they expect, and an unknown role
// is refused.
func TestGateOf(t *testing.T) {
	t.Parallel()
	for role, want := range map[string]string{
		store.RoleFeature:     GateLease,
		store.RoleAudit:       GateReadOnly,
		store.RoleIntegration: "ungated: role integration expects a merge queue or CI that decides what lands",
		store.RoleCanonical:   "ungated: role canonical expects the publication branch's own protection (review, branch rules)",
		store.RoleRecovery:    "ungated: role recovery expects an operator working by hand",
		"boss":                "refused (INVALID_ROLE boss)",
	} {
		if got := GateOf(store.Allocation{Role: role}); got != want {
			t.Errorf("GateOf(%s) = %q, want %q", role, got, want)
		}
	}
}

// TestHeadOffTaskBranch: a writer in a feature worktree whose HEAD is on
// its task branch (or, detached, rebasing it) passes; on another branch or
// detached elsewhere it is refused with the branch as a fact and the
// switch back as the hint.
func TestHeadOffTaskBranch(t *testing.T) {
	t.Parallel()
	gitDir := t.TempDir()
	b := "wt/T-1"
	a := store.Allocation{TaskKey: "T-1", Branch: &b}
	on := gitrepo.Checkout{TopLevel: "/w", GitDir: gitDir, Branch: b}
	if err := HeadOffTaskBranch(on, a); err != nil {
		t.Errorf("on its branch: %v", err)
	}
	if err := HeadOffTaskBranch(gitrepo.Checkout{TopLevel: "/w", Branch: "main"}, store.Allocation{TaskKey: "A-1"}); err != nil {
		t.Errorf("an audit (no branch): %v", err)
	}
	other := gitrepo.Checkout{TopLevel: "/w x", GitDir: gitDir, Branch: "main"}
	err := HeadOffTaskBranch(other, a)
	if err == nil || err.Code != decision.HeadOffTaskBranch || err.Facts["branch"] != b ||
		err.Message != "/w x is task T-1's worktree, whose writer works on branch wt/T-1, but it is on branch main" ||
		err.Hint != "switch it back: git -C '/w x' switch wt/T-1" {
		t.Errorf("on main: %+v", err)
	}
	detached := gitrepo.Checkout{TopLevel: "/w", GitDir: gitDir, Detached: true}
	if err := HeadOffTaskBranch(detached, a); err == nil || !strings.HasSuffix(err.Message, "but it is on a detached HEAD") {
		t.Errorf("detached: %+v", err)
	}
	// A rebase of the task branch detaches HEAD: still the task's.
	if err := writeFile(gitDir+"/rebase-merge/head-name", "refs/heads/wt/T-1\n"); err != nil {
		t.Fatal(err)
	}
	if err := HeadOffTaskBranch(detached, a); err != nil {
		t.Errorf("rebasing its branch: %v", err)
	}
}
