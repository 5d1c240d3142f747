package child

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/wrapper/cgroup"
)

// MakeCgroup makes the command's cgroup (the caller does not ask for a
// nested wt-exec, whose command stays in its ancestor's). Where it cannot,
// wt-exec does without, and says why with --verbose.
func (p *Proc) MakeCgroup(name string) {
	if p.cg != nil {
		return
	}
	cg, why := cgroup.Make(name)
	if cg == nil {
		if p.cfg.Verbose {
			p.cfg.Notify("no cgroup for the command: " + why)
		}
		return
	}
	p.cg = cg
}

// CgroupPath is the command's cgroup, "" without one.
func (p *Proc) CgroupPath() string {
	if p.cg == nil {
		return ""
	}
	return p.cg.Path
}

// DropCgroup removes the command's cgroup once nothing is left in it; a
// cgroup that cannot be emptied stays (and so does its evidence).
func (p *Proc) DropCgroup() {
	if p.cg == nil {
		return
	}
	if err := p.cg.Remove(); err != nil {
		p.Notify("the command's cgroup " + p.cg.Path + " could not be removed: " + err.Error())
	}
	p.cg = nil
}

// cleanupCgroup ends what is left in the command's cgroup after every
// child of wt-exec is gone: processes that left wt-exec's tree (reparented
// past it) get SIGTERM, then, after the grace period, the cgroup is killed.
func (p *Proc) cleanupCgroup() {
	if p.cg == nil {
		return
	}
	if n := p.cg.Signal(unix.SIGTERM); n > 0 {
		p.cg.Signal(unix.SIGCONT)
		p.Notify(fmt.Sprintf("stopping %d process(es) left in the command's cgroup, SIGKILL in %s", n, p.cfg.Grace))
		if p.cg.Empty(max(p.cfg.Grace, 0)) {
			return
		}
		p.cg.Kill()
		if !p.cg.Empty(10 * time.Second) {
			p.Notify("processes are still in the command's cgroup " + p.cg.Path + " after SIGKILL")
		}
	}
}
