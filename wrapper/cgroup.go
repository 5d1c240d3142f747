package wrapper

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/proc"
)

// leaseCgroup is the cgroup v2 wt-exec makes for its command, beneath its
// own cgroup (root, or a delegated subtree such as a systemd user scope):
// the command starts in it (clone into the cgroup, no window outside), and
// every process it ever starts stays in it, whatever session, process
// group or environment that process takes. It is the lease's evidence
// that outlives wt-exec, and cleanup kills through it.
type leaseCgroup struct {
	path string
	fd   int
}

// makeCgroup makes the cgroup named name beneath wt-exec's own, or says
// why it cannot (then wt-exec does without, as before cgroups).
func makeCgroup(name string) (*leaseCgroup, string) {
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
	return &leaseCgroup{path: dir, fd: fd}, ""
}

// members are the processes in the cgroup now.
func (c *leaseCgroup) members() ([]int, error) { return proc.CgroupMembers(c.path) }

// signal sends sig to every process in the cgroup and returns how many.
func (c *leaseCgroup) signal(sig unix.Signal) int {
	pids, err := c.members()
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

// kill kills every process in the cgroup at once (cgroup.kill, Linux 5.14),
// falling back to SIGKILL of each member.
func (c *leaseCgroup) kill() {
	if err := os.WriteFile(filepath.Join(c.path, "cgroup.kill"), []byte("1"), 0); err != nil {
		c.signal(unix.SIGKILL)
	}
}

// empty waits, at most timeout, for the cgroup to have no process: it
// sleeps on inotify of cgroup.events, which the kernel modifies when the
// cgroup's "populated" changes.
func (c *leaseCgroup) empty(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	ifd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err == nil {
		defer unix.Close(ifd)
		_, err = unix.InotifyAddWatch(ifd, filepath.Join(c.path, "cgroup.events"), unix.IN_MODIFY)
	}
	buf := make([]byte, 4096)
	for {
		pids, merr := c.members()
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

// remove removes the (empty) cgroup and closes it.
func (c *leaseCgroup) remove() error {
	unix.Close(c.fd)
	if err := unix.Rmdir(c.path); err != nil && err != unix.ENOENT {
		return err
	}
	return nil
}

// prepareCgroup makes the command's cgroup (not for a nested wt-exec,
// whose command stays in its ancestor's). Where it cannot, wt-exec does
// without, and says why with --verbose.
func (s *supervisor) prepareCgroup(name string) {
	if s.cg != nil || s.opts.Nested {
		return
	}
	cg, why := makeCgroup(name)
	if cg == nil {
		if s.opts.Verbose {
			s.opts.Notify("no cgroup for the command: " + why)
		}
		return
	}
	s.cg = cg
}

// dropCgroup removes the command's cgroup once nothing is left in it; a
// cgroup that cannot be emptied stays (and so does its evidence).
func (s *supervisor) dropCgroup() {
	if s.cg == nil {
		return
	}
	if err := s.cg.remove(); err != nil {
		s.notify("the command's cgroup " + s.cg.path + " could not be removed: " + err.Error())
	}
	s.cg = nil
}

// cleanupCgroup ends what is left in the command's cgroup after every
// child of wt-exec is gone: processes that left wt-exec's tree (reparented
// past it) get SIGTERM, then, after the grace period, the cgroup is killed.
func (s *supervisor) cleanupCgroup() {
	if s.cg == nil {
		return
	}
	if n := s.cg.signal(unix.SIGTERM); n > 0 {
		s.cg.signal(unix.SIGCONT)
		s.notify(fmt.Sprintf("stopping %d process(es) left in the command's cgroup, SIGKILL in %s", n, s.opts.Grace))
		if s.cg.empty(max(s.opts.Grace, 0)) {
			return
		}
		s.cg.kill()
		if !s.cg.empty(10 * time.Second) {
			s.notify("processes are still in the command's cgroup " + s.cg.path + " after SIGKILL")
		}
	}
}
