package wrapper

import (
	"context"
	"net"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/wrapper/child"
	"github.com/wt-tool/wt/wrapper/confine"
)

// supervisor runs one child and everything it leaves behind.
type supervisor struct {
	opts  Options
	repo  *alloc.Repo
	grant *lease.Grant
	// tmpDir is a confined command's private TMPDIR ("" when unconfined).
	tmpDir string
	// boundary is what a confined run's failure is told of its
	// confinement (confine.Plan.Boundary; "" when unconfined).
	boundary string
	// refusals is the file wt's hooks note their refusals of the run in
	// (store.RefusalsEnv; "" when unconfined).
	refusals string
	// holderLock is held while the lease is (holderlock.go).
	holderLock *holderLock
	// branchMark is where the task branch stood at the grant.
	branchMark gitrepo.ReflogMark
	// fenceSecret is this run's fencing secret (fleet.NewFenceSecret):
	// its push token carries it, its fleet key a hash of it.
	fenceSecret string
	// child is the command's process: its group or pty, its signals, its
	// cgroup, its reaping (package child).
	child *child.Proc
	// fleet is the fleet lease wt-exec holds (fleet mode only); the
	// wt-fleet helper keeping it alive is spared by child (Proc.Spare).
	fleet fleet.Session
	// early is the fleet work begun before the lease section (nil when
	// the policy does not name etcd).
	early *earlyFleet
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
	// transferred is set when the lease went to what the command left
	// running: its view stays for them (endView).
	transferred bool
	// broker serves a confined command's store requests (broker.go).
	broker net.Listener
	// startCtx ends at a stop signal before the child starts
	// (Proc.WatchStart).
	startCtx context.Context
	// now is the clock of --wait's deadline (time.Now when nil; a test's
	// clock in tests).
	now func() time.Time
}

// prepare readies wt-exec for a child, before the lease section starts it.
func (s *supervisor) prepare() error {
	if err := child.BecomeSubreaper(); err != nil {
		return err
	}
	s.child = child.New(child.Config{Dir: s.opts.Dir, Stdin: s.opts.Stdin, Stdout: s.opts.Stdout, Stderr: s.opts.Stderr,
		PTY: s.opts.PTY, Grace: s.opts.Grace, Verbose: s.opts.Verbose, Notify: s.opts.Notify,
		Renewal: s.renewal, Transferred: s.leaseTransferred})
	return nil
}

// Early starts catching the signals a run handles, in the background, for
// the first run of this process to take (child.Early).
func Early() { child.Early() }

// DieBy ends this process by sig, as its child died (child.DieBy).
func DieBy(sig unix.Signal, toGroup bool) { child.DieBy(sig, toGroup) }

// notify reports what happens while the child runs (Proc.Notify).
func (s *supervisor) notify(msg string) { s.child.Notify(msg) }

// catch makes sure the signals a run handles are caught (Proc.Catch).
func (s *supervisor) catch() { s.child.Catch() }

// stopCatching ends the catching of signals for a run that ends without a
// child to forward them to.
func (s *supervisor) stopCatching() { s.child.StopCatching() }

// stopped is the refusal for a signal that came before the child started.
func (s *supervisor) stopped() error { return s.child.Stopped() }

// launch starts the child (inside the lease section) in the checkout c
// and returns its process group. The child's start ticks are read at once: until it is
// reaped, even an exited child's /proc entry is there, and nothing reaps
// before Supervise.
func (s *supervisor) launch(path string, env []string, conf *confine.Plan, c gitrepo.Checkout, task string) (*store.ChildGroup, error) {
	s.child.Catch()
	argv := s.opts.Args
	if !s.opts.Nested {
		// WT_VIEW says the command's store is a private view's (the gate
		// leaves the ledger to wt-exec's publication): only this run sets it.
		env = withoutVar(env, store.ViewEnv)
	}
	if conf != nil {
		if !s.opts.Sandbox {
			// A sandbox (land's test) has no way through to offer: its
			// output is the test's log, not an agent's.
			s.boundary = conf.Boundary(c.TopLevel)
		}
		env = confinedEnv(env, conf.TempDir)
		env = withoutVar(env, store.RefusalsEnv)
		if p, err := makeRefusals(conf.TempDir); err == nil {
			s.refusals = p
			env = append(env, store.RefusalsEnv+"="+p)
		}
		if conf.View() != nil {
			env = append(env, store.ViewEnv+"=1")
		}
		if err := confine.CloseInherited(s.opts.KeepFDs); err != nil {
			return nil, err
		}
		// A confined command runs in a linked worktree (confine.New). A
		// sandbox has no authority to pass on: no broker.
		env = withoutVar(env, store.BrokerEnv)
		if !s.opts.Sandbox {
			if kv, err := s.startBroker(c, task, conf.TempDir); err == nil {
				env = append(env, kv)
			} else {
				s.notify("the run's lease handoff and transfer cannot go through wt-exec: " + err.Error())
			}
		}
	}
	if err := s.child.Start(path, argv, env, conf); err != nil {
		return nil, err
	}
	st, err := proc.ReadStat(s.child.Pid())
	if err != nil {
		return nil, nil // Gone already: there is no group to record.
	}
	group := &store.ChildGroup{PID: s.child.Pid(), StartTicks: st.StartTicks}
	if cg := s.child.CgroupPath(); cg != "" {
		group.Cgroup = cg
	}
	return group, nil
}

// renewal is how often, and how, the lease is renewed while the child
// runs (Config.Renewal): every third of its TTL, when the grant has one
// to renew.
func (s *supervisor) renewal() (time.Duration, func()) {
	if s.opts.TTL > 0 && s.grant.Applicable {
		return s.opts.TTL / 3, func() {
			if err := lease.Renew(s.repo, s.grant, s.opts.TTL); err != nil {
				s.notify("renewing the lease failed: " + err.Error())
			}
		}
	}
	return 0, nil
}

// leaseTransferred is the pid this run's lease was transferred to
// (Config.Transferred); when it was, the view stays for what the command
// left running (endView).
func (s *supervisor) leaseTransferred() int {
	pid := s.transferredTo()
	if pid != 0 {
		s.transferred = true
	}
	return pid
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

// prepareCgroup makes the command's cgroup (not for a nested wt-exec,
// whose command stays in its ancestor's). Where it cannot, wt-exec does
// without, and says why with --verbose.
func (s *supervisor) prepareCgroup(name string) {
	if s.opts.Nested {
		return
	}
	s.child.MakeCgroup(name)
}
