package wrapper

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/wrapper/cgroup"
)

// prepareCgroup makes the command's cgroup (not for a nested wt-exec,
// whose command stays in its ancestor's). Where it cannot, wt-exec does
// without, and says why with --verbose.
func (s *supervisor) prepareCgroup(name string) {
	if s.cg != nil || s.opts.Nested {
		return
	}
	cg, why := cgroup.Make(name)
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
	if err := s.cg.Remove(); err != nil {
		s.notify("the command's cgroup " + s.cg.Path + " could not be removed: " + err.Error())
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
	if n := s.cg.Signal(unix.SIGTERM); n > 0 {
		s.cg.Signal(unix.SIGCONT)
		s.notify(fmt.Sprintf("stopping %d process(es) left in the command's cgroup, SIGKILL in %s", n, s.opts.Grace))
		if s.cg.Empty(max(s.opts.Grace, 0)) {
			return
		}
		s.cg.Kill()
		if !s.cg.Empty(10 * time.Second) {
			s.notify("processes are still in the command's cgroup " + s.cg.Path + " after SIGKILL")
		}
	}
}
