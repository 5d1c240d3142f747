package hookcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/cmd/internal/textout"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wtfixture"
	"github.com/wt-tool/wt/internal/wttest"
)

// TestInstallStatusUninstallTheGate: install puts wt's shims in the hooks
// dir git uses and gives the governed worktree a core.hooksPath of wt's;
// status shows them; uninstall takes them away. check says a commit meets
// no gate before install (HOOKS_MISSING) and the gate's verdict after.
func TestInstallStatusUninstallTheGate(t *testing.T) {
	t.Chdir(t.TempDir())
	f := wtfixture.New(t, policy.Change{})
	a := f.Allocate("T-1", "", "w1")
	bin := self(t)
	shim := filepath.Join(f.R.Git.CommonDir, "hooks", "reference-transaction")

	env := jsonRun(t, textout.ExitRefused, decision.HooksMissing, "-C", f.Dir, "check", a.WorktreePath)
	if !strings.Contains(str(env.Error, "hint"), "install") {
		t.Errorf("check before install: %v", env.Error)
	}
	jsonRun(t, textout.ExitOK, decision.HooksShown, "-C", f.Dir, "status")

	env = jsonRun(t, textout.ExitOK, decision.HooksInstalled, "-C", f.Dir, "install", "--binary", bin)
	if str(env.Decision, "hooks_dir") == "" {
		t.Errorf("install: %v", env.Decision)
	}
	b, err := os.ReadFile(shim)
	if err != nil || !strings.Contains(string(b), bin) {
		t.Fatalf("the reference-transaction shim (%v):\n%s", err, b)
	}
	if hp := gittest.Git(t, a.WorktreePath, "config", "core.hooksPath"); hp == "" {
		t.Error("the governed worktree has no core.hooksPath")
	}

	// A commit in the worktree meets the gate now: this process holds no
	// lease there, so it would be refused; with the lease it is entitled.
	jsonRun(t, textout.ExitRefused, decision.WriterLeaseRequired, "-C", f.Dir, "check", a.WorktreePath)
	f.Lease(a, wttest.Self(t), nil)
	env = jsonRun(t, textout.ExitOK, decision.Entitled, "-C", f.Dir, "check", a.WorktreePath)
	if env.Decision["allowed"] != true {
		t.Errorf("check with the lease: %v", env.Decision)
	}
	// The canonical checkout is not governed: allowed, as unmanaged.
	jsonRun(t, textout.ExitOK, decision.Unmanaged, "-C", f.Dir, "check")

	r := hook(t, "-C", f.Dir, "status")
	if r.exit != 0 || !strings.HasPrefix(r.stdout, "wt-hook: hooks dir ") || !strings.Contains(r.stdout, "reference-transaction") ||
		!strings.Contains(r.stdout, "wt shim v") || !strings.Contains(r.stdout, "wt-hook: worktree "+a.WorktreePath+": core.hooksPath ") {
		t.Errorf("status: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}

	jsonRun(t, textout.ExitOK, decision.HooksUninstalled, "-C", f.Dir, "uninstall")
	if _, err := os.Stat(shim); !os.IsNotExist(err) {
		t.Errorf("the shim is still there after uninstall: %v", err)
	}
	jsonRun(t, textout.ExitRefused, decision.HooksMissing, "-C", f.Dir, "check", a.WorktreePath)
}

// TestInstallRefusesABadBinaryAndAnythingButARepository: --binary must be
// an absolute path to an executable (a usage error, nothing installed);
// -C must name a directory; outside a repository install is refused.
func TestInstallRefusesABadBinaryAndAnythingButARepository(t *testing.T) {
	t.Chdir(t.TempDir())
	_, dir, _ := gittest.Repo(t)
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bin := range []string{"wt-hook", plain, filepath.Join(dir, "missing")} {
		env := jsonRun(t, textout.ExitUsage, decision.Usage, "-C", dir, "install", "--binary", bin)
		if !strings.Contains(str(env.Error, "message"), "is not an absolute path to an executable file") {
			t.Errorf("--binary %s: %v", bin, env.Error)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, ".git", "hooks")); hasShim(ents) {
		t.Errorf("a refused install wrote shims: %v", ents)
	}
	jsonRun(t, textout.ExitUsage, decision.Usage, "-C", filepath.Join(dir, "nowhere"), "status")
	jsonRun(t, textout.ExitRefused, decision.NotAGitRepository, "-C", gittest.Outside(t), "install", "--binary", self(t))
	jsonRun(t, textout.ExitUsage, decision.Usage, "-C", dir, "check", "a", "b")
	jsonRun(t, textout.ExitUsage, decision.Usage, "-C", dir, "instal")
}

// hasShim reports whether a hooks dir's entries hold one of wt's hooks.
func hasShim(ents []os.DirEntry) bool {
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".sample") {
			return true
		}
	}
	return false
}

// TestHookEntryPointsRefuseBadInputAndNonWriters: each hook git runs
// checks its arguments (a usage error) and its ref lines
// (INVALID_HOOK_INPUT); in a governed worktree a ref update or a commit by
// a process that holds no lease is refused, and the lease's holder (this
// process) is entitled.
func TestHookEntryPointsRefuseBadInputAndNonWriters(t *testing.T) {
	t.Chdir(t.TempDir())
	f := wtfixture.New(t, policy.Change{})
	a := f.Allocate("T-1", "", "w1")
	w := a.WorktreePath
	zero := strings.Repeat("0", 40)

	for _, args := range [][]string{
		{"run", "pre-commit", "extra"},
		{"run", "reference-transaction"},
		{"run", "pre-push", "origin"},
		{"run", "post-checkout", "a", "b"},
		{"run", "pre-receive", "extra"},
		{"run", "post-receive", "extra"},
		{"run", "pre-rebase"},
	} {
		stdin(t, "")
		jsonRun(t, textout.ExitUsage, decision.Usage, append([]string{"-C", w}, args...)...)
	}

	stdin(t, "this is not a ref line\n")
	jsonRun(t, textout.ExitRefused, decision.InvalidHookInput, "-C", w, "run", "reference-transaction", "prepared")
	stdin(t, "refs/heads/wt/T-1 nothex\n")
	jsonRun(t, textout.ExitRefused, decision.InvalidHookInput, "-C", w, "run", "pre-push", "origin", "/dev/null")

	// A real update of the task branch, by a process with no lease.
	line := zero + " " + f.Base + " refs/heads/wt/T-1\n"
	stdin(t, line)
	jsonRun(t, textout.ExitRefused, decision.WriterLeaseRequired, "-C", w, "run", "reference-transaction", "prepared")
	stdin(t, "")
	r := hook(t, "-C", w, "run", "pre-commit")
	if r.exit != textout.ExitRefused || r.stdout != "" || !strings.Contains(r.stderr, "wt-hook: refused: WRITER_LEASE_REQUIRED: ") {
		t.Errorf("pre-commit: exit %d\nstdout: %s\nstderr: %s", r.exit, r.stdout, r.stderr)
	}

	// The holder is entitled: pre-commit prints its verdict with --json,
	// reference-transaction allows in silence.
	f.Lease(a, wttest.Self(t), nil)
	stdin(t, "")
	jsonRun(t, textout.ExitOK, decision.Entitled, "-C", w, "run", "pre-commit")
	stdin(t, line)
	if r := hook(t, "-C", w, "run", "reference-transaction", "prepared"); r.exit != 0 || r.stdout != "" || r.stderr != "" {
		t.Errorf("reference-transaction by the holder: exit %d\nstdout: %s\nstderr: %s", r.exit, r.stdout, r.stderr)
	}
}

// TestWarnEnforcementAllowsWithAWarning: under enforcement warn a
// refusal is printed as a warning and the commit is allowed.
func TestWarnEnforcementAllowsWithAWarning(t *testing.T) {
	t.Chdir(t.TempDir())
	warn := "warn"
	f := wtfixture.New(t, policy.Change{Enforcement: &warn})
	a := f.Allocate("T-1", "", "w1")
	stdin(t, "")
	r := hook(t, "-C", a.WorktreePath, "run", "pre-commit")
	if r.exit != 0 || !strings.Contains(r.stderr, "wt-hook: warning: policy enforcement is warn, so this is allowed; it would be refused: WRITER_LEASE_REQUIRED") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", r.exit, r.stdout, r.stderr)
	}
	env := jsonRun(t, textout.ExitOK, decision.WriterLeaseRequired, "-C", a.WorktreePath, "run", "pre-commit")
	if len(env.Warnings) != 1 || env.Decision["allowed"] != true {
		t.Errorf("--json: %+v", env)
	}
}
