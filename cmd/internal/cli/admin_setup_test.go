package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/cmd/internal/textout"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/install"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wttest"
)

// TestInitSetsUpOnceAndLeavesHooksAsAsked: the first init writes the
// store, a second changes nothing and says so; --no-hooks switches the
// gate off on purpose, and without it a missing wt-hook beside the binary
// is a warning (HOOKS_MISSING), not a refusal.
func TestInitSetsUpOnceAndLeavesHooksAsAsked(t *testing.T) {
	t.Parallel()
	_, dir, _ := gittest.Repo(t)
	common := filepath.Join(dir, ".git")

	env := jsonRun(t, textout.ExitOK, decision.StoreInitialized, "--repo", dir, "init", "--no-hooks", "--max-active", "3")
	if got := str(env.Decision, "store_dir"); got != filepath.Join(common, "wt") {
		t.Errorf("store_dir %q", got)
	}
	if p := obj(env.Decision, "policy"); str(p, "publication_branch") != "main" || p["max_active"] != 3.0 {
		t.Errorf("policy %v", p)
	}
	if !strings.Contains(str(env.Decision, "hooks"), "--no-hooks") || len(env.Warnings) != 0 {
		t.Errorf("hooks %q, warnings %q", str(env.Decision, "hooks"), env.Warnings)
	}
	if !install.SwitchedOff(common) {
		t.Error("init --no-hooks did not switch the gate off")
	}
	if _, err := os.Stat(filepath.Join(common, "wt")); err != nil {
		t.Fatal(err)
	}

	// Again: nothing changes; the hooks, asked for now, cannot be
	// installed (no wt-hook beside the test binary): a warning.
	env = jsonRun(t, textout.ExitOK, decision.StoreAlreadyInitialized, "--repo", dir, "init")
	if str(env.Decision, "reason") != "wt was already set up here; nothing changed" || str(env.Decision, "hooks") != "not installed" {
		t.Errorf("decision %v", env.Decision)
	}
	if len(env.Warnings) != 1 || !strings.HasPrefix(env.Warnings[0], decision.HooksMissing+": commits are not gated") {
		t.Errorf("warnings %q", env.Warnings)
	}

	// The human form: the code, the policy table, the hooks row, and
	// the warning on stderr.
	r := admin(t, "--repo", dir, "init")
	if r.exit != 0 || !strings.Contains(r.stdout, "wt-admin: STORE_ALREADY_INITIALIZED: ") ||
		!strings.Contains(r.stdout, "max_active") || !hasRow(r.stdout, "hooks", "not", "installed") ||
		!strings.Contains(r.stderr, "wt-admin: warning: HOOKS_MISSING") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", r.exit, r.stdout, r.stderr)
	}
}

// TestInitRefusesABadPolicyAndAnythingButARepository: a refused init
// leaves no store behind.
func TestInitRefusesABadPolicyAndAnythingButARepository(t *testing.T) {
	t.Parallel()
	_, dir, _ := gittest.Repo(t)
	jsonRun(t, textout.ExitRefused, decision.InvalidPolicy, "--repo", dir, "init", "--no-hooks", "--enforcement", "sometimes")
	if _, err := os.Stat(filepath.Join(dir, ".git", "wt")); !os.IsNotExist(err) {
		t.Errorf("a refused init made a store: %v", err)
	}
	env := jsonRun(t, textout.ExitOK, decision.StoreInitialized, "--repo", dir, "init", "--no-hooks", "--enforcement", "warn")
	if got := str(obj(env.Decision, "policy"), "enforcement"); got != store.EnforcementWarn {
		t.Errorf("enforcement %q", got)
	}

	outside := gittest.Outside(t)
	jsonRun(t, textout.ExitRefused, decision.NotAGitRepository, "--repo", outside, "init", "--no-hooks")
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("init outside a repository wrote %v", ents)
	}
	// In a repository wt was never set up in, the other commands are
	// refused.
	_, fresh, _ := gittest.Repo(t)
	for _, args := range [][]string{{"status"}, {"lease", "list"}, {"allocate", "--task", "T-1", "--owner", "bob", filepath.Join(fresh, "w")}} {
		jsonRun(t, textout.ExitRefused, decision.NotInitialized, append([]string{"--repo", fresh}, args...)...)
	}
	if _, err := os.Stat(filepath.Join(fresh, ".git", "wt")); !os.IsNotExist(err) {
		t.Errorf("a refused command made a store: %v", err)
	}
}

// TestAllocateAtItsRefusals: a missing flag or PATH is a usage error; a
// task key in use and an unknown role are refused, and no refusal makes a
// worktree, a branch or a record.
func TestAllocateAtItsRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.Allocate("T-1", "", "w1")
	before := f.records()
	for _, tc := range []struct {
		name       string
		exit       int
		code, path string
		args       []string
	}{
		{"no owner", textout.ExitUsage, decision.Usage, "w2", []string{"--task", "T-2"}},
		{"no task", textout.ExitUsage, decision.Usage, "w2", []string{"--owner", "bob"}},
		{"two paths", textout.ExitUsage, decision.Usage, "w2", []string{"--task", "T-2", "--owner", "bob", "extra"}},
		{"the task key in use", textout.ExitRefused, decision.TaskKeyInUse, "w2", []string{"--task", "T-1", "--owner", "bob"}},
		{"an unknown role", textout.ExitRefused, decision.InvalidRole, "w3", []string{"--task", "T-3", "--owner", "bob", "--role", "boss"}},
		{"a bad task key", textout.ExitRefused, decision.InvalidTaskKey, "w4", []string{"--task", "no spaces", "--owner", "bob"}},
		{"a key close to a live task's", textout.ExitRefused, decision.TaskKeySimilar, "w5", []string{"--task", "T-l", "--owner", "bob"}},
	} {
		path := f.Path(tc.path)
		env := f.json(tc.exit, tc.code, append([]string{"allocate", path}, tc.args...)...)
		if env.Command != "allocate" {
			t.Errorf("%s: command %q", tc.name, env.Command)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s: %s exists after the refusal (%v)", tc.name, path, err)
		}
	}
	if after := f.records(); after != before {
		t.Errorf("the refusals changed the records:\n%s\n%s", before, after)
	}
	if out := f.Git("branch", "--list", "wt/T-2", "wt/T-3", "wt/T-l"); out != "" {
		t.Errorf("the refusals made branches: %s", out)
	}
}

// TestAllocateMakesTheWorktreeAndSaysItIsNotGated: a feature worktree is
// made on its task branch; with no gate installed, allocate warns that its
// commits are not gated. An audit worktree is detached and its role's gate
// is not wt's (UNGATED_ROLE).
func TestAllocateMakesTheWorktreeAndSaysItIsNotGated(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	path := f.Path("w1")
	env := f.json(textout.ExitOK, decision.Allocated, "allocate", "--task", "T-1", "--owner", "bob", path)
	a := obj(env.Decision, "allocation")
	if str(a, "worktree_path") != path || str(a, "branch") != "wt/T-1" || str(a, "owner") != "bob" || str(a, "lifecycle") != store.Active {
		t.Errorf("allocation %v", a)
	}
	if head := gittest.Git(t, path, "symbolic-ref", "--short", "HEAD"); head != "wt/T-1" {
		t.Errorf("the worktree is on %q", head)
	}
	if len(env.Warnings) != 1 || !strings.Contains(env.Warnings[0], "are not gated") {
		t.Errorf("warnings %q", env.Warnings)
	}

	// An audit worktree is detached, and read-only by its role: no
	// warning.
	audit := f.Path("audit")
	env = f.json(textout.ExitOK, decision.Allocated, "allocate", audit, "--task", "A-1", "--owner", "bob", "--role", store.RoleAudit)
	if len(env.Warnings) != 0 || obj(env.Decision, "allocation")["branch"] != nil {
		t.Errorf("audit: %v, warnings %q", env.Decision, env.Warnings)
	}
	if out := gittest.Git(t, audit, "rev-parse", "--abbrev-ref", "HEAD"); out != "HEAD" {
		t.Errorf("the audit worktree is on %q, not detached", out)
	}

	// Human: the decision on stdout, the warning of a role wt does not
	// gate on stderr.
	rec := f.Path("rec")
	r := f.human(textout.ExitOK, "allocate", rec, "--task", "R-1", "--owner", "bob", "--role", store.RoleRecovery)
	if !strings.HasPrefix(r.stdout, "wt-admin: ALLOCATED: task R-1 allocated at "+rec+" (branch wt/R-1 at ") ||
		!strings.Contains(r.stderr, "wt-admin: warning: "+decision.UngatedRole+": ") {
		t.Errorf("stdout: %s\nstderr: %s", r.stdout, r.stderr)
	}
}

// TestStatusListsEveryWorktree: the canonical checkout and each governed
// worktree have a row, with the lease holder where there is one.
func TestStatusListsEveryWorktree(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.Allocate("T-1", "", "w1")
	f.Allocate("T-2", "", "w2")
	f.Lease(a, wttest.Self(t), nil)

	env := f.json(textout.ExitOK, decision.StatusShown, "status")
	rows := list(env.Decision, "worktrees")
	if len(rows) != 3 || str(env.Decision, "reason") != "3 worktree(s)" {
		t.Fatalf("rows %v", rows)
	}
	held := 0
	for _, x := range rows {
		row := x.(map[string]any)
		if l := obj(row, "lease"); l != nil {
			held++
			if str(row, "path") != a.WorktreePath {
				t.Errorf("a lease on %s", str(row, "path"))
			}
		}
	}
	if held != 1 {
		t.Errorf("%d rows with a lease, want 1", held)
	}

	r := f.human(textout.ExitOK, "status")
	lines := strings.Split(r.stdout, "\n")
	if !strings.HasPrefix(lines[0], "PATH") || !strings.Contains(r.stdout, "test pid ") || !strings.Contains(r.stdout, "wt/T-2") {
		t.Errorf("stdout: %s", r.stdout)
	}
	// status takes no argument.
	f.json(textout.ExitUsage, decision.Usage, "status", "extra")
}

// TestLifecycleAndPolicyCommands: retain and resume on the owner's word
// (another owner is refused), the policy shown, changed and unchanged,
// recover with nothing to do, and version.
func TestLifecycleAndPolicyCommands(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.Allocate("T-1", "", "w1")
	before := f.records()
	f.json(textout.ExitRefused, decision.OwnerMismatch, "retain", a.WorktreePath, "--owner", "bob")
	f.json(textout.ExitUsage, decision.Usage, "retain", a.WorktreePath)
	if f.records() != before {
		t.Error("a refused retain changed the records")
	}
	env := f.json(textout.ExitOK, decision.Retained, "retain", a.WorktreePath, "--owner", "alice")
	if lc := str(obj(env.Decision, "allocation"), "lifecycle"); lc != store.Retained {
		t.Errorf("lifecycle %q after retain", lc)
	}
	r := f.human(textout.ExitOK, "resume", a.WorktreePath, "--owner", "alice")
	if !strings.HasPrefix(r.stdout, "wt-admin: RESUMED: task T-1 at "+a.WorktreePath+" is ACTIVE") {
		t.Errorf("resume: %s", r.stdout)
	}

	f.json(textout.ExitOK, decision.PolicyShown, "policy")
	env = f.json(textout.ExitOK, decision.PolicyUpdated, "policy", "--enforcement", "warn")
	if str(obj(env.Decision, "policy"), "enforcement") != "warn" {
		t.Errorf("policy %v", env.Decision)
	}
	r = f.human(textout.ExitOK, "policy", "--enforcement", "warn")
	if !strings.Contains(r.stdout, "wt-admin: POLICY_UNCHANGED") || !hasRow(r.stdout, "enforcement", "warn") {
		t.Errorf("policy: %s", r.stdout)
	}
	f.json(textout.ExitRefused, decision.InvalidPolicy, "policy", "--unmanaged", "maybe")

	env = f.json(textout.ExitOK, decision.AllocationRecovered, "recover")
	if len(list(env.Decision, "recovered")) != 0 {
		t.Errorf("recovered %v", env.Decision)
	}
	env = jsonRun(t, textout.ExitOK, decision.VersionShown, "version")
	if codes := list(env.Decision, "decision_codes"); len(codes) != len(decision.Codes()) {
		t.Errorf("%d decision codes, want %d", len(codes), len(decision.Codes()))
	}
}

// TestCommandLineUsageErrors: what the command line gets wrong is a usage
// error (exit 2), as one envelope with --json.
func TestCommandLineUsageErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, args := range [][]string{
		{"nosuch"},
		{"status", "--nosuch"},
		{"lease", "inspct", f.Dir},
		{"lease", "list", "--limit", "-1"},
		{"audit", "--since", "last tuesday"},
		{"fleet", "abandon", "T-1"},
		{"ready"},
		{"finish", f.Dir},
	} {
		f.json(textout.ExitUsage, decision.Usage, args...)
	}
	// Without --json: the code on stderr and the hint, nothing on stdout.
	r := f.human(textout.ExitUsage, "statsu")
	if r.stdout != "" || !strings.Contains(r.stderr, `wt-admin: USAGE: unknown command "statsu" (did you mean status?)`) {
		t.Errorf("stdout: %q\nstderr: %s", r.stdout, r.stderr)
	}
}
