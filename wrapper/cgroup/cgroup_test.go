package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestGroup: a command cloned into the group is its member, is signalled
// and killed through it, the group is waited empty and removed.
func TestGroup(t *testing.T) {
	g, why := Make("wt-unit-" + filepath.Base(t.TempDir()))
	if g == nil {
		t.Skip("no cgroup here: " + why)
	}
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD}
	if err := cmd.Start(); err != nil {
		g.Remove()
		t.Fatal(err)
	}
	defer cmd.Process.Kill() // Best effort: killed through the group below.
	if m, err := g.Members(); err != nil || !slices.Equal(m, []int{cmd.Process.Pid}) {
		t.Fatalf("members: %v %v, want [%d]", m, err, cmd.Process.Pid)
	}
	if n := g.Signal(unix.SIGSTOP); n != 1 {
		t.Errorf("SIGSTOP reached %d processes", n)
	}
	g.Kill()
	if err := cmd.Wait(); err == nil {
		t.Error("sleep 600 ended without being killed")
	}
	// Waited empty: the event, not the time, ends the wait.
	if !g.Empty(time.Minute) {
		t.Fatal("the group is not empty after its only member died")
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.Path); !os.IsNotExist(err) {
		t.Errorf("the group's directory is still there: %v", err)
	}
}

// TestMakeRefused: a name that cannot be a directory beneath wt-exec's
// own cgroup makes no group, and says why.
func TestMakeRefused(t *testing.T) {
	if g, why := Make("no/such/parent"); g != nil || why == "" {
		t.Errorf("Make of a nested name: %+v %q", g, why)
	}
}
