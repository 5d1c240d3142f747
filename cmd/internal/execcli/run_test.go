package execcli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wtfixture"
	"github.com/wt-tool/wt/internal/wttest"
)

// The tests that run a command are not parallel: a run installs signal
// handlers of the process for as long as its command lives.

// TestRunExitsWithTheChildsStatus: in a feature worktree wt-exec takes
// the writer lease, gives the command its id, exits with the command's
// status and releases the lease after.
func TestRunExitsWithTheChildsStatus(t *testing.T) {
	f, a := gatedOff(t)
	seen := filepath.Join(t.TempDir(), "lease-id")
	for _, status := range []int{0, 3, 100} {
		code, stdout, stderr := launch(t, a.WorktreePath, nil, "/bin/sh", "-c", `echo "$WT_LEASE_ID $WT_ALLOCATION_ID" >"$0"; exit `+strconv.Itoa(status), seen)
		if code != status {
			t.Fatalf("exit %d, want the command's %d; stderr:\n%s", code, status, stderr)
		}
		if stdout != "" {
			t.Errorf("wt-exec wrote on stdout: %q", stdout)
		}
		lease, alloc, _ := strings.Cut(readLine(t, seen), " ")
		if lease == "" || alloc != a.AllocationID {
			t.Errorf("the command ran with lease %q allocation %q, want a lease of %s", lease, alloc, a.AllocationID)
		}
		noLease(t, f, a)
	}
}

// TestRunSaysTheGateIsSwitchedOff: a launch into a worktree whose gate the
// operator switched off goes on, and says so with the fix.
func TestRunSaysTheGateIsSwitchedOff(t *testing.T) {
	_, a := gatedOff(t)
	code, _, stderr := launch(t, a.WorktreePath, nil, "true")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "wt-exec: warning: "+decision.HooksMissing) || !strings.Contains(stderr, "switched off") ||
		!strings.Contains(stderr, "wt-hook -C "+a.WorktreePath+" install") {
		t.Errorf("stderr does not say the gate is off and how to put it back:\n%s", stderr)
	}
}

// TestRunRefusesAWorktreeWithoutAGate: with no gate in place (and none
// wt-exec could install: a test binary has no wt-hook beside it) the
// launch is refused with 125, the command never runs and no lease is
// left.
func TestRunRefusesAWorktreeWithoutAGate(t *testing.T) {
	f := wtfixture.New(t, policy.Change{})
	a := f.Allocate("T-1", "", "w1")
	ran := filepath.Join(t.TempDir(), "ran")
	code, _, stderr := launch(t, a.WorktreePath, nil, "/bin/sh", "-c", `touch "$0"`, ran)
	if code != ExitRefused {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitRefused, stderr)
	}
	if !strings.Contains(stderr, "wt-exec: refused: "+decision.HooksMissing+": commits in "+a.WorktreePath+" meet no gate") ||
		!strings.Contains(stderr, "wt-exec: hint: ") {
		t.Errorf("stderr:\n%s", stderr)
	}
	if _, err := os.Stat(ran); !os.IsNotExist(err) {
		t.Errorf("the command ran: %v", err)
	}
	noLease(t, f, a)
}

// TestRunInTheCanonicalCheckoutSaysItIsUngoverned: the canonical checkout
// takes no lease; wt-exec says so every time, with how to govern an
// agent, and still exits with the command's status.
func TestRunInTheCanonicalCheckoutSaysItIsUngoverned(t *testing.T) {
	f := wtfixture.New(t, policy.Change{})
	code, _, stderr := launch(t, f.Dir, nil, "/bin/sh", "-c", "exit 7")
	if code != 7 {
		t.Fatalf("exit %d, want 7: %s", code, stderr)
	}
	for _, want := range []string{"wt-exec: " + decision.NotApplicable + ": " + f.Dir + " is the canonical checkout",
		"wt-exec -C " + f.Dir + " --task KEY --owner NAME -- COMMAND"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestRunVerboseTellsTheGrant: --verbose names the lease, its generation
// and its holder before the command starts; a role with its own gate
// says it takes no writer lease.
func TestRunVerboseTellsTheGrant(t *testing.T) {
	f, a := gatedOff(t)
	seen := filepath.Join(t.TempDir(), "lease-id")
	code, _, stderr := launch(t, a.WorktreePath, []string{"--verbose"}, "/bin/sh", "-c", `echo "$WT_LEASE_ID" >"$0"`, seen)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	id := readLine(t, seen)
	if want := "wt-exec: " + decision.WriterLeaseAcquired + ": lease " + id + " generation 1 client sh pid "; id == "" || !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	noLease(t, f, a)

	integ := f.Allocate("I-1", "integration", "i1")
	said := "wt-exec: " + decision.NotApplicable + ": role integration takes no writer lease (" + decision.DedicatedRoleGate + ")"
	for _, verbose := range []bool{false, true} {
		flags := []string{"--verbose=" + strconv.FormatBool(verbose)}
		code, _, stderr = launch(t, integ.WorktreePath, flags, "true")
		if code != 0 {
			t.Fatalf("integration worktree %q: exit %d: %s", flags, code, stderr)
		}
		if strings.Contains(stderr, said) != verbose || strings.Contains(stderr, "generation") {
			t.Errorf("an integration worktree's run %q says:\n%s", flags, stderr)
		}
		noLease(t, f, integ)
	}
}

// TestRunTakesOverADeadHoldersLease: the lease of a holder that is gone is
// taken over, which wt-exec says (with or without --verbose) before the
// command starts; the new lease is released after.
func TestRunTakesOverADeadHoldersLease(t *testing.T) {
	f, a := gatedOff(t)
	old := f.Lease(a, wttest.DeadHolder, nil)
	code, _, stderr := launch(t, a.WorktreePath, nil, "true")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "wt-exec: " + decision.WriterLeaseTakenOver + ": lease " + old.LeaseID + " (generation 1) of dead holder client gone pid 4242 taken over by "
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	noLease(t, f, a)
}

// TestRunRefusesALiveHoldersLease: a lease another live process holds is
// refused (125) and left as it was; with --wait and a timeout, wt-exec
// says whom it waits on and refuses once the timeout passed.
func TestRunRefusesALiveHoldersLease(t *testing.T) {
	f, a := gatedOff(t)
	held := f.Lease(a, otherProcess(t), nil)
	ran := filepath.Join(t.TempDir(), "ran")
	for _, c := range []struct {
		flags []string
		code  string
		said  string
	}{
		{nil, decision.WriterLeaseHeld, ""},
		{[]string{"--wait", "--timeout", "50ms"}, decision.WriterLeaseWaitTimeout, "wt-exec: waiting: "},
	} {
		code, _, stderr := launch(t, a.WorktreePath, c.flags, "/bin/sh", "-c", `touch "$0"`, ran)
		if code != ExitRefused || !strings.Contains(stderr, "wt-exec: refused: "+c.code+": ") || !strings.Contains(stderr, c.said) {
			t.Errorf("%q: exit %d, want %d refusing %s (saying %q):\n%s", c.flags, code, ExitRefused, c.code, c.said, stderr)
		}
		if _, err := os.Stat(ran); !os.IsNotExist(err) {
			t.Fatalf("%q: the command ran: %v", c.flags, err)
		}
		if l, ok := leaseOf(t, f, a); !ok || l.LeaseID != held.LeaseID || l.Generation != held.Generation {
			t.Fatalf("%q: the live holder's lease changed: %+v", c.flags, l)
		}
	}
}

// TestRunCommandThatCannotStart: a command not found is 127, one found but
// not executable 126; neither takes a lease.
func TestRunCommandThatCannotStart(t *testing.T) {
	f, a := gatedOff(t)
	notExec := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		command string
		status  int
		code    string
	}{
		{"wt-test-no-such-command", ExitNotFound, decision.CommandNotFound},
		{notExec, ExitNotExecutable, decision.CommandNotRunnable},
	} {
		code, _, stderr := launch(t, a.WorktreePath, nil, c.command)
		if code != c.status || !strings.Contains(stderr, c.code) {
			t.Errorf("%s: exit %d, want %d with %s:\n%s", c.command, code, c.status, c.code, stderr)
		}
		noLease(t, f, a)
	}
}

// TestRunOutsideAnyRepositoryRefuses: a directory that does not exist,
// one no repository holds, or a repository wt does not govern is refused
// before anything runs.
func TestRunOutsideAnyRepositoryRefuses(t *testing.T) {
	t.Parallel()
	out := gittest.Outside(t)
	_, plainRepo, _ := gittest.Repo(t)
	for _, c := range []struct {
		dir, code string
	}{
		{filepath.Join(out, "missing"), decision.InvalidTarget},
		{out, decision.NotAGitRepository},
		{plainRepo, decision.NotInitialized},
	} {
		code, _, stderr := launch(t, c.dir, nil, "true")
		if code != ExitRefused || !strings.Contains(stderr, c.code) {
			t.Errorf("-C %s: exit %d, want %d with %s:\n%s", c.dir, code, ExitRefused, c.code, stderr)
		}
	}
}

// TestRunWritesTheGrantAsJSON: --json gets the grant's envelope once the
// command runs: the code, the lease the command was given, its
// allocation; in the canonical checkout, a grant without a lease.
func TestRunWritesTheGrantAsJSON(t *testing.T) {
	f, a := gatedOff(t)
	tmp := t.TempDir()
	out, seen := filepath.Join(tmp, "out.json"), filepath.Join(tmp, "lease-id")
	code, _, stderr := launch(t, a.WorktreePath, []string{"--json", out}, "/bin/sh", "-c", `echo "$WT_LEASE_ID" >"$0"; exit 5`, seen)
	if code != 5 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	env := readEnvelope(t, out)
	d, _ := env["decision"].(map[string]any)
	lease, _ := d["lease"].(map[string]any)
	alloc, _ := d["allocation"].(map[string]any)
	id := readLine(t, seen)
	if env["ok"] != true || d["code"] != decision.WriterLeaseAcquired || d["applicable"] != true || lease["lease_id"] != id ||
		alloc["allocation_id"] != a.AllocationID || !strings.Contains(d["reason"].(string), "lease "+id+" generation 1 held by client sh pid ") {
		t.Errorf("envelope %v", env)
	}
	noLease(t, f, a)

	code, _, stderr = launch(t, f.Dir, []string{"--json", out}, "true")
	if code != 0 {
		t.Fatalf("canonical: exit %d: %s", code, stderr)
	}
	env = readEnvelope(t, out)
	d, _ = env["decision"].(map[string]any)
	if env["ok"] != true || d["code"] != decision.NotApplicable || d["applicable"] != false || d["role"] != "canonical" ||
		d["reason"] != "role canonical takes no writer lease ("+decision.DedicatedRoleGate+")" {
		t.Errorf("canonical envelope %v", env)
	}
}

// TestRunSaysWhyACommitMetNoGate: a commit the command made on the task
// branch with the gate switched off is reported when the run ends, with
// why it met no gate and how to put the gate back.
func TestRunSaysWhyACommitMetNoGate(t *testing.T) {
	f, a := gatedOff(t)
	code, _, stderr := launch(t, a.WorktreePath, nil, "git", "commit", "-q", "--allow-empty", "-m", "ungated")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "wt-exec: warning: " + decision.UngatedRefMove + ": task T-1's branch " + *a.Branch + " moved 1 time(s) during this run with no gate approval (commits in " +
		a.WorktreePath + " meet no gate now: "
	if !strings.Contains(stderr, want) || !strings.Contains(stderr, "put it back: wt-hook -C "+a.WorktreePath+" install)") {
		t.Errorf("stderr lacks %q and the fix:\n%s", want, stderr)
	}
	if got := gittest.Git(t, a.WorktreePath, "log", "-1", "--format=%s"); got != "ungated" {
		t.Errorf("the branch's tip is %q", got)
	}
	noLease(t, f, a)
}
