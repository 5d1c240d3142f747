package doctor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/install"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wtfixture"
)

// TestMain keeps every git away from the configuration of the user and of
// the machine (gittest.Setenv), before any test runs.
func TestMain(m *testing.M) {
	gittest.Setenv()
	os.Exit(m.Run())
}

// governed is a fresh governed repository with wt's gate installed as
// wt-hook install does (install.InstallGate, with a stand-in for wt-hook
// that lets every write through), and one feature worktree, of task T-1,
// at w1.
func governed(t *testing.T) (*wtfixture.Repo, store.Allocation) {
	t.Helper()
	f := wtfixture.New(t, policy.Change{})
	bin := filepath.Join(t.TempDir(), "wt-hook")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\ncat >/dev/null\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := install.InstallGate(f.Ctx, f.R.Git, bin, false); err != nil {
		t.Fatal(err)
	}
	return f, f.Allocate("T-1", "", "w1")
}

// run runs doctor on f's canonical checkout, failing the test on an error.
func run(t *testing.T, f *wtfixture.Repo) Report {
	t.Helper()
	rep, err := Run(context.Background(), f.Dir)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

// repoWord is the repository as the fixes name it.
func repoWord(f *wtfixture.Repo) string { return shell.Word(f.Dir) }

// exited is a process of this boot that has exited: a `true` read before
// it is waited (until then its /proc entry stays).
func exited(t *testing.T) proc.Identity {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	id, err := proc.Describe(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	return id
}

// deadHolder is a lease holder (client gone) that has exited.
func deadHolder(t *testing.T) proc.Holder {
	t.Helper()
	id := exited(t)
	return proc.Holder{ClientID: "gone", PID: id.PID, BootID: id.BootID, StartTicks: id.StartTicks}
}

// tableNames are the names of the table's checks, in its order.
func tableNames() []string {
	var names []string
	for _, c := range checks {
		names = append(names, c.name)
	}
	return names
}

// wantNamedChecks fails the test unless every finding and note of rep
// names a check of the table.
func wantNamedChecks(t *testing.T, rep Report) {
	t.Helper()
	names := tableNames()
	for _, f := range slices.Concat(rep.Findings, rep.Notes) {
		if !slices.Contains(names, f.Check) {
			t.Errorf("finding %+v names check %q, not one of the table's %q", f, f.Check, names)
		}
	}
}

// describe is rep's findings (and notes), a line each, for a failure's
// message.
func describe(rep Report) string {
	var b strings.Builder
	for _, f := range rep.Findings {
		b.WriteString("\n  finding " + f.Check + ": " + f.Subject + ": " + f.Problem + " [fix: " + f.Fix + "] [hint: " + f.Hint + "]")
	}
	for _, f := range rep.Notes {
		b.WriteString("\n  note " + f.Check + ": " + f.Subject + ": " + f.Problem)
	}
	return b.String()
}

// holdOpen starts a process that holds the file at p open (made if
// need be) until the test ends. It is no descendant of the test's (a
// scan of who uses a path never counts the asker's own): a shell opens
// the file, leaves a sleep holding it, and exits.
func holdOpen(t *testing.T, p string) {
	t.Helper()
	out, err := exec.Command("sh", "-c", `exec 3>>"$1"; sleep 600 </dev/null >/dev/null 2>&1 & echo $!`, "sh", p).Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
}

// shimsInHooksDir reports whether the git on PATH runs wt's gate from
// shims in the hooks dir (before git 2.54; later ones run hooks defined
// in configuration, and install puts none there).
func shimsInHooksDir(t *testing.T) bool {
	t.Helper()
	v, err := gitrepo.GitVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return !v.ConfigHooks()
}
