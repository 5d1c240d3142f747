package execcli

import (
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/internal/gittest"
)

// TestExplainRunsNothing: --explain prints the confinement a run would
// have (the mode, from the flags over the policy, then what the kernel
// can give), takes no lease and runs nothing.
func TestExplainRunsNothing(t *testing.T) {
	t.Parallel()
	f, a := gatedOff(t)
	for _, c := range []struct {
		flags []string
		mode  string
	}{
		{nil, "mode off (policy off)"},
		{[]string{"--confine"}, "mode require (policy off)"},
		{[]string{"--sandbox"}, "mode require (policy off)"},
	} {
		args := append(append([]string{"--explain", "-C", a.WorktreePath}, c.flags...), "--", "/bin/sh", "-c", "exit 9")
		code, stdout, stderr := execute(t, args...)
		if code != 0 || stderr != "" {
			t.Fatalf("%q: exit %d:\n%s", c.flags, code, stderr)
		}
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		if lines[0] != c.mode {
			t.Errorf("%q: first line %q, want %q", c.flags, lines[0], c.mode)
		}
		if len(lines) < 2 || !strings.HasPrefix(lines[1], "confinement of "+a.WorktreePath) && !strings.HasPrefix(lines[1], "this kernel cannot confine") {
			t.Errorf("%q: does not say what the kernel gives:\n%s", c.flags, stdout)
		}
		noLease(t, f, a)
	}
}

// TestExplainRefusesOutsideAGovernedRepository: --explain reads the
// policy, which a repository wt does not govern has not.
func TestExplainRefusesOutsideAGovernedRepository(t *testing.T) {
	t.Parallel()
	_, plainRepo, _ := gittest.Repo(t)
	for _, c := range []struct{ dir, code string }{
		{gittest.Outside(t), decision.NotAGitRepository},
		{plainRepo, decision.NotInitialized},
	} {
		code, stdout, stderr := execute(t, "--explain", "-C", c.dir, "--", "sh")
		if code != ExitRefused || stdout != "" || !strings.Contains(stderr, "wt-exec: refused: "+c.code+": ") {
			t.Errorf("-C %s: exit %d, stdout %q, want %d with %s:\n%s", c.dir, code, stdout, ExitRefused, c.code, stderr)
		}
	}
}
