package child

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/proc"
)

// Abort stops a child whose lease could not be written, and reaps it.
func (p *Proc) Abort() {
	_ = unix.Kill(-p.pid, unix.SIGKILL) // Best effort: it may be gone.
	p.cfg.Grace = 0
	p.Supervise()
}

// Supervise runs until the child and every descendant are gone, and
// returns wt-exec's exit status.
//
// The signals stay caught afterwards, until wt-exec exits: a stop signal
// that arrives while the lease is released (a store section, bounded by
// the store lock's wait) no longer kills wt-exec half way and leaves the
// lease to be taken over; it is dropped, and wt-exec ends as the child
// did (DieBy). Ending the catching cost a round trip with the runtime's
// signal thread for each of the eight signals, 0.15 ms of every run.
func (p *Proc) Supervise() int {
	defer p.restore()
	var renew <-chan time.Time
	var renewLease func()
	if p.cfg.Renewal != nil {
		if every, f := p.cfg.Renewal(); f != nil {
			t := time.NewTicker(every)
			defer t.Stop()
			renew, renewLease = t.C, f
		}
	}
	// The child may have ended before the first SIGCHLD was caught.
	p.reap()
	for p.status < 0 {
		select {
		case sig := <-p.sigs:
			if sig == unix.SIGCHLD {
				p.reap()
			} else {
				p.signal(sig)
			}
		case <-renew:
			renewLease()
		}
	}
	p.giveTerminalBack()
	p.cleanup()
	return p.status
}

// reap collects every child that has exited, the main one and reparented
// orphans alike, without blocking (tini's reap_zombies): wait4(-1, WNOHANG)
// until none is waiting. Only the main child's status becomes the exit
// status. It reports whether no child is left at all (ECHILD): as a
// subreaper whose main child is gone, that means no descendant is left.
// SIGCHLD drives it, so no thread sits blocked in wait4.
//
// While the publisher of a confined run's branch runs git (gitMu), reap
// waits for nothing: wait4(-1) would take its git's exit from it. It
// reaps again when the publisher is done (WithoutReaping).
func (p *Proc) reap() (none bool) {
	if !p.gitMu.TryLock() {
		p.reapLater.Store(true)
		return false
	}
	defer p.gitMu.Unlock()
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return true // ECHILD
		case pid == 0:
			return false
		case pid == p.pid:
			p.status = exitStatus(ws)
			if ws.Signaled() {
				p.died = ws.Signal()
			}
		}
	}
}

// noneLeft reaps what has exited and reports whether nothing of the
// command is left: no child at all, or (in fleet mode) none but the
// helper, which a reading of /proc tells apart.
func (p *Proc) noneLeft() bool {
	if p.reap() {
		return true
	}
	if p.fleetPid == 0 {
		return false
	}
	sc, err := proc.NewScan()
	if err != nil {
		return false // unreadable is not evidence that nothing is left
	}
	for _, pid := range sc.Descendants(os.Getpid()) {
		if pid != p.fleetPid {
			return false
		}
	}
	return true
}

func exitStatus(ws unix.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return 1
}

// signal handles one signal sent to wt-exec while the child runs.
func (p *Proc) signal(sig os.Signal) {
	if sig == unix.SIGWINCH {
		if p.ptmx != nil {
			// Resize the child's pty; the kernel then sends SIGWINCH to
			// the pty's foreground group itself.
			_ = pty.InheritSize(p.cfg.Stdin, p.ptmx) // Best effort: a size we cannot read is left as it was.
		}
		return
	}
	// The child leads its group (Setpgid, or Setsid with a pty), so its
	// pgid is its pid. ESRCH only means the group is already empty.
	_ = unix.Kill(-p.pid, sig.(syscall.Signal)) // Best effort: ESRCH is not an error.
}

// cleanup ends what remains after the child exited: the rest of its group
// and every reparented descendant get SIGTERM (and SIGCONT, so a stopped
// one can act on it), then SIGKILL after the grace period, until no child is
// left to reap. A second SIGINT or SIGTERM to wt-exec skips the grace.
func (p *Proc) cleanup() {
	if p.noneLeft() {
		p.cleanupCgroup()
		p.drainOutput()
		return
	}
	if pid := p.transferredTo(); pid != 0 {
		p.Notify(fmt.Sprintf("the lease was transferred to pid %d (wt-admin lease transfer): what the command left runs on under it", pid))
		return
	}
	n := p.terminate(unix.SIGTERM)
	p.Notify(fmt.Sprintf("the command exited; stopping %d leftover process(es), SIGKILL in %s", n, p.cfg.Grace))
	grace := time.NewTimer(max(p.cfg.Grace, 0))
	defer grace.Stop()
	// A SIGCHLD lost to a full channel must not stall the end: poll too.
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	killing := false
	for !p.noneLeft() {
		select {
		case sig := <-p.sigs:
			if sig == unix.SIGINT || sig == unix.SIGTERM {
				grace.Reset(0)
			}
		case <-grace.C:
			killing = true
			n := p.terminate(unix.SIGKILL)
			p.Notify(fmt.Sprintf("killed %d leftover process(es) after the grace period", n))
		case <-poll.C:
			if killing {
				p.terminate(unix.SIGKILL) // what forked since the last round
			}
		}
	}
	p.cleanupCgroup()
	p.drainOutput()
}

// terminate sends sig to the child's group and to every descendant of
// wt-exec, and returns how many processes it signalled.
func (p *Proc) terminate(sig unix.Signal) int {
	// Not the publisher's git: its publication ends first.
	p.gitMu.Lock()
	defer p.gitMu.Unlock()
	_ = unix.Kill(-p.pid, sig) // Best effort: ESRCH is an empty group.
	sc, err := proc.NewScan()
	if err != nil {
		return 0
	}
	n := 0
	for _, pid := range sc.Descendants(os.Getpid()) {
		if pid == p.fleetPid {
			continue
		}
		if unix.Kill(pid, sig) == nil {
			n++
			if sig == unix.SIGTERM {
				_ = unix.Kill(pid, unix.SIGCONT) // Best effort: a stopped process acts on SIGTERM only once continued.
			}
		}
	}
	return n
}

// drainOutput waits until the pty relay has copied everything the child
// wrote: once every process holding the pty's other side is gone, reading
// it ends with EIO.
func (p *Proc) drainOutput() {
	if p.ptmx == nil || p.outDone == nil {
		return
	}
	<-p.outDone
}

// transferredTo is the pid the lease was transferred to (Config.Transferred),
// 0 when it was not. Asked only when the command left processes behind.
func (p *Proc) transferredTo() int {
	if p.cfg.Transferred == nil {
		return 0
	}
	return p.cfg.Transferred()
}

// WithoutReaping runs f (a publication's gits, a brokered wt-admin) while neither
// reap nor terminate runs, then has the children reaped that exited
// meanwhile: SIGCHLD to wt-exec itself wakes the loop that reaps.
func (p *Proc) WithoutReaping(f func()) {
	p.gitMu.Lock()
	f()
	p.gitMu.Unlock()
	if p.reapLater.Swap(false) {
		_ = unix.Kill(os.Getpid(), unix.SIGCHLD) // Best effort: the loop also polls.
	}
}
