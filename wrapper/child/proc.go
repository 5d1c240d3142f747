// Package child is the command wt-exec runs, as a process (docs/design.md,
// "wt-exec"): it catches the signals a run handles and forwards them to the
// command's group, starts the command in its own process group or pty
// session and in its cgroup, with its confinement's ruleset applied on the
// thread that forks it, hands the terminal to it and back, reaps every
// descendant (wt-exec is their subreaper), stops what is left after the
// grace period, holds notices while the terminal is raw, and ends wt-exec
// by the command's signal (DieBy).
//
// It knows nothing of leases: what the run's orchestration (package
// wrapper) asks of it comes in as a Config (the terminal and the standard
// streams, the grace period, the renewal of the lease while the command
// runs, whether the lease went to what the command left running), and the
// orchestration's own processes (the fleet helper, the publisher's and the
// broker's gits) are kept from the reaping with Spare and WithoutReaping.
package child

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/wrapper/cgroup"
	"github.com/wt-tool/wt/wrapper/confine"
)

// PTYMode chooses how the child meets the terminal.
type PTYMode int

// PTY modes.
const (
	// PTYAuto gives the child a pty when stdin and stdout are terminals.
	PTYAuto PTYMode = iota
	// PTYOn always gives the child a new pty.
	PTYOn
	// PTYOff never does: with a terminal on stdin, the child's group
	// becomes the terminal's foreground group instead.
	PTYOff
)

// Config is what the run gives its child's mechanics.
type Config struct {
	// Dir is the directory the child runs in ("" is the current one).
	Dir string
	// Stdin, Stdout and Stderr are the child's standard streams (or, with
	// a pty, what its pty is relayed from and to).
	Stdin, Stdout, Stderr *os.File
	PTY                   PTYMode
	// Grace is how long leftovers get between SIGTERM and SIGKILL.
	Grace time.Duration
	// Verbose reports, through Notify, what wt-exec does without (a cgroup
	// it may not make).
	Verbose bool
	// Notify reports what happens while the child runs (Options.Notify).
	Notify func(string)
	// Renewal, when set, is asked as the supervision loop starts how often
	// the lease is renewed while the child runs, and how: a nil renew
	// means no renewal.
	Renewal func() (every time.Duration, renew func())
	// Transferred, when set, is asked once the child exited and left
	// processes behind: the pid the lease was transferred to (wt-admin
	// lease transfer), 0 when it was not. They are then left running.
	Transferred func() int
}

// Proc runs one child and everything it leaves behind.
type Proc struct {
	cfg Config
	// cg is the command's cgroup (nil where wt-exec could make none).
	cg *cgroup.Group
	// conf, while a confined command starts, is its confinement; the
	// thread that forks it enforces its ruleset (see confine.Plan.Fork), built
	// with the command's own terminal (ownTTY, its pty when it has one).
	conf   *confine.Plan
	ownTTY string

	// sigs gets every signal a run handles, stops the stop signals until
	// the child starts (WatchStart); both are set by Catch, once.
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
	// fleetPid is the wt-fleet helper keeping the fleet lease alive (Spare):
	// wt-exec's child, but not the command's, so never stopped or waited
	// for as a leftover.
	fleetPid int
	// raw is set while the terminal is in raw mode (pty relay): notices
	// wait in held until it is restored, so that they are not printed as
	// a staircase (a raw terminal does not return the carriage at \n).
	raw    bool
	held   []string
	noteMu sync.Mutex
	// gitMu is held while the publisher runs git, and while reap and
	// terminate run: neither reaps nor kills the publisher's git.
	gitMu     sync.Mutex
	reapLater atomic.Bool
	stops     chan os.Signal
	// stopSig is the stop signal that came before the child started
	// (WatchStart).
	stopSig atomic.Value
}

// New readies the mechanics of one child, before the lease section
// starts it.
func New(cfg Config) *Proc {
	return &Proc{cfg: cfg, restore: func() {}, status: -1}
}

// BecomeSubreaper makes wt-exec the subreaper of what it starts.
func BecomeSubreaper() error {
	// PR_SET_CHILD_SUBREAPER: orphans below us (a daemon that double-forked
	// and setsid'ed away) are reparented to wt-exec instead of init, so
	// they stay ours to find, signal and reap.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return decision.SayWrap(decision.Internal, err, "become-child")
	}
	return nil
}

// Pid is the child's pid, the leader of its own group (or session, with a
// pty); 0 before it started.
func (p *Proc) Pid() int { return p.pid }

// Died is the signal the child died of, 0 if it exited (or runs).
func (p *Proc) Died() unix.Signal { return p.died }

// Spare names a child of wt-exec that is not the command's (the fleet
// helper): never stopped or waited for as a leftover.
func (p *Proc) Spare(pid int) { p.fleetPid = pid }

// Restore gives the terminal back its settings.
func (p *Proc) Restore() { p.restore() }

// Notify reports what happens while the child runs (Options.Notify): at
// once, or, while the terminal is raw, once it is restored.
// The publisher of a confined run's branch notifies from a goroutine of
// its own.
func (p *Proc) Notify(msg string) {
	p.noteMu.Lock()
	defer p.noteMu.Unlock()
	if p.raw {
		p.held = append(p.held, msg)
		return
	}
	p.cfg.Notify(msg)
}

// setRaw records that the terminal is raw (or no longer is), and prints
// the notices held meanwhile once it is not.
func (p *Proc) setRaw(raw bool) {
	p.noteMu.Lock()
	defer p.noteMu.Unlock()
	p.raw = raw
	if raw {
		return
	}
	held := p.held
	p.held = nil
	for _, m := range held {
		p.cfg.Notify(m)
	}
}

// Start starts the child (see start) with path, argv and env; conf, when
// not nil, is its confinement, whose ruleset the thread that forks it
// enforces. On an error the child never started.
func (p *Proc) Start(path string, argv, env []string, conf *confine.Plan) error {
	p.conf = conf
	defer func() { p.conf = nil }()
	restore, err := p.start(path, argv, env)
	p.restore = restore
	return err
}
