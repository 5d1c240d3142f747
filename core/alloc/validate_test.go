package alloc

import (
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/store"
)

// TestValidNames: roles, task keys and owners have their character sets
// (a letter or digit first, 128 bytes at most), and free text holds no
// control character; each refusal has its code.
func TestValidNames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 128)
	for _, c := range []struct {
		what string
		err  error
		want string // "" for accepted
	}{
		{"role feature", ValidRole(store.RoleFeature), ""},
		{"role audit", ValidRole(store.RoleAudit), ""},
		{"role integration", ValidRole(store.RoleIntegration), ""},
		{"role recovery", ValidRole(store.RoleRecovery), ""},
		{"role boss", ValidRole("boss"), decision.InvalidRole},
		{"role empty", ValidRole(""), decision.InvalidRole},
		{"role in capitals", ValidRole("FEATURE"), decision.InvalidRole},

		{"key T-12", ValidTaskKey("T-12"), ""},
		{"key with a slash, a dot, an underscore", ValidTaskKey("team/fix_1.2"), ""},
		{"key of 128 bytes", ValidTaskKey(long), ""},
		{"key of 129 bytes", ValidTaskKey(long + "a"), decision.InvalidTaskKey},
		{"key empty", ValidTaskKey(""), decision.InvalidTaskKey},
		{"key starting with a dash", ValidTaskKey("-T"), decision.InvalidTaskKey},
		{"key starting with a slash", ValidTaskKey("/T"), decision.InvalidTaskKey},
		{"key with a space", ValidTaskKey("T 1"), decision.InvalidTaskKey},
		{"key with an @", ValidTaskKey("T@1"), decision.InvalidTaskKey},
		{"key with a newline", ValidTaskKey("T\n1"), decision.InvalidTaskKey},
		{"key not ASCII", ValidTaskKey("Tü"), decision.InvalidTaskKey},

		{"owner alice", ValidOwner("alice"), ""},
		{"owner an address", ValidOwner("alice+ci@example.org"), ""},
		{"owner of 128 bytes", ValidOwner(long), ""},
		{"owner of 129 bytes", ValidOwner(long + "a"), decision.InvalidOwner},
		{"owner empty", ValidOwner(""), decision.InvalidOwner},
		{"owner with a slash", ValidOwner("team/alice"), decision.InvalidOwner},
		{"owner starting with an @", ValidOwner("@alice"), decision.InvalidOwner},
		{"owner with a semicolon", ValidOwner("alice;rm"), decision.InvalidOwner},

		{"text a path", ValidText("path", "/tmp/a b/ü"), ""},
		{"text empty", ValidText("path", ""), ""},
		{"text a newline", ValidText("path", "/tmp/a\nb"), decision.Usage},
		{"text an escape", ValidText("reason", "\x1b[31mred"), decision.Usage},
		{"text a DEL", ValidText("reason", "a\x7f"), decision.Usage},
		{"text invalid UTF-8", ValidText("path", "/tmp/\xff"), decision.Usage},
	} {
		if got := decision.CodeOf(c.err); got != c.want {
			t.Errorf("%s: got %q (%v), want %q", c.what, got, c.err, c.want)
		}
	}
	// A refusal's message shows what was given quoted, control characters
	// escaped, and its hint the flag to pass.
	err := ValidTaskKey("T\x1b1")
	d, _ := decision.As(err)
	if !strings.Contains(d.Message, `"T\x1b1"`) || d.Hint != "pass --task KEY, e.g. --task T-12" {
		t.Errorf("ValidTaskKey: %+v", d)
	}
}

// TestWords: Plural, OnOff, flagName and maxActiveText say what status and
// the policy command print.
func TestWords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ got, want string }{
		{Plural(0, "change", "changes"), "0 changes"},
		{Plural(1, "change", "changes"), "1 change"},
		{Plural(2, "active allocation", "active allocations"), "2 active allocations"},
		{OnOff(true), "on"},
		{OnOff(false), "off"},
		{flagName("etcd_cacert"), "etcd-cacert"},
		{flagName("max_active"), "max-active"},
		{flagName("confine"), "confine"},
		{maxActiveText(nil), "unlimited"},
		{maxActiveText(ptr(3)), "3"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

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
