package wrapper

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/wrapper/cgroup"
	"github.com/wt-tool/wt/wrapper/confine"
)

// forwarded are the signals wt-exec passes to the child's group (docs/design.md, "wt-exec").
var forwarded = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2}

// supervisor runs one child and everything it leaves behind.
type supervisor struct {
	opts  Options
	repo  *alloc.Repo
	grant *lease.Grant
	// tmpDir is a confined command's private TMPDIR ("" when unconfined).
	tmpDir string
	// holderLock is held while the lease is (holderlock.go).
	holderLock *holderLock
	// branchMark is where the task branch stood at the grant.
	branchMark gitrepo.ReflogMark
	// fenceSecret is this run's fencing secret (fleet.NewFenceSecret):
	// its push token carries it, its fleet key a hash of it.
	fenceSecret string
	// cg is the command's cgroup (nil where wt-exec could make none).
	cg *cgroup.Group
	// conf, while a confined command starts, is its confinement; the
	// thread that forks it enforces its ruleset (see confine.Plan.Fork), built
	// with the command's own terminal (ownTTY, its pty when it has one).
	conf   *confine.Plan
	ownTTY string

	// sigs gets every signal a run handles, stops the stop signals until
	// the child starts (watchStart); both are set by catch, once.
	sigs    chan os.Signal
	caught  sync.Once
	restore func() // gives the terminal back its settings

	pid    int         // the child, leader of its own group (or session, with a pty)
	status int         // its exit status once reaped, -1 before
	died   unix.Signal // the signal that killed it, 0 if it exited
	ptmx   *os.File    // the pty's controlling side, nil without a pty
	// outDone is closed when the relay from the pty to stdout has ended.
	outDone chan struct{}
	// fgTTY is the terminal whose foreground group was handed to the child
	// (-1 if none); ownPgrp is the group to give it back to.
	fgTTY   int
	ownPgrp int
	// fleet is the fleet lease wt-exec holds (fleet mode only), and
	// fleetPid the wt-fleet helper keeping it alive: wt-exec's child, but
	// not the command's, so never stopped or waited for as a leftover.
	fleet    fleet.Session
	fleetPid int
	// early is the fleet work begun before the lease section (nil when
	// the policy does not name etcd).
	early *earlyFleet
	// raw is set while the terminal is in raw mode (pty relay): notices
	// wait in held until it is restored, so that they are not printed as
	// a staircase (a raw terminal does not return the carriage at \n).
	raw    bool
	held   []string
	noteMu sync.Mutex
	// view is a confined run's private view of the common dir (nil
	// without one), pub the publisher of its branch, endPub what stops it.
	view *confine.View
	pub  *confine.Publisher
	// viewBase is where the task branch stood at the grant, onView what
	// records a view before it is made (confine.Recorder).
	viewBase string
	onView   func(string) error
	endPub   context.CancelFunc
	pubEnd   chan struct{}
	// moves are the publications to record in the store, recorded is
	// closed once they are.
	moves    chan confine.Move
	recorded chan struct{}
	// gitMu is held while the publisher runs git, and while reap and
	// terminate run: neither reaps nor kills the publisher's git.
	gitMu     sync.Mutex
	reapLater atomic.Bool
	// transferred is set when the lease went to what the command left
	// running: its view stays for them (endView).
	transferred bool
	// broker serves a confined command's store requests (broker.go).
	broker net.Listener
	stops  chan os.Signal
	// startCtx ends at a stop signal before the child starts (watchStart);
	// stopSig is that signal.
	startCtx context.Context
	stopSig  atomic.Value
	// now is the clock of --wait's deadline (time.Now when nil; a test's
	// clock in tests).
	now func() time.Time
}

// prepare readies wt-exec for a child, before the lease section starts it.
func (s *supervisor) prepare() error {
	// PR_SET_CHILD_SUBREAPER: orphans below us (a daemon that double-forked
	// and setsid'ed away) are reparented to wt-exec instead of init, so
	// they stay ours to find, signal and reap.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return decision.Wrap(decision.Internal, err, "become a child subreaper")
	}
	s.restore = func() {}
	s.status = -1
	return nil
}

// catch makes sure the signals a run handles are caught, and sets s.sigs
// and s.stops: it takes the channels Early set up (waiting until they
// catch), else sets them up now. Signals are caught before the child
// exists (launch calls catch before the fork), so none is lost between
// fork and the supervision loop; they wait in the channels until then.
// Taken there rather than before the lease section, Early's set-up (the
// runtime's signal thread and a round trip with it per signal, 0.5 ms and
// more on a busy machine) overlaps the section's reads and writes.
func (s *supervisor) catch() {
	s.caught.Do(func() {
		if s.sigs, s.stops = early.take(); s.sigs == nil {
			s.sigs, s.stops = notifyChannels()
		}
	})
}

// stopCatching ends the catching of signals for a run that ends without a
// child to forward them to.
func (s *supervisor) stopCatching() {
	s.catch()
	signal.Stop(s.sigs)
}

// notifyChannels starts catching the signals a run handles: every one it
// forwards or acts on into sigs, and the stop signals (SIGINT, SIGTERM,
// SIGHUP, SIGQUIT) also into stops.
func notifyChannels() (sigs, stops chan os.Signal) {
	sigs, stops = make(chan os.Signal, 16), make(chan os.Signal, 1)
	signal.Notify(sigs, append([]os.Signal{unix.SIGWINCH, unix.SIGCHLD}, forwarded...)...)
	signal.Notify(stops, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT)
	return sigs, stops
}

// early is signal catching begun as wt-exec starts ([Early]).
var early earlySignals

type earlySignals struct {
	mu          sync.Mutex
	ready       chan struct{} // closed once sigs and stops catch
	sigs, stops chan os.Signal
}

// Early starts catching the signals a run handles, in the background, for
// the first run of this process to take. The first signal.Notify of a
// process starts the Go runtime's signal thread and waits for it (about
// 0.2 ms, a twentieth of a run); begun at wt-exec's start, that wait
// overlaps the reading of the command line. A stop signal that arrives
// from then on is held for the run, which then never starts its command.
func Early() {
	early.mu.Lock()
	defer early.mu.Unlock()
	if early.ready != nil {
		return
	}
	ready := make(chan struct{})
	early.ready = ready
	go func() {
		sigs, stops := notifyChannels()
		early.mu.Lock()
		early.sigs, early.stops = sigs, stops
		early.mu.Unlock()
		close(ready)
	}()
}

// take returns the channels Early set up, once they catch, or nils when
// Early was not called or a run took them already.
func (e *earlySignals) take() (sigs, stops chan os.Signal) {
	e.mu.Lock()
	ready := e.ready
	e.mu.Unlock()
	if ready == nil {
		return nil, nil
	}
	<-ready
	e.mu.Lock()
	defer e.mu.Unlock()
	sigs, stops = e.sigs, e.stops
	e.sigs, e.stops = nil, nil
	return sigs, stops
}

// watchStart makes the context that a stop signal (SIGINT, SIGTERM,
// SIGHUP, SIGQUIT) cancels before the child starts: it ends a wait for the
// store's lock, and Run's start callback refuses to launch the child once
// it is done, so a signal sent before the child exists means the child
// never exists. The signal also waits in s.sigs, as every signal does, for
// supervise. The returned function ends the watch.
func (s *supervisor) watchStart() func() {
	ctx, cancel := context.WithCancel(context.Background())
	s.startCtx = ctx
	done := make(chan struct{})
	go func() {
		s.catch()
		select {
		case sig := <-s.stops:
			s.stopSig.Store(sig)
			cancel()
		case <-done:
		}
	}()
	return func() {
		s.catch()
		signal.Stop(s.stops)
		close(done)
		cancel()
	}
}

// notify reports what happens while the child runs (Options.Notify): at
// once, or, while the terminal is raw, once it is restored.
// The publisher of a confined run's branch notifies from a goroutine of
// its own.
func (s *supervisor) notify(msg string) {
	s.noteMu.Lock()
	defer s.noteMu.Unlock()
	if s.raw {
		s.held = append(s.held, msg)
		return
	}
	s.opts.Notify(msg)
}

// setRaw records that the terminal is raw (or no longer is), and prints
// the notices held meanwhile once it is not.
func (s *supervisor) setRaw(raw bool) {
	s.noteMu.Lock()
	defer s.noteMu.Unlock()
	s.raw = raw
	if raw {
		return
	}
	held := s.held
	s.held = nil
	for _, m := range held {
		s.opts.Notify(m)
	}
}

// stopped is the refusal for a signal that came before the child started.
func (s *supervisor) stopped() error {
	sig, _ := s.stopSig.Load().(unix.Signal)
	return decision.New(decision.Interrupted, "wt-exec was sent %s before its command started: the command was not started", unix.SignalName(sig)).
		WithHint("nothing of it runs; start it again when you mean to").
		WithFact("signal", int(sig))
}

// launch starts the child (inside the lease section) in the checkout c
// and returns its process group. The child's start ticks are read at once: until it is
// reaped, even an exited child's /proc entry is there, and nothing reaps
// before supervise.
func (s *supervisor) launch(path string, env []string, conf *confine.Plan, c gitrepo.Checkout, task string) (*store.ChildGroup, error) {
	s.catch()
	argv := s.opts.Args
	if !s.opts.Nested {
		// WT_VIEW says the command's store is a private view's (the gate
		// leaves the ledger to wt-exec's publication): only this run sets it.
		env = withoutVar(env, store.ViewEnv)
	}
	if conf != nil {
		s.conf = conf
		defer func() { s.conf = nil }()
		env = confinedEnv(env, conf.TempDir)
		if conf.View() != nil {
			env = append(env, store.ViewEnv+"=1")
		}
		if err := confine.CloseInherited(s.opts.KeepFDs); err != nil {
			return nil, err
		}
		// A confined command runs in a linked worktree (confine.New).
		if kv, err := s.startBroker(c, task, conf.TempDir); err == nil {
			env = append(withoutVar(env, store.BrokerEnv), kv)
		} else {
			s.notify("the run's lease handoff and transfer cannot go through wt-exec: " + err.Error())
		}
	}
	restore, err := s.start(path, argv, env)
	s.restore = restore
	if err != nil {
		return nil, err
	}
	st, err := proc.ReadStat(s.pid)
	if err != nil {
		return nil, nil // Gone already: there is no group to record.
	}
	child := &store.ChildGroup{PID: s.pid, StartTicks: st.StartTicks}
	if s.cg != nil {
		child.Cgroup = s.cg.Path
	}
	return child, nil
}

// abort stops a child whose lease could not be written, and reaps it.
func (s *supervisor) abort() {
	_ = unix.Kill(-s.pid, unix.SIGKILL) // Best effort: it may be gone.
	s.opts.Grace = 0
	s.supervise()
}

// supervise runs until the child and every descendant are gone, and
// returns wt-exec's exit status.
//
// The signals stay caught afterwards, until wt-exec exits: a stop signal
// that arrives while the lease is released (a store section, bounded by
// the store lock's wait) no longer kills wt-exec half way and leaves the
// lease to be taken over; it is dropped, and wt-exec ends as the child
// did (DieBy). Ending the catching cost a round trip with the runtime's
// signal thread for each of the eight signals, 0.15 ms of every run.
func (s *supervisor) supervise() int {
	defer s.restore()
	var renew <-chan time.Time
	if s.opts.TTL > 0 && s.grant.Applicable {
		t := time.NewTicker(s.opts.TTL / 3)
		defer t.Stop()
		renew = t.C
	}
	// The child may have ended before the first SIGCHLD was caught.
	s.reap()
	for s.status < 0 {
		select {
		case sig := <-s.sigs:
			if sig == unix.SIGCHLD {
				s.reap()
			} else {
				s.signal(sig)
			}
		case <-renew:
			if err := lease.Renew(s.repo, s.grant, s.opts.TTL); err != nil {
				s.notify("renewing the lease failed: " + err.Error())
			}
		}
	}
	s.giveTerminalBack()
	s.cleanup()
	return s.status
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
// reaps again when the publisher is done (pubDone).
func (s *supervisor) reap() (none bool) {
	if !s.gitMu.TryLock() {
		s.reapLater.Store(true)
		return false
	}
	defer s.gitMu.Unlock()
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
		case pid == s.pid:
			s.status = exitStatus(ws)
			if ws.Signaled() {
				s.died = ws.Signal()
			}
		}
	}
}

// noneLeft reaps what has exited and reports whether nothing of the
// command is left: no child at all, or (in fleet mode) none but the
// helper, which a reading of /proc tells apart.
func (s *supervisor) noneLeft() bool {
	if s.reap() {
		return true
	}
	if s.fleetPid == 0 {
		return false
	}
	sc, err := proc.NewScan()
	if err != nil {
		return false // unreadable is not evidence that nothing is left
	}
	for _, pid := range sc.Descendants(os.Getpid()) {
		if pid != s.fleetPid {
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
func (s *supervisor) cleanup() {
	if s.noneLeft() {
		s.cleanupCgroup()
		s.drainOutput()
		return
	}
	if pid := s.transferredTo(); pid != 0 {
		s.transferred = true
		s.notify(fmt.Sprintf("the lease was transferred to pid %d (wt-admin lease transfer): what the command left runs on under it", pid))
		return
	}
	n := s.terminate(unix.SIGTERM)
	s.notify(fmt.Sprintf("the command exited; stopping %d leftover process(es), SIGKILL in %s", n, s.opts.Grace))
	grace := time.NewTimer(max(s.opts.Grace, 0))
	defer grace.Stop()
	// A SIGCHLD lost to a full channel must not stall the end: poll too.
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	killing := false
	for !s.noneLeft() {
		select {
		case sig := <-s.sigs:
			if sig == unix.SIGINT || sig == unix.SIGTERM {
				grace.Reset(0)
			}
		case <-grace.C:
			killing = true
			n := s.terminate(unix.SIGKILL)
			s.notify(fmt.Sprintf("killed %d leftover process(es) after the grace period", n))
		case <-poll.C:
			if killing {
				s.terminate(unix.SIGKILL) // what forked since the last round
			}
		}
	}
	s.cleanupCgroup()
	s.drainOutput()
}

// transferredTo is the pid this run's lease was transferred to (wt-admin
// lease transfer), 0 when it was not. Asked only when the command left
// processes behind.
func (s *supervisor) transferredTo() int {
	g := s.grant
	if g == nil || !g.Applicable || !g.Owned {
		return 0
	}
	pid := 0
	_ = s.repo.Store.Read(func(tx *store.Tx) error {
		l, ok, err := tx.Lease(g.Lease.AllocationID)
		if err == nil && ok && l.LeaseID == g.Lease.LeaseID && l.Provenance != nil &&
			l.Provenance.How == store.ProvenanceTransferred && !l.Holder.Same(g.Lease.Holder) {
			pid = l.Holder.PID
		}
		return err
	})
	return pid
}

// terminate sends sig to the child's group and to every descendant of
// wt-exec, and returns how many processes it signalled.
func (s *supervisor) terminate(sig unix.Signal) int {
	// Not the publisher's git: its publication ends first.
	s.gitMu.Lock()
	defer s.gitMu.Unlock()
	_ = unix.Kill(-s.pid, sig) // Best effort: ESRCH is an empty group.
	sc, err := proc.NewScan()
	if err != nil {
		return 0
	}
	n := 0
	for _, pid := range sc.Descendants(os.Getpid()) {
		if pid == s.fleetPid {
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
func (s *supervisor) drainOutput() {
	if s.ptmx == nil || s.outDone == nil {
		return
	}
	<-s.outDone
}
