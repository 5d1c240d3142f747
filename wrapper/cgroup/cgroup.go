// Package cgroup is the cgroup v2 wt-exec makes for each command it runs:
// made beneath wt-exec's own, the command cloned into it, signalled,
// killed and waited empty through it, then removed.
package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/proc"
)

// Group is the cgroup v2 wt-exec makes for its command, beneath its
// own cgroup (root, or a delegated subtree such as a systemd user scope):
// the command starts in it (clone into the cgroup, no window outside), and
// every process it ever starts stays in it, whatever session, process
// group or environment that process takes. It is the lease's evidence
// that outlives wt-exec, and cleanup kills through it.
type Group struct {
	// Path is the cgroup's directory, FD an open descriptor of it (for
	// clone into the cgroup: syscall.SysProcAttr.CgroupFD).
	Path string
	FD   int
}

// Make makes the cgroup named name beneath wt-exec's own, or says why it
// cannot (then wt-exec does without, as before cgroups).
func Make(name string) (*Group, string) {
	own, err := proc.OwnCgroup()
	if err != nil {
		return nil, "no cgroup v2 for it: " + err.Error()
	}
	dir := filepath.Join(own, name)
	if err := unix.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Sprintf("wt-exec may not make a cgroup beneath its own, %s (%v): it needs root or a delegated subtree", own, err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Rmdir(dir) // Best effort: just made, empty.
		return nil, fmt.Sprintf("open the cgroup %s: %v", dir, err)
	}
	return &Group{Path: dir, FD: fd}, ""
}

// Members are the processes in the cgroup now.
func (c *Group) Members() ([]int, error) { return proc.CgroupMembers(c.Path) }

// Signal sends sig to every process in the cgroup and returns how many.
func (c *Group) Signal(sig unix.Signal) int {
	pids, err := c.Members()
	if err != nil {
		return 0
	}
	n := 0
	for _, pid := range pids {
		if unix.Kill(pid, sig) == nil {
			n++
		}
	}
	return n
}

// Kill kills every process in the cgroup at once (cgroup.kill, Linux 5.14),
// falling back to SIGKILL of each member.
func (c *Group) Kill() {
	if err := os.WriteFile(filepath.Join(c.Path, "cgroup.kill"), []byte("1"), 0); err != nil {
		c.Signal(unix.SIGKILL)
	}
}

// Empty waits, at most timeout, for the cgroup to have no process: it
// sleeps on inotify of cgroup.events, which the kernel modifies when the
// cgroup's "populated" changes.
func (c *Group) Empty(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	ifd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err == nil {
		defer unix.Close(ifd)
		_, err = unix.InotifyAddWatch(ifd, filepath.Join(c.Path, "cgroup.events"), unix.IN_MODIFY)
	}
	buf := make([]byte, 4096)
	for {
		pids, merr := c.Members()
		if merr == nil && len(pids) == 0 {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		wait := min(left, 100*time.Millisecond) // without inotify, look again this often
		if err == nil {
			wait = left
		}
		_, _ = unix.Poll([]unix.PollFd{{Fd: int32(ifd), Events: unix.POLLIN}}, int(wait.Milliseconds())+1) // Best effort: looked at again below.
		for ifd >= 0 {
			if n, rerr := unix.Read(ifd, buf); n <= 0 || rerr != nil {
				break
			}
		}
	}
}

// Remove removes the (empty) cgroup and closes it.
func (c *Group) Remove() error {
	unix.Close(c.FD)
	if err := unix.Rmdir(c.Path); err != nil && err != unix.ENOENT {
		return err
	}
	return nil
}
