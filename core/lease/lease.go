package lease

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/crashpoint"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/liveness"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// Records is what lease operations read and write, inside one exclusive
// section. *store.Tx implements it.
type Records interface {
	Repository() (store.Repository, error)
	Policy() (store.Policy, bool, error)
	Lease(allocationID string) (store.Lease, bool, error)
	PutLease(*store.Lease) error
	RemoveLease(allocationID string) error
	Allocation(id string) (store.Allocation, error)
	PutAllocationRuntime(*store.Allocation) error
	AppendEvent(store.Event) error
	Journals() ([]store.Journal, error)
	Handoff(allocationID string) (store.Handoff, bool, error)
	PutHandoff(*store.Handoff) error
	RemoveHandoff(allocationID string) error
}

// Evidence is one reading of the processes on this machine.
type Evidence = liveness.Evidence

// Occupancy kinds a runtime binding may declare (docs/design.md, "Allocations, roles and lifecycles").
var Kinds = []string{"agent", "test", "preview", "background", "command"}

// Request asks for write entitlement on one worktree.
type Request struct {
	Holder proc.Holder
	// Owner, when not empty, must be the allocation's owner.
	Owner string
	// Allocation, when not empty, must be the allocation of the worktree
	// (UNREGISTERED_WORKTREE otherwise): wt-exec --task runs in its task's
	// worktree, never in another that took its place meanwhile.
	Allocation string
	// TTL is how long the lease stays unexpired without renewal; 0 means
	// no expiry.
	TTL time.Duration
	// Kind is the runtime occupancy kind recorded while the child runs.
	Kind string
	// Fence, when set, is called in fleet mode for a grant this call owns
	// (acquired or taken over), after the grant is reserved and with the
	// store's lock free (it talks to etcd), before the child starts: it
	// takes the fleet lease and returns it, to be recorded in the lease.
	// Its error refuses the grant (the child never starts) and gives back
	// the reservation.
	Fence func(g Grant, pol store.Policy) (*store.FleetLease, error)
	// Confined, when set, is recorded in a lease this call creates, as
	// start left it (start fills it in when it confines the command; an
	// ABI of 0 means it did not).
	Confined *store.Confinement
	// ExpectGeneration, when set, refuses the grant (WRITER_LEASE_MISMATCH)
	// unless the worktree's lease generation is still this one: whoever
	// inspected the lease acts only on the lease it saw.
	ExpectGeneration *int
	// ExpectHead, when set, refuses the grant (STALE_HEAD) unless the
	// checkout's HEAD is at this commit.
	ExpectHead string
}

// Start starts the child for a grant and returns its process group (leader
// pid and start ticks), or nil when the child is already gone.
type Start func(g Grant) (*store.ChildGroup, error)

// Grant is the outcome of Acquire.
type Grant struct {
	Code string `json:"code"`
	// Applicable is false for roles with their own gates: no lease was
	// taken, and the child runs without one.
	Applicable bool             `json:"applicable"`
	Role       string           `json:"role"`
	Lease      store.Lease      `json:"lease"`
	Allocation store.Allocation `json:"allocation"`
	// Owned is true when this call created the lease (acquired or took it
	// over): the caller releases it. A renewal leaves release to the holder
	// that acquired it.
	Owned bool `json:"owned"`
	// Binding is the runtime occupancy this call added to the allocation,
	// "" if it was already there.
	Binding string `json:"-"`
	// Previous is the lease taken over.
	Previous *store.Lease `json:"previous,omitempty"`
	// Cleared are stale runtime bindings removed on the way.
	Cleared []string `json:"cleared_bindings"`
	// Started is true once start returned a child.
	Started bool `json:"-"`
	// Policy is the repository's policy as the grant read it (for the
	// start function: confinement).
	Policy store.Policy `json:"-"`
	// res is what the section wrote for this grant, to give back if it
	// fails before its child starts.
	res reservation
	// pending is set between the reservation and the lease (see Acquire).
	pending *pendingGrant
	// leaseWritten is true once the lease file holds this grant.
	leaseWritten bool

	commonDir, key string
}

// Env is the environment wt-exec gives its child (docs/design.md, "wt-exec").
func (g Grant) Env() []string {
	if !g.Applicable {
		return nil
	}
	env := []string{
		"WT_LEASE_ID=" + g.Lease.LeaseID,
		"WT_ALLOCATION_ID=" + g.Lease.AllocationID,
		"WT_CLIENT_ID=" + g.Lease.Holder.ClientID,
		fmt.Sprintf("WT_HOLDER_PID=%d", g.Lease.Holder.PID),
	}
	if s := g.Lease.Holder.SessionID; s != nil {
		env = append(env, "WT_SESSION_ID="+*s)
	}
	if s := g.Lease.Holder.RunID; s != nil {
		env = append(env, "WT_RUN_ID="+*s)
	}
	// A task wt-admin land handed back: what it met, for its agent.
	if hb := store.HandbackPath(store.Root(g.commonDir), g.Lease.AllocationID); g.commonDir != "" && fileExists(hb) {
		env = append(env, store.HandbackEnv+"="+hb)
	}
	return env
}

// fileExists reports whether path names a regular file.
func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// Acquire grants write entitlement on the checkout c to req.Holder
// (docs/design.md, "Writer leases"). The checks, in order: the checkout is a
// registered worktree of its repository (UNREGISTERED_WORKTREE); the record
// is valid; an audit worktree takes no writer (AUDIT_READ_ONLY); the checkout
// is on a branch at the recorded path and not locked by anyone but wt
// (INVALID_TARGET); the declared owner matches (OWNER_MISMATCH); the role
// takes writer leases (else NOT_APPLICABLE, with Applicable false); no
// finish or other journaled operation acts on it (TRANSACTION_IN_FLIGHT,
// INTERRUPTED_TRANSACTION); no live foreign runtime occupancy
// (EXTERNAL_BINDING); lifecycle ACTIVE (INVALID_LIFECYCLE). Then: no lease
// is ACQUIRED; the same holder is RENEWED (an expired lease only with a
// TTL, else WRITER_LEASE_EXPIRED); a dead lease is TAKEN_OVER; anything
// else is WRITER_LEASE_HELD.
//
// scan is called at most once, and only when the decision needs live
// evidence beyond the holder's own identity.
//
// The grant takes two exclusive sections, and neither starts a process:
// the first decides and reserves (the allocation's runtime binding and
// generation, git's lock: no other wt-exec can take the worktree from
// then on); then, with the store's lock free, the fleet is asked (in
// fleet mode) and start starts the child and returns its process group;
// the second confirms the reservation and writes the lease, naming that
// group. For NOT_APPLICABLE, start runs with Applicable false and nothing
// written. If start fails, Acquire gives the reservation back and returns
// start's error with Started false; if the second section fails, Started
// is true and the caller must stop the child first.
func Acquire(r *alloc.Repo, c gitrepo.Checkout, req Request, scan func() (Evidence, error), start Start) (Grant, error) {
	if err := validate(req); err != nil {
		return Grant{}, err
	}
	section := func(fn func(tx Records) error) error {
		return r.Store.Write(func(tx *store.Tx) error {
			// Nothing is granted that cannot be recorded: the event log
			// must take lines before the section writes anything.
			if err := tx.PrepareEvents(); err != nil {
				return err
			}
			return fn(tx)
		})
	}
	target := func(tx Records) (alloc.Target, error) { return r.ResolveCheckout(tx.(*store.Tx), c) }
	return acquire(section, target, r.Store.CommonDir(), c, req, sync.OnceValues(scan), start)
}

// acquire is Acquire's sequence; section runs its function inside an
// exclusive section of the store, target resolves the checkout's
// allocation inside the first.
func acquire(section func(func(tx Records) error) error, target func(tx Records) (alloc.Target, error), commonDir string, c gitrepo.Checkout, req Request, scan func() (Evidence, error), start Start) (Grant, error) {
	var g Grant
	err := section(func(tx Records) error {
		t, err := target(tx)
		if err != nil {
			return err
		}
		g, err = decide(tx, commonDir, c, t, req, scan)
		return g.failed(tx, err)
	})
	if err != nil {
		return g, err
	}
	if g.pending == nil {
		// NOT_APPLICABLE: nothing was written, and the child runs unleased.
		if _, err := start(g); err != nil {
			return g, err
		}
		g.Started = true
		return g, nil
	}
	p := g.pending
	// Fleet mode: the store's lock is free while etcd is asked, so no
	// commit gate and no other wt command waits on the network; the
	// reservation keeps every other wt-exec out meanwhile.
	if !p.leasePlaced {
		fl, err := req.Fence(g, p.pol)
		if err != nil {
			return g, g.giveBack(section, err)
		}
		p.lease.Fleet = fl
		if err := section(func(tx Records) error {
			if err := p.stillReserved(tx); err != nil {
				return err
			}
			return g.placeLease(tx)
		}); err != nil {
			return g, g.giveBack(section, err)
		}
	}
	child, err := start(g)
	if err != nil {
		return g, g.giveBack(section, err)
	}
	g.Started = true
	crashpoint.Here("exec:child-started")
	err = section(func(tx Records) error {
		if err := p.stillReserved(tx); err != nil {
			return err
		}
		g.pending = nil
		g, err = recordGrant(tx, g, p.lease, p.alloc, req, child)
		return err
	})
	return g, err
}

// giveBack gives back, in a section of its own, the reservation of a grant
// whose child never started (err says why), if it is still as the grant
// left it; it returns err.
func (g *Grant) giveBack(section func(func(tx Records) error) error, err error) error {
	p := g.pending
	serr := section(func(tx Records) error {
		if p.stillReserved(tx) != nil {
			return nil // Ended or taken by someone else meanwhile: not ours to touch.
		}
		return g.failed(tx, err)
	})
	if serr != nil && !errors.Is(serr, err) {
		return errors.Join(err, serr)
	}
	return err
}

// failed gives back what a grant that failed before its child started
// wrote (the allocation's binding and generation, git's lock), in the same
// section, so that nothing names a lease that never existed; it returns
// err. A grant whose child started is stopped and released by the caller.
func (g *Grant) failed(tx Records, err error) error {
	if err == nil || g.Started || !g.res.wrote() {
		return err
	}
	if uerr := g.res.giveBack(tx); uerr != nil {
		return errors.Join(err, fmt.Errorf("undo the failed grant: %w", uerr))
	}
	g.res, g.pending, g.leaseWritten = reservation{}, nil, false
	g.Applicable, g.Owned, g.Binding = false, false, ""
	return err
}

// reservation is what a grant wrote before its child starts.
type reservation struct {
	// before is the allocation as it was, when the grant rewrote it.
	before *store.Allocation
	// lockPlaced is set once git's lock carries the grant's reason;
	// prevReason and prevLocked are the lock as it was.
	lockPlaced           bool
	prevReason           string
	prevLocked           bool
	commonDir, key, want string
	// leasePlaced is set once the lease file holds the grant; prevLease
	// is the lease it replaced (nil: none).
	leasePlaced bool
	prevLease   *store.Lease
	leaseAlloc  string
	// handoff is the reservation the grant consumed.
	handoff *store.Handoff
}

func (r reservation) wrote() bool {
	return r.before != nil || r.lockPlaced || r.leasePlaced || r.handoff != nil
}

// giveBack restores the lease file, the allocation, git's lock and a
// consumed handoff as they were.
func (r reservation) giveBack(tx Records) error {
	if r.handoff != nil {
		h := *r.handoff
		if err := tx.PutHandoff(&h); err != nil {
			return err
		}
	}
	if r.leasePlaced {
		var err error
		if r.prevLease != nil {
			err = tx.PutLease(r.prevLease)
		} else {
			err = tx.RemoveLease(r.leaseAlloc)
		}
		if err != nil {
			return err
		}
	}
	if r.before != nil {
		cur, err := tx.Allocation(r.before.AllocationID)
		if err != nil {
			return err
		}
		b := *r.before
		b.RecordVersion = cur.RecordVersion
		if err := tx.PutAllocationRuntime(&b); err != nil {
			return err
		}
	}
	if !r.lockPlaced {
		return nil
	}
	if r.prevLocked {
		return gitrepo.ReplaceLock(r.commonDir, r.key, r.prevReason)
	}
	_, err := gitrepo.RemoveLock(r.commonDir, r.key, r.want)
	return err
}

// pendingGrant is a grant reserved under the store's lock and waiting for
// the fleet lease, asked outside it.
type pendingGrant struct {
	pol   store.Policy
	lease store.Lease
	alloc store.Allocation
	// prevLeaseID is the lease file's lease when the grant was reserved
	// ("" when there was none).
	prevLeaseID string
	// leasePlaced is set once the lease file holds lease.
	leasePlaced bool
	commonDir   string
	key         string
}

// stillReserved checks, in the confirming section, that nothing changed
// the reservation while the lock was free: the allocation is as the grant
// left it and the lease file as it was.
func (p *pendingGrant) stillReserved(tx Records) error {
	a, err := tx.Allocation(p.alloc.AllocationID)
	if err != nil {
		return err
	}
	l, has, err := tx.Lease(p.alloc.AllocationID)
	if err != nil {
		return err
	}
	cur := ""
	if has {
		cur = l.LeaseID
	}
	reason, _, err := gitrepo.ReadLock(p.commonDir, p.key)
	if err != nil {
		return decision.SayWrap(decision.InvalidTarget, err, "worktree", p.lease.WorktreePath)
	}
	want := p.prevLeaseID
	if p.leasePlaced {
		want = p.lease.LeaseID
	}
	if a.RecordVersion != p.alloc.RecordVersion || a.LeaseGeneration != p.lease.Generation || cur != want || reason != Reason(p.lease) {
		return decision.HeldChanged(p.lease.WorktreePath).
			WithHint("see who is there: wt-admin status; then run wt-exec again")
	}
	return nil
}

func validate(req Request) error {
	if err := proc.ValidateClientID(req.Holder.ClientID); err != nil {
		return err
	}
	if req.TTL < 0 {
		return decision.Say(decision.InvalidHolder, "lease-ttl", req.TTL).
			WithHint("pass --ttl with a positive duration, e.g. --ttl 10m")
	}
	if !slices.Contains(Kinds, req.Kind) {
		return decision.Say(decision.InvalidRuntimeBinding, "occupancy-kind", req.Kind, Kinds).
			WithHint("pass --kind agent, test, preview, background or command")
	}
	return nil
}

// Reason is the text wt writes into git's lock file of a worktree while a
// lease is held (docs/design.md, "wt-exec").
func Reason(l store.Lease) string {
	return fmt.Sprintf("%s%s client %s pid %d", reasonPrefix, l.LeaseID, l.Holder.ClientID, l.Holder.PID)
}

const reasonPrefix = "wt: writer lease "

// decide checks and, unless the role is not applicable, reserves the
// grant (grant); it starts nothing.
func decide(tx Records, commonDir string, c gitrepo.Checkout, t alloc.Target, req Request, scan func() (Evidence, error)) (Grant, error) {
	a := t.Allocation
	g := Grant{Role: a.Role, Allocation: a, commonDir: commonDir, key: c.Key, Cleared: []string{}}
	ck, err := checkGrant(tx, commonDir, c, a, req, scan)
	if err != nil {
		return g, err
	}
	if ck.notApplicable {
		g.Code = decision.NotApplicable
		if c.Key != gitrepo.MainKey {
			// A worktree of a role with its own gate (wt-admin land's
			// integration worktree) takes no lease, and its command is
			// still confined as the policy says.
			pol, _, err := tx.Policy()
			if err != nil {
				return g, err
			}
			g.Policy = pol
		}
		return g, nil
	}
	return grant(tx, commonDir, c, t, req, scan, g, ck)
}

// checked is what checkGrant found: the current lease (if any), whether an
// empty git lock is a torn one of wt's own, and the allocation's runtime
// bindings sorted into those to keep and the stale ones to clear.
type checked struct {
	notApplicable bool
	existing      store.Lease
	has, tornOwn  bool
	keep, stale   []string
}

// checkGrant refuses what may not take a writer here, in order: an audit
// worktree, an unknown role, a target that is not the allocation's (off
// its branch, moved, locked by someone else), another owner than the one
// declared, a live occupancy of another client, a lifecycle that is not
// ACTIVE. The canonical checkout and roles with gates of their own are
// notApplicable: they run without a lease.
func checkGrant(tx Records, commonDir string, c gitrepo.Checkout, a store.Allocation, req Request, scan func() (Evidence, error)) (checked, error) {
	var ck checked
	if req.Allocation != "" && req.Allocation != a.AllocationID {
		return ck, decision.Say(decision.UnregisteredWorktree, "worktree-no", c.TopLevel, req.Allocation).
			WithHint("see what became of it: wt-admin --repo %s status", shell.Word(c.TopLevel))
	}
	if a.Role == store.RoleAudit {
		return ck, decision.Say(decision.AuditReadOnly, "audit-worktree", c.TopLevel, a.TaskKey).
			WithHint("review it without wt-exec; allocate a feature worktree to write: wt-admin allocate --task KEY --owner NAME PATH")
	}
	if c.Key == gitrepo.MainKey {
		// The canonical checkout is governed by its own gates (docs/design.md,
		// "Allocations, roles and lifecycles"): wt gates no write there, and
		// a policy that refuses what wt does not govern refuses the launch.
		if pol, ok, err := tx.Policy(); err != nil {
			return ck, err
		} else if ok && pol.Unmanaged == store.UnmanagedRefuse {
			return ck, decision.Say(decision.UnmanagedRefused, "canonical-checkout", c.TopLevel).
				WithHint("give the agent a worktree of its own: wt-exec -C %s --task KEY --owner NAME -- COMMAND", shell.Word(c.TopLevel))
		}
		ck.notApplicable = true
		return ck, nil
	}
	if !slices.Contains(store.Roles, a.Role) {
		return ck, decision.Say(decision.InvalidRole, "allocation-task", c.TopLevel, a.TaskKey, a.Role).
			WithHint("inspect it with wt-admin status --json; roles are %s", strings.Join(store.Roles, ", "))
	}
	var err error
	if ck.existing, ck.has, err = tx.Lease(a.AllocationID); err != nil {
		return ck, err
	}
	ck.tornOwn = grantUnfinished(a, ck.existing, ck.has)
	if err := checkTarget(commonDir, c, a, ck.tornOwn); err != nil {
		return ck, err
	}
	if req.Owner != "" && req.Owner != a.Owner {
		return ck, decision.Say(decision.OwnerMismatch, "allocation-task", a.TaskKey, a.Owner, req.Owner).
			WithHint("pass --owner %s, or leave --owner out", shell.Word(a.Owner))
	}
	if a.Role != store.RoleFeature {
		ck.notApplicable = true
		return ck, nil
	}
	if err := underMaintenance(tx, a); err != nil {
		return ck, err
	}
	var current *store.Lease
	if ck.has {
		current = &ck.existing
	}
	if ck.keep, ck.stale, err = sortBindings(a, req.Holder, current, scan); err != nil {
		return ck, err
	}
	if a.Lifecycle != store.Active {
		return ck, decision.Say(decision.InvalidLifecycle, "allocation-task-only", a.TaskKey, a.Lifecycle).
			WithHint("resume it first: %s", shell.Words("wt-admin", "resume", c.TopLevel, "--owner", a.Owner)).
			WithFact("lifecycle", a.Lifecycle)
	}
	return ck, nil
}

// underMaintenance refuses a grant on a worktree that a finish (or any
// journaled operation but an allocation) is acting on: such an apply plans
// and runs git with the store's lock free, and its journal is what keeps
// writers out meanwhile. A live apply is TRANSACTION_IN_FLIGHT, one whose
// wt-admin is gone (or cannot be told) INTERRUPTED_TRANSACTION.
func underMaintenance(tx Records, a store.Allocation) error {
	js, err := tx.Journals()
	if err != nil {
		return err
	}
	for _, j := range js {
		if j.Operation == alloc.OpAllocate || j.Target != a.WorktreePath {
			continue
		}
		if live, err := proc.IsLive(proc.NewReader(), j.Actor); err == nil && live {
			return decision.Say(decision.TransactionInFlight, "task-under", j.Operation, a.TaskKey, j.Actor.PID, j.TransactionID).
				WithHint("wait for it to end, then see the task: wt-admin status")
		}
		return decision.Say(decision.InterruptedTx, "task-was", j.Operation, a.TaskKey, j.Phase, j.TransactionID).
			WithHint("wt-admin doctor prints the command that finishes it")
	}
	return nil
}

// grant takes the lease after checkGrant passed: renewed for the same
// holder, taken over from a dead one, or acquired; then it writes the
// allocation's runtime binding and generation and git's lock, and starts
// the child (or, in fleet mode, reserves and leaves the fleet to Acquire).
func grant(tx Records, commonDir string, c gitrepo.Checkout, t alloc.Target, req Request, scan func() (Evidence, error), g Grant, ck checked) (Grant, error) {
	a := t.Allocation
	existing, has, tornOwn, keep, stale := ck.existing, ck.has, ck.tornOwn, ck.keep, ck.stale
	pre, err := preflight(tx, c, a, req, ck)
	if err != nil {
		return g, err
	}
	g.Policy = pre.pol
	now := pre.now
	l, err := chooseLease(&g, pre.repo, c, a, req, ck, scan, now)
	if err != nil {
		return g, err
	}
	reserved, h := pre.reserved, pre.handoff
	if g.Owned {
		l.Generation = a.LeaseGeneration + 1
		a.LeaseGeneration = l.Generation
		if reserved {
			if err := consume(tx, &g, &l, a, h); err != nil {
				return g, err
			}
		}
	}
	binding, err := proc.RuntimeBinding{Holder: req.Holder, LeaseID: &l.LeaseID, Kind: req.Kind}.Encode()
	if err != nil {
		return g, err
	}
	if !slices.Contains(keep, binding) {
		keep = append(keep, binding)
		g.Binding = binding
	}
	changed := g.Owned || !slices.Equal(keep, a.ExternalBindings)
	a.ExternalBindings = keep
	g.Applicable, g.Cleared, g.Lease = true, append(g.Cleared, stale...), l
	// Order. The allocation (runtime binding, generation) and git's lock
	// are in place before the child starts, so nothing the child does (git
	// included, which ignores wt's store lock) meets a worktree without
	// them. The lease is written once the child's group is known. A crash
	// (SIGKILL) in between leaves a binding whose holder is dead: cleared
	// as stale, unless a process still carries its lease id in its
	// environment (the child, from its first instruction), which fences the
	// worktree until it ends.
	if changed {
		before := t.Allocation
		a.UpdatedAt = store.Stamp(now)
		if err := tx.PutAllocationRuntime(&a); err != nil {
			return g, err
		}
		g.res.before = &before
	}
	crashpoint.Here("exec:binding-written")
	g.Allocation = a
	prevReason, prevLocked, err := gitrepo.ReadLock(commonDir, c.Key)
	if err != nil {
		return g, decision.SayWrap(decision.InvalidTarget, err, "worktree", c.TopLevel)
	}
	if err := placeLock(commonDir, c.Key, l, tornOwn); err != nil {
		return g, err
	}
	if prevLocked && isWtReason(prevReason) && prevReason != Reason(l) && !(has && prevReason == Reason(existing)) {
		// No lease stood behind it: say so, rather than replace it unseen.
		if err := logEvent(tx, "orphan_git_lock_replaced", a, nil, map[string]any{"git_lock": prevReason,
			"why": "git's lock named a wt lease the store does not have (a grant or release cut short)"}); err != nil {
			return g, err
		}
	}
	g.res.lockPlaced, g.res.prevReason, g.res.prevLocked = true, prevReason, prevLocked
	g.res.commonDir, g.res.key, g.res.want = commonDir, c.Key, Reason(l)
	for _, s := range stale {
		if err := logEvent(tx, "runtime_binding_cleared", a, nil, map[string]any{"binding": s, "why": "its holder and process group are gone"}); err != nil {
			return g, err
		}
	}
	prev := ""
	if has {
		prev = existing.LeaseID
	}
	g.pending = &pendingGrant{pol: pre.pol, lease: l, alloc: a, prevLeaseID: prev, commonDir: commonDir, key: c.Key}
	if has {
		before := existing
		g.res.prevLease = &before
	}
	if g.Owned && req.Fence != nil && pre.pol.FleetOn() {
		// The lease is written once the fleet granted it (Acquire).
		return g, nil
	}
	return g, g.placeLease(tx)
}

// selfOrAncestor reports whether h is this process, one of its ancestors
// or one of its children: an occupant a would-be writer brought itself (it
// sat in the worktree waiting, with its fleet helper, or the shell it runs
// from opened there).
func selfOrAncestor(h proc.Holder) bool {
	r := proc.NewReader()
	if h.PID == os.Getpid() {
		return true
	}
	if anc, err := r.HasAncestor(os.Getpid(), h.Identity()); err == nil && anc {
		return true
	}
	self, err := proc.Self()
	if err != nil {
		return false
	}
	desc, err := r.HasAncestor(h.PID, self)
	return err == nil && desc
}

// preflighted is what a grant read and checked before choosing its lease.
type preflighted struct {
	repo     store.Repository
	pol      store.Policy
	now      time.Time
	handoff  store.Handoff
	reserved bool
}

// preflight checks, before anything is written, what a grant may not go
// without: the holder described again (it must be the same live process
// it was resolved as, before the lock), the caller's expectations, a
// handoff reserved for another client, the policy's --require-owner.
func preflight(tx Records, c gitrepo.Checkout, a store.Allocation, req Request, ck checked) (preflighted, error) {
	var p preflighted
	if !holderLive(req.Holder) {
		return p, decision.Say(decision.InvalidHolder, "holder-changed", req.Holder.PID, req.Holder.ClientID).
			WithHint("run wt-exec again from the live holder")
	}
	if err := expectations(c, a, req); err != nil {
		return p, err
	}
	var err error
	if p.repo, err = tx.Repository(); err != nil {
		return p, err
	}
	if p.pol, _, err = tx.Policy(); err != nil {
		return p, err
	}
	p.now = time.Now().UTC()
	renewal := ck.has && ck.existing.Holder.Same(req.Holder)
	if p.handoff, p.reserved, err = reservedFor(tx, a, c, req, renewal, p.now); err != nil {
		return p, err
	}
	if p.pol.RequireOwner && req.Owner == "" && !p.reserved && !renewal {
		return p, decision.Say(decision.OwnerMismatch, "this-repository", a.TaskKey).
			WithHint("pass --owner %s, or have its holder hand the task over: wt-admin lease handoff %s --to-client %s", shell.Word(a.Owner), shell.Word(c.TopLevel), shell.Word(req.Holder.ClientID))
	}
	return p, nil
}

// chooseLease is the lease a grant writes: the same holder's renewed (an
// expired one only with a TTL), a new one over a dead lease (taken over)
// or over none (acquired); a live holder's is WRITER_LEASE_HELD. It sets
// g's code, Owned and Previous.
func chooseLease(g *Grant, repo store.Repository, c gitrepo.Checkout, a store.Allocation, req Request, ck checked, scan func() (Evidence, error), now time.Time) (store.Lease, error) {
	existing := ck.existing
	switch {
	case ck.has && existing.Holder.Same(req.Holder):
		if err := checkDrift(repo, existing, a, c); err != nil {
			return existing, err
		}
		if liveness.Expired(existing, now) && req.TTL == 0 {
			return existing, decision.Say(decision.WriterLeaseExpired, "your-lease", existing.LeaseID, c.TopLevel, deref(existing.ExpiresAt)).
				WithHint("renew it by passing --ttl, e.g. wt-exec --ttl 10m -- ...")
		}
		l := existing
		l.RenewedAt = store.Stamp(now)
		if req.TTL > 0 {
			l.ExpiresAt = expiry(now, req.TTL)
		}
		g.Code = decision.WriterLeaseRenewed
		return l, nil
	case ck.has && running(existing.Holder):
		return existing, held(existing, c.TopLevel, "its holder is running")
	case ck.has:
		ev, err := scan()
		if err != nil {
			return existing, err
		}
		if why := occupied(ev, existing, req.Holder); why != "" {
			return existing, heldOrOrphaned(ev, existing, c.TopLevel, why)
		}
		prev := existing
		g.Previous = &prev
		removeCgroup(prev)
		g.Code, g.Owned = decision.WriterLeaseTakenOver, true
		l := newLease(repo, a, c, req, now)
		why := "its holder had exited and nothing of it ran"
		if liveness.Expired(prev, now) {
			why = "it had expired and its holder had exited"
		}
		l.Provenance = &store.Provenance{How: store.ProvenanceTakenOver, PriorLeaseID: prev.LeaseID, PriorHolder: &prev.Holder,
			By: proc.Actor(), ByClient: req.Holder.ClientID, At: store.Stamp(now), Reason: why}
		return l, nil
	default:
		g.Code, g.Owned = decision.WriterLeaseAcquired, true
	}
	return newLease(repo, a, c, req, now), nil
}

// holderLive reports whether a resolved holder is still the live process
// it was resolved as (a variable: the unit tests' holders are fakes).
var holderLive = running

// expectations refuses a grant whose caller expected another lease
// generation (WRITER_LEASE_MISMATCH) or another HEAD (STALE_HEAD) than the
// worktree has now; nothing is written before.
func expectations(c gitrepo.Checkout, a store.Allocation, req Request) error {
	return expectedState(c.TopLevel, a.LeaseGeneration, req.ExpectGeneration, c.GitDir, c.CommonDir, req.ExpectHead)
}

// expectedState refuses unless the worktree at path is at lease generation
// gen as wantGen says (nil: any), and its checkout (git dir gitDir) has
// HEAD at wantHead ("": any), read from the files: WRITER_LEASE_MISMATCH,
// STALE_HEAD.
func expectedState(path string, gen int, wantGen *int, gitDir, commonDir, wantHead string) error {
	word := shell.Word(path)
	if wantGen != nil && *wantGen != gen {
		return decision.Say(decision.WriterLeaseMismatch, "lease-generation", path, gen, *wantGen).
			WithHint("look at it again: wt-admin lease inspect %s", word).WithFact("generation", gen)
	}
	if wantHead == "" {
		return nil
	}
	head, err := gitrepo.HeadCommit(gitDir, commonDir)
	if err != nil {
		return decision.SayWrap(decision.InvalidTarget, err, "read-head-2", path)
	}
	if head != wantHead {
		return decision.Say(decision.StaleHead, "head-not", path, head, wantHead).
			WithHint("look at it again: git -C %s log -1", word).WithFact("head", head)
	}
	return nil
}

// reservedFor reads the handoff of a's worktree: reserved is true when it
// is for this caller's client (and the grant will consume it). A
// reservation for another client refuses (WRITER_LEASE_RESERVED), but not
// the current holder renewing its own lease; one past its TTL is removed
// (event handoff_expired) and counts for nothing.
func reservedFor(tx Records, a store.Allocation, c gitrepo.Checkout, req Request, renewal bool, now time.Time) (store.Handoff, bool, error) {
	h, ok, err := tx.Handoff(a.AllocationID)
	if err != nil || !ok || renewal {
		return h, false, err
	}
	if h.Expired(now) {
		if err := tx.RemoveHandoff(a.AllocationID); err != nil {
			return h, false, err
		}
		return h, false, logEvent(tx, "handoff_expired", a, nil, map[string]any{"to_client": h.ToClient, "expires_at": h.ExpiresAt, "from_lease_id": h.FromLeaseID})
	}
	if h.ToClient != req.Holder.ClientID {
		return h, false, decision.Say(decision.WriterLeaseReserved, "next-grant", c.TopLevel, h.ToClient, handoffAuthor(h), h.ExpiresAt).
			WithHint("run as that client (wt-exec --client-id %s), or wait for the reservation to be used or to expire (a wt-exec with --wait waits)", shell.Word(h.ToClient)).
			WithFact("to_client", h.ToClient)
	}
	return h, true, nil
}

// ReservedFor reports whether the next grant of checkout c is reserved for
// client by a handoff that has not expired (false when that cannot be
// read: the grant itself decides).
func ReservedFor(r *alloc.Repo, c gitrepo.Checkout, client string) bool {
	ok := false
	_ = r.Store.Read(func(tx *store.Tx) error {
		t, err := r.ResolveCheckout(tx, c)
		if err != nil {
			return err
		}
		h, has, err := tx.Handoff(t.Allocation.AllocationID)
		if err != nil || !has || h.ToClient != client {
			return err
		}
		ok = !h.Expired(time.Now())
		return nil
	})
	return ok
}

// handoffAuthor says who reserved h.
func handoffAuthor(h store.Handoff) string {
	if h.Operator {
		return fmt.Sprintf("an operator (pid %d)", h.By.PID)
	}
	return fmt.Sprintf("client %s, pid %d", h.ByClient, h.By.PID)
}

// consume takes the handoff h into the grant g of lease l: the
// reservation is removed (given back if the grant fails) and the lease
// records where it came from.
func consume(tx Records, g *Grant, l *store.Lease, a store.Allocation, h store.Handoff) error {
	if err := tx.RemoveHandoff(a.AllocationID); err != nil {
		return err
	}
	g.res.handoff = &h
	l.Provenance = &store.Provenance{How: store.ProvenanceHandoff, PriorLeaseID: h.FromLeaseID, By: h.By, ByClient: h.ByClient, At: h.CreatedAt}
	return nil
}

// placeLease writes the pending grant's lease, before its child starts, so
// that the child's first commit finds its holder; the child's group is
// added once it runs (recordGrant). A crash in between leaves a lease
// whose holder is dead and whose child, if it started, carries the lease
// id in its environment: held until that child ends.
func (g *Grant) placeLease(tx Records) error {
	p := g.pending
	if err := tx.PutLease(&p.lease); err != nil {
		return err
	}
	p.leasePlaced, g.res.leasePlaced, g.res.leaseAlloc = true, true, p.lease.AllocationID
	g.leaseWritten, g.Lease = true, p.lease
	return nil
}

// recordGrant writes the lease of a grant whose records are in place and
// whose child runs (child is its group), and the event.
func recordGrant(tx Records, g Grant, l store.Lease, a store.Allocation, req Request, child *store.ChildGroup) (Grant, error) {
	// A renewal keeps the child group of the holder that acquired the
	// lease: that group, not ours, is the evidence it lives.
	if g.Owned {
		l.Child = child
		if req.Confined != nil && req.Confined.ABI > 0 {
			l.Confined = req.Confined
		}
	}
	if err := tx.PutLease(&l); err != nil {
		return g, err
	}
	g.leaseWritten = true
	g.Lease = l
	detail := map[string]any{"generation": l.Generation, "expires_at": l.ExpiresAt, "kind": req.Kind, "code": g.Code, "child": l.Child}
	if l.Provenance != nil {
		detail["provenance"] = l.Provenance
	}
	if g.Previous != nil {
		detail["previous_lease_id"] = g.Previous.LeaseID
		detail["previous_holder"] = g.Previous.Holder
		detail["previous_generation"] = g.Previous.Generation
	}
	name := map[string]string{decision.WriterLeaseAcquired: "writer_lease_acquired",
		decision.WriterLeaseRenewed: "writer_lease_renewed", decision.WriterLeaseTakenOver: "writer_lease_taken_over"}[g.Code]
	return g, logEvent(tx, name, a, &l, detail)
}

// grantUnfinished reports whether the allocation carries the runtime
// binding of a lease that was never written: a wt-exec died inside its
// grant, between the binding and the lease. An empty git lock file found
// then is that grant's, torn by the same death (older wt wrote the file and
// its reason in two steps), not a person's `git worktree lock` without a
// reason.
func grantUnfinished(a store.Allocation, l store.Lease, has bool) bool {
	for _, v := range a.ExternalBindings {
		b, ok, err := proc.DecodeRuntimeBinding(v)
		if err == nil && ok && b.LeaseID != nil && (!has || *b.LeaseID != l.LeaseID) {
			return true
		}
	}
	return false
}

// checkTarget refuses a checkout that is off its branch, not at the
// allocation's recorded path, or locked by anything but wt. An empty lock
// is wt's own torn one when tornOwn (see grantUnfinished).
func checkTarget(commonDir string, c gitrepo.Checkout, a store.Allocation, tornOwn bool) error {
	if a.Role == store.RoleFeature && a.Branch != nil {
		if d := alloc.HeadOffTaskBranch(c, a); d != nil {
			return d
		}
	} else if c.Detached {
		return decision.Say(decision.InvalidTarget, "has-detached", c.TopLevel).
			WithHint("check out the allocation's branch in it: git -C %s switch %s", shell.Word(c.TopLevel), shell.Word(deref(a.Branch)))
	}
	if canon, err := proc.Canonical(a.WorktreePath); err != nil || canon != c.TopLevel {
		return decision.Say(decision.InvalidTarget, "checkout-but", c.TopLevel, a.WorktreePath).
			WithHint("move it back (git worktree move) or inspect it with wt-admin status")
	}
	reason, locked, err := gitrepo.ReadLock(commonDir, c.Key)
	if err != nil {
		return decision.SayWrap(decision.InvalidTarget, err, "worktree", c.TopLevel)
	}
	if locked && !isWtReason(reason) && !(reason == "" && tornOwn) {
		return decision.Say(decision.InvalidTarget, "worktree-locked", c.TopLevel, reason).
			WithHint("ask whoever locked it; git worktree unlock %s lifts it", shell.Word(c.TopLevel))
	}
	return nil
}

// isWtReason reports whether a lock reason is one wt writes: the prefix
// and a lease id.
func isWtReason(reason string) bool {
	rest, ok := strings.CutPrefix(reason, reasonPrefix)
	if !ok || len(rest) < 36 {
		return false
	}
	return ids.Valid(rest[:36])
}

// checkDrift refuses a lease whose identity no longer matches its record.
func checkDrift(repo store.Repository, l store.Lease, a store.Allocation, c gitrepo.Checkout) error {
	if l.RepositoryID != repo.RepositoryID || l.WorktreePath != c.TopLevel || l.Owner != a.Owner {
		return decision.Say(decision.WriterLeaseMismatch, "lease-records",
			l.LeaseID, l.RepositoryID, l.WorktreePath, l.Owner, repo.RepositoryID, c.TopLevel, a.Owner).
			WithHint("release it (it is yours) and acquire again: end this wt-exec and start a new one")
	}
	return nil
}

// sortBindings splits the allocation's external bindings into the ones to
// keep and the stale runtime bindings to clear, and refuses when a live
// foreign one remains. A runtime binding is the caller's own when it names
// the caller's exact holder and the current lease (a renewal). Any other is
// stale only when nothing of it lives (liveness.Alive; a binding of the
// current lease counts that lease's child group too). A live one of the
// current lease is that lease's occupancy (WRITER_LEASE_HELD); a live one
// of another lease, or an opaque binding wt cannot judge, fences the writer
// (EXTERNAL_BINDING).
func sortBindings(a store.Allocation, h proc.Holder, current *store.Lease, scan func() (Evidence, error)) (keep, stale []string, err error) {
	keep = []string{}
	for _, v := range a.ExternalBindings {
		b, ok, err := proc.DecodeRuntimeBinding(v)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return nil, nil, decision.Say(decision.ExternalBinding, "allocation-task", a.TaskKey, v).
				WithHint("whoever added it must remove it; inspect it with wt-admin status --json")
		}
		if b.Kind == proc.OccupantKind {
			// A process the last run left in the worktree: it fences
			// writers while it lives and uses the worktree, and is
			// cleared once it is proven gone or elsewhere (unreadable is
			// neither).
			o, fences := occupantFences(proc.NewReader(), b, a.WorktreePath)
			if !fences || selfOrAncestor(b.Holder) {
				stale = append(stale, v)
				continue
			}
			return nil, nil, OccupiedError(o, shell.Word(a.WorktreePath), a.WorktreePath)
		}
		sameLease := current != nil && b.LeaseID != nil && *b.LeaseID == current.LeaseID
		if sameLease && b.Holder.Same(h) {
			keep = append(keep, v) // the caller's own: a renewal keeps it
			continue
		}
		// A running holder is read from its own /proc entry: every refusal
		// of a --wait waiter while the lease is busy would otherwise read
		// every process on the machine under the store's lock.
		live := running(b.Holder)
		why := "its holder is running"
		if !live {
			ev, err := scan()
			if err != nil {
				return nil, nil, err
			}
			var child *store.ChildGroup
			if sameLease {
				child = current.Child
			}
			why = liveness.Alive(ev, b.Holder, child)
			if why == "" && b.LeaseID != nil {
				why = liveness.Carriers(ev, *b.LeaseID)
			}
		}
		switch {
		case why == "":
			stale = append(stale, v)
		case sameLease:
			d := held(*current, a.WorktreePath, fmt.Sprintf("%s (its %s occupancy by client %s)", why, b.Kind, b.Holder.ClientID))
			if !live {
				d = orphaned(d, *current, a.WorktreePath)
			}
			return nil, nil, d
		case b.LeaseID != nil && current == nil:
			// A wt-exec whose grant is in progress: its binding is
			// written, its lease not yet (in fleet mode it is asking etcd
			// meanwhile). The worktree is being taken by a writer: held,
			// so that --wait waits for it.
			return nil, nil, decision.HeldInGrant(a.WorktreePath, b.Holder.ClientID, b.Holder.PID, *b.LeaseID, !live, why).
				WithHint("wait for it to finish; see who is in the worktree with wt-admin ps %s", shell.Word(a.WorktreePath)).
				WithFact("holder", b.Holder).WithFact("lease_id", *b.LeaseID)
		default:
			return nil, nil, decision.Say(decision.ExternalBinding, "live-process-client", b.Kind, b.Holder.ClientID, a.WorktreePath, b.Holder.Identity(), why).
				WithHint("wait for it to end; see who is there with wt-admin status").
				WithFact("holder", b.Holder)
		}
	}
	return keep, stale, nil
}

// occupied says why a lease that is not the caller's is still alive, or ""
// when it is dead (docs/design.md, "Liveness"): its holder is live, its holder's group or its
// child group has a member, a process carries its lease id in its
// environment (the child of a wt-exec killed before it could record the
// child's group), or another process uses the worktree. The
// asking process, its ancestors and the new holder are not evidence against
// themselves.
func occupied(ev Evidence, l store.Lease, newHolder proc.Holder) string {
	if why := liveness.Alive(ev, l.Holder, l.Child); why != "" {
		return why
	}
	if why := liveness.Carriers(ev, l.LeaseID); why != "" {
		return why
	}
	uses, err := liveness.Users(ev, l.WorktreePath, newHolder.PID)
	if err != nil {
		return "the worktree's users cannot be read: " + err.Error()
	}
	if len(uses) > 0 {
		u := uses[0]
		return fmt.Sprintf("pid %d (%s) uses the worktree (%s %s)", u.PID, u.Command, u.Why, u.Path)
	}
	return ""
}

// heldOrOrphaned is held, with the way out when the lease is orphaned (its
// holder, the wt-exec, is gone while its command runs): see it, and hand
// the lease to it.
func heldOrOrphaned(ev Evidence, l store.Lease, path, why string) *decision.Error {
	d := held(l, path, why)
	if ev.IsLive(l.Holder.Identity()) {
		return d
	}
	return orphaned(d, l, path)
}

// running reports whether holder h is proven to run now, from its own
// /proc entry (false when it cannot be read: then the full reading
// decides).
func running(h proc.Holder) bool {
	live, err := proc.IsLive(proc.NewReader(), h.Identity())
	return err == nil && live
}

// orphaned points a WRITER_LEASE_HELD refusal whose holder is gone at adopt.
func orphaned(d *decision.Error, l store.Lease, path string) *decision.Error {
	return d.WithHint("its wt-exec is gone but its command runs: see it with wt-admin ps %s, and let it go on writing with wt-admin lease adopt %s --client-id %s --holder PID",
		shell.Word(path), shell.Word(path), shell.Word(l.Holder.ClientID))
}

func held(l store.Lease, path, why string) *decision.Error {
	return decision.HeldBy(path, l.Holder.ClientID, l.Holder.PID, l.AcquiredAt, why).
		WithHint("wait your turn: wt-exec --wait -C %s -- COMMAND (in line, in arrival order); see who is there: wt-admin status", shell.Word(path)).
		WithFact("holder", l.Holder).WithFact("lease_id", l.LeaseID)
}

func newLease(repo store.Repository, a store.Allocation, c gitrepo.Checkout, req Request, now time.Time) store.Lease {
	l := store.Lease{LeaseID: ids.New(), RepositoryID: repo.RepositoryID, AllocationID: a.AllocationID,
		WorktreePath: c.TopLevel, Owner: a.Owner, Holder: req.Holder, AcquiredAt: store.Stamp(now), RenewedAt: store.Stamp(now),
		HolderResolverVersion: proc.HolderResolverVersion}
	if req.TTL > 0 {
		l.ExpiresAt = expiry(now, req.TTL)
	}
	return l
}

func expiry(now time.Time, ttl time.Duration) *string {
	s := store.Stamp(now.Add(ttl))
	return &s
}

func deref(s *string) string {
	if s == nil {
		return "(none)"
	}
	return *s
}

func logEvent(tx Records, name string, a store.Allocation, l *store.Lease, detail map[string]any) error {
	e := store.Event{At: store.Stamp(time.Now()), Event: name, Actor: proc.Actor(), Detail: detail}
	id := a.AllocationID
	e.AllocationID = &id
	if l != nil {
		lid, h := l.LeaseID, l.Holder
		e.LeaseID, e.Holder = &lid, &h
	}
	return tx.AppendEvent(e)
}

// removeCgroup removes the cgroup a dead lease's wt-exec made for its
// command, which nobody else removes when that wt-exec was killed. Only an
// empty cgroup can be removed, and a lease is ended only when nothing of it
// runs, so this never takes anything from a live process; it is best
// effort (a cgroup still there costs nothing but a directory).
func removeCgroup(l store.Lease) {
	if l.Child != nil && l.Child.Cgroup != "" {
		_ = os.Remove(l.Child.Cgroup) // Best effort: see above.
	}
}
