package execcli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/install"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wtfixture"
	"github.com/wt-tool/wt/wrapper"
)

// TestMain keeps every git away from the configuration of the user and of
// the machine (gittest.Setenv), and every run away from a wt-exec the
// tests may themselves run under (its lease's variables, its
// confinement's mark), before any test runs.
func TestMain(m *testing.M) {
	gittest.Setenv()
	for _, k := range []string{"WT_LEASE_ID", "WT_ALLOCATION_ID", "WT_CLIENT_ID", "WT_HOLDER_PID", "WT_SESSION_ID", "WT_RUN_ID", wrapper.ConfinedEnv} {
		os.Unsetenv(k)
	}
	os.Exit(m.Run())
}

// execute runs wt-exec in this process with args and returns its exit
// status and what it wrote on stdout and stderr.
func execute(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code, _, _ = ExecDying(args, &out, &errb)
	return code, out.String(), errb.String()
}

// plain are the flags of a run that needs neither a pty nor Landlock:
// the unit tests leave those to the end-to-end suite.
var plain = []string{"--no-confine", "--no-pty"}

// launch is execute in dir with the plain flags, extra flags and then the
// command.
func launch(t *testing.T, dir string, flags []string, command ...string) (code int, stdout, stderr string) {
	t.Helper()
	args := append(append([]string{"-C", dir}, plain...), flags...)
	return execute(t, append(append(args, "--"), command...)...)
}

// gatedOff is a governed repository with one feature worktree (task T-1
// at w1) whose gate the operator switched off (wt-admin init --no-hooks):
// wt-exec launches there, saying so. (Putting the gate back needs the
// wt-hook installed beside the running binary, which a test binary has
// not.)
func gatedOff(t *testing.T) (*wtfixture.Repo, store.Allocation) {
	t.Helper()
	f := wtfixture.New(t, policy.Change{})
	a := f.Allocate("T-1", "", "w1")
	if err := install.SwitchOff(f.R.Git.CommonDir); err != nil {
		t.Fatal(err)
	}
	return f, a
}

// leaseOf is allocation a's writer lease as the store holds it now.
func leaseOf(t *testing.T, f *wtfixture.Repo, a store.Allocation) (store.Lease, bool) {
	t.Helper()
	var l store.Lease
	var ok bool
	if err := f.R.Store.Read(func(tx *store.Tx) error {
		var err error
		l, ok, err = tx.Lease(a.AllocationID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return l, ok
}

// noLease fails the test when allocation a has a writer lease.
func noLease(t *testing.T, f *wtfixture.Repo, a store.Allocation) {
	t.Helper()
	if l, ok := leaseOf(t, f, a); ok {
		t.Fatalf("allocation %s still has a lease: %+v", a.TaskKey, l)
	}
}

// otherProcess starts a process that lives until the test ends (not an
// ancestor of this one) and returns it as a lease holder.
func otherProcess(t *testing.T) proc.Holder {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	id, err := proc.Describe(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return proc.Holder{ClientID: "other", PID: id.PID, BootID: id.BootID, StartTicks: id.StartTicks}
}

// readEnvelope decodes the one JSON envelope in file p.
func readEnvelope(t *testing.T, p string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return decodeEnvelope(t, b)
}

func decodeEnvelope(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var env map[string]any
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("not one JSON envelope: %v\n%s", err, b)
	}
	if env["command"] != Bin || env["schema_version"] != float64(1) {
		t.Fatalf("envelope of %v, schema %v: %s", env["command"], env["schema_version"], b)
	}
	return env
}

// readLine is the first line of file p (what a child wrote there).
func readLine(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return line
}

// snapshotDir lists every file under dir with its content, to show that a
// refusal changed nothing there.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			c, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.Write(c)
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
