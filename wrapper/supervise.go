package wrapper

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// forwarded are the signals wt-exec passes to the child's group (SPEC §6.4).
var forwarded = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2}

// supervisor runs one child and everything it leaves behind.
type supervisor struct {
	opts  Options
	repo  *alloc.Repo
	grant *lease.Grant

	sigs    chan os.Signal
	restore func() // gives the terminal back its settings

	pid  int      // the child, leader of its own group (or session, with a pty)
	ptmx *os.File // the pty's controlling side, nil without a pty
	// outDone is closed when the relay from the pty to stdout has ended.
	outDone chan struct{}
	// fgTTY is the terminal whose foreground group was handed to the child
	// (-1 if none); ownPgrp is the group to give it back to.
	fgTTY   int
	ownPgrp int
}

type exited struct {
	pid    int
	status unix.WaitStatus
}

// prepare readies wt-exec for a child, before the lease section starts it.
func (s *supervisor) prepare() error {
	// PR_SET_CHILD_SUBREAPER: orphans below us (a daemon that double-forked
	// and setsid'ed away) are reparented to wt-exec instead of init, so
	// they stay ours to find, signal and reap.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return decision.Wrap(decision.Internal, err, "become a child subreaper")
	}
	// Signals are caught before the child exists, so none is lost between
	// fork and the loop; they wait in the channel until then.
	s.sigs = make(chan os.Signal, 16)
	signal.Notify(s.sigs, append([]os.Signal{unix.SIGWINCH}, forwarded...)...)
	s.restore = func() {}
	return nil
}

// launch starts the child (inside the lease section) and returns its
// process group. The child's start ticks are read at once: until it is
// reaped, even an exited child's /proc entry is there, and nothing reaps
// before supervise.
func (s *supervisor) launch(path string, env []string) (*store.ChildGroup, error) {
	restore, err := s.start(path, env)
	s.restore = restore
	if err != nil {
		return nil, err
	}
	st, err := proc.ReadStat(s.pid)
	if err != nil {
		return nil, nil // Gone already: there is no group to record.
	}
	return &store.ChildGroup{PID: s.pid, StartTicks: st.StartTicks}, nil
}

// abort stops a child whose lease could not be written, and reaps it.
func (s *supervisor) abort() {
	_ = unix.Kill(-s.pid, unix.SIGKILL) // Best effort: it may be gone.
	s.opts.Grace = 0
	s.supervise()
}

// supervise runs until the child and every descendant are gone, and
// returns wt-exec's exit status.
func (s *supervisor) supervise() int {
	defer signal.Stop(s.sigs)
	defer s.restore()
	exits := make(chan exited, 16)
	none := make(chan struct{})
	go reap(exits, none)

	var renew <-chan time.Time
	if s.opts.TTL > 0 && s.grant.Applicable {
		t := time.NewTicker(s.opts.TTL / 3)
		defer t.Stop()
		renew = t.C
	}
	status := -1
	for status < 0 {
		select {
		case sig := <-s.sigs:
			s.signal(sig)
		case e := <-exits:
			if e.pid == s.pid {
				status = exitStatus(e.status)
			}
		case <-none:
			// Every child is reaped. reap sent each exit before closing
			// none, so the main child's is waiting in exits.
			for status < 0 {
				e := <-exits
				if e.pid == s.pid {
					status = exitStatus(e.status)
				}
			}
		case <-renew:
			if err := lease.Renew(s.repo, s.grant, s.opts.TTL); err != nil {
				s.opts.Notify("renewing the lease failed: " + err.Error())
			}
		}
	}
	s.giveTerminalBack()
	s.cleanup(s.sigs, exits, none)
	return status
}

// reap collects every child, the main one and reparented orphans alike
// (tini's reap_zombies): wait4(-1) until ECHILD, then close none. Only the
// main child's status becomes the exit status.
func reap(exits chan<- exited, none chan<- struct{}) {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			close(none)
			return
		}
		exits <- exited{pid, ws}
	}
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
func (s *supervisor) signal(sig os.Signal) {
	if sig == unix.SIGWINCH {
		if s.ptmx != nil {
			// Resize the child's pty; the kernel then sends SIGWINCH to
			// the pty's foreground group itself.
			_ = pty.InheritSize(s.opts.Stdin, s.ptmx) // Best effort: a size we cannot read is left as it was.
		}
		return
	}
	// The child leads its group (Setpgid, or Setsid with a pty), so its
	// pgid is its pid. ESRCH only means the group is already empty.
	_ = unix.Kill(-s.pid, sig.(syscall.Signal)) // Best effort: ESRCH is not an error.
}

// cleanup ends what remains after the child exited: the rest of its group
// and every reparented descendant get SIGTERM (and SIGCONT, so a stopped
// one can act on it), then SIGKILL after the grace period, until no child is
// left to reap. A second SIGINT or SIGTERM to wt-exec skips the grace.
func (s *supervisor) cleanup(sigs <-chan os.Signal, exits <-chan exited, none <-chan struct{}) {
	grace := time.NewTimer(max(s.opts.Grace, 0))
	defer grace.Stop()
	if hasChildren() {
		n := s.terminate(unix.SIGTERM)
		s.opts.Notify(fmt.Sprintf("the command exited; stopping %d leftover process(es), SIGKILL in %s", n, s.opts.Grace))
	}
	var kill <-chan time.Time
	for {
		select {
		case <-none:
			s.drainOutput()
			return
		case <-exits:
		case sig := <-sigs:
			if sig == unix.SIGINT || sig == unix.SIGTERM {
				grace.Reset(0)
			}
		case <-grace.C:
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			kill = t.C
			n := s.terminate(unix.SIGKILL)
			s.opts.Notify(fmt.Sprintf("killed %d leftover process(es) after the grace period", n))
		case <-kill:
			s.terminate(unix.SIGKILL)
		}
	}
}

// hasChildren reports whether any child (live or zombie) remains, without
// reaping it. As a subreaper with its main child gone, no child means no
// descendant at all.
func hasChildren() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return !errors.Is(err, unix.ECHILD)
}

// terminate sends sig to the child's group and to every descendant of
// wt-exec, and returns how many processes it signalled.
func (s *supervisor) terminate(sig unix.Signal) int {
	_ = unix.Kill(-s.pid, sig) // Best effort: ESRCH is an empty group.
	sc, err := proc.NewScan()
	if err != nil {
		return 0
	}
	n := 0
	for _, pid := range sc.Descendants(os.Getpid()) {
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
func (s *supervisor) drainOutput() {
	if s.ptmx == nil || s.outDone == nil {
		return
	}
	<-s.outDone
}
