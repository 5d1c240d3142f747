package hooks

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/liveness"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// Verdict is the answer to "may this process write through this worktree
// now?" (docs/decisions.md, "Hooks"). A refusal under policy enforcement
// "warn" is Allowed with Warning set to the refusal.
type Verdict struct {
	Allowed bool   `json:"allowed"`
	Code    string `json:"code"`
	Reason  string `json:"reason"`
	// Worktree facts, when the worktree is governed.
	Path         string       `json:"path"`
	Role         string       `json:"role,omitempty"`
	TaskKey      string       `json:"task_key,omitempty"`
	AllocationID string       `json:"allocation_id,omitempty"`
	Branch       string       `json:"branch,omitempty"`
	Lease        *store.Lease `json:"lease,omitempty"`
	// Refusal is the decision that refuses (or, with Warning, would).
	Refusal *decision.Error `json:"-"`
	Warning bool            `json:"warning"`
	// procs is the /proc reader the judgement read through (nil before
	// any): what it read is not read again (see writePass).
	procs *proc.Reader
	// own is true when the entitlement is for the checkout's own
	// allocation (a governed feature worktree judged in itself), the only
	// case in which pre-commit leaves a pass.
	own bool
	// warnOnly is policy enforcement "warn": refusals become warnings.
	warnOnly bool
	// pol is the policy the decision was made under.
	pol store.Policy
	// r is the repository the decision read (its store's ledgers).
	r *alloc.Repo
}

// refuse records a refusal, which policy enforcement warn turns into an
// allowance with a warning.
func (v *Verdict) refuse(d *decision.Error) {
	v.Refusal, v.Code, v.Reason = d, d.Code, d.Message
	v.Allowed, v.Warning = v.warnOnly, v.warnOnly
}

// Entitled decides whether the process pid may commit in the worktree that
// holds dir, reading files only (no git process): the checkout's .git files,
// then under the store's shared lock the policy, binding, registration and
// its marker, allocation and lease, then the holder's /proc entries.
//
// The rules, in order: a repository without a wt store is not governed
// (allowed). A checkout that has the branch of an ACTIVE or RETAINED feature
// allocation checked out is judged by that allocation whatever else it is
// (the canonical checkout, an unregistered or re-added worktree, a worktree
// of another role): "unmanaged" never means "ungated" for a task branch. A
// bound worktree whose registration was never written (a binding of an
// older wt) is refused (UNREGISTERED_WORKTREE), as wt-exec refuses it. Other
// unregistered worktrees and the canonical checkout are unmanaged: allowed,
// unless policy unmanaged is refuse. Roles with their own gates are allowed
// (DEDICATED_ROLE_GATE); audit is refused (AUDIT_READ_ONLY); an unknown role
// is refused (INVALID_ROLE). A feature worktree needs its HEAD on the
// allocation's branch (HEAD_OFF_TASK_BRANCH; a rebase of that branch in
// progress counts as on it), no external binding but the lease's own
// (EXTERNAL_BINDING), and its lease (WRITER_LEASE_REQUIRED) matching the
// records (WRITER_LEASE_MISMATCH), not expired (WRITER_LEASE_EXPIRED),
// whose holder is live (else WRITER_LEASE_REQUIRED) and an ancestor of pid
// (else WRITER_LEASE_HELD). Policy enforcement warn turns a refusal into an
// allowance with a warning.
func Entitled(dir string, pid int) (Verdict, error) {
	c, err := gitrepo.Locate(dir)
	if err != nil {
		return Verdict{}, err
	}
	return entitled(c, pid)
}

// entitled is Entitled for a checkout already located.
func entitled(c gitrepo.Checkout, pid int) (Verdict, error) {
	v := Verdict{Path: c.TopLevel, Branch: c.Branch}
	governed, err := underGate(c, pid, func(g *gate) (err error) {
		v, err = g.checkout(c)
		return err
	})
	if err == nil && !governed {
		v.Allowed, v.Code, v.Reason = true, decision.Unmanaged, "the repository is not governed by wt"
	}
	return v, err
}

// underGate runs fn with a gate for process pid over the store of the
// repository of c, under the store's shared lock. governed is false (and
// fn is not run) when the repository has no wt store.
func underGate(c gitrepo.Checkout, pid int, fn func(g *gate) error) (governed bool, err error) {
	r, err := alloc.OpenCheckout(c)
	if decision.CodeOf(err) == decision.NotInitialized {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, r.Store.Read(func(tx *store.Tx) error {
		g, err := newGate(r, tx, pid)
		if err != nil {
			return err
		}
		return fn(g)
	})
}

// gate judges entitlement inside one shared store section, for one process.
type gate struct {
	r     *alloc.Repo
	tx    *store.Tx
	pid   int
	pol   store.Policy
	repo  *store.Repository
	procs *proc.Reader
}

func newGate(r *alloc.Repo, tx *store.Tx, pid int) (*gate, error) {
	pol, ok, err := tx.Policy()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, decision.Say(decision.InvalidMetadata, "policy-json-missing", r.Store.Root()).
			WithHint("run wt-admin init to finish setting the repository up")
	}
	return &gate{r: r, tx: tx, pid: pid, pol: pol, procs: proc.NewReader()}, nil
}

// verdict starts a verdict about the checkout at path under the gate's policy.
func (g *gate) verdict(path, branch string) Verdict {
	return Verdict{Path: path, Branch: branch, pol: g.pol, warnOnly: g.pol.Enforcement == store.EnforcementWarn, procs: g.procs, r: g.r}
}

// done turns a verdict without refusal into an allowance.
func done(v Verdict) Verdict {
	if v.Refusal != nil {
		v.refuse(v.Refusal)
		return v
	}
	if v.Code == "" {
		v.Allowed, v.Code, v.Reason = true, decision.Entitled, "this process descends from the live holder of the worktree's writer lease"
	}
	return v
}

// checkout judges a commit (or a move of HEAD) in checkout c.
func (g *gate) checkout(c gitrepo.Checkout) (Verdict, error) {
	v := g.verdict(c.TopLevel, c.Branch)
	t, err := g.r.ResolveCheckout(g.tx, c)
	switch {
	case decision.CodeOf(err) == decision.UnregisteredWorktree:
		if legacy, lerr := g.legacyBinding(c); lerr != nil {
			return v, lerr
		} else if legacy != nil {
			v.refuse(legacy)
			return v, nil
		}
		if guarded, ok, err := g.guardingAllocation(c, ""); err != nil || ok {
			return guarded, err
		}
		v.Code, v.Reason = decision.Unmanaged, "wt does not govern this worktree"
		return g.unmanaged(v, err), nil
	case err != nil:
		return v, err
	case c.Key == gitrepo.MainKey:
		if guarded, ok, err := g.guardingAllocation(c, ""); err != nil || ok {
			return guarded, err
		}
		v.Code, v.Reason = decision.Unmanaged, "the canonical checkout is not a governed worktree"
		return g.unmanaged(v, nil), nil
	}
	a := t.Allocation
	v.Role, v.TaskKey, v.AllocationID = a.Role, a.TaskKey, a.AllocationID
	switch a.Role {
	case store.RoleFeature:
		v.own = true
		g.judge(&v, a, &c)
	case store.RoleAudit:
		v.Refusal = decision.Say(decision.AuditReadOnly, "audit-worktree-task", c.TopLevel, a.TaskKey).
			WithHint("review without committing; write in a feature worktree (wt-admin allocate --task KEY --owner NAME PATH)")
	case store.RoleCanonical, store.RoleIntegration, store.RoleRecovery:
		if guarded, ok, err := g.guardingAllocation(c, a.AllocationID); err != nil || ok {
			return guarded, err
		}
		v.Allowed, v.Code, v.Reason = true, decision.DedicatedRoleGate, "role "+a.Role+" is governed by its own gate, not a writer lease"
	default:
		v.Refusal = decision.Say(decision.InvalidRole, "allocation-task-has", c.TopLevel, a.TaskKey, a.Role).
			WithHint("inspect it with wt-admin status --json; roles are %s", "feature, audit, canonical, integration, recovery")
	}
	return done(v), nil
}

// legacyBinding refuses a bound worktree whose registration document was
// never written (a binding of an older wt): wt-exec refuses it, so the hook
// must not let anyone else write there. A worktree whose registration
// exists but whose marker is missing is a re-created admin dir under a
// reused name, which does not inherit the binding: nil.
func (g *gate) legacyBinding(c gitrepo.Checkout) (*decision.Error, error) {
	b, bound, err := g.tx.Binding(c.Key)
	if err != nil || !bound {
		return nil, err
	}
	_, _, registered, err := g.tx.Registration(c.Key)
	if err != nil || registered {
		return nil, err
	}
	return decision.Say(decision.UnregisteredWorktree, "key-bound", c.TopLevel, c.Key, b.AllocationID).
		WithHint("register it: wt-admin backfill, then wt-admin backfill --apply PLAN_ID"), nil
}

// guardingAllocation judges checkout c by the allocation whose task branch
// it has checked out, when that is a guarded branch of an allocation other
// than skip. ok is false when the branch guards nothing.
func (g *gate) guardingAllocation(c gitrepo.Checkout, skip string) (Verdict, bool, error) {
	if c.Detached || c.Branch == "" {
		return Verdict{}, false, nil
	}
	a, ok, err := g.guarded("refs/heads/" + c.Branch)
	if err != nil || !ok || a.AllocationID == skip {
		return Verdict{}, false, err
	}
	return g.forBranch(a, c.TopLevel, c.Branch, fmt.Sprintf("%s has task %s's branch %s checked out, which only that task's writer may move", c.TopLevel, a.TaskKey, c.Branch)), true, nil
}

// forBranch judges a write that reaches guarded allocation a's branch from
// path (not a's own worktree), and says why in front of a refusal.
func (g *gate) forBranch(a store.Allocation, path, branch, why string) Verdict {
	v := g.verdict(path, branch)
	v.Role, v.TaskKey, v.AllocationID = a.Role, a.TaskKey, a.AllocationID
	g.judge(&v, a, nil)
	if v.Refusal != nil {
		v.Refusal = decision.Within(v.Refusal, "reached-from", why)
	}
	return done(v)
}

// guarded returns the allocation that guards ref: an ACTIVE or RETAINED
// feature allocation whose branch it is.
func (g *gate) guarded(ref string) (store.Allocation, bool, error) {
	a, ok, err := g.tx.BranchAllocation(ref)
	if err != nil || !ok {
		return a, false, err
	}
	if a.Role != store.RoleFeature || (a.Lifecycle != store.Active && a.Lifecycle != store.Retained) {
		return a, false, nil
	}
	return a, true, nil
}

func (g *gate) unmanaged(v Verdict, why error) Verdict {
	if g.pol.Unmanaged != store.UnmanagedRefuse {
		v.Allowed = true
		return v
	}
	d := decision.Say(decision.UnmanagedRefused, "policy-refuse", v.Path, v.Reason)
	if w, ok := decision.As(why); ok {
		d = decision.Say(decision.UnmanagedRefused, "policy-refuse-why", v.Path, v.Reason, w.Message)
	}
	v.refuse(d.
		WithHint("write in a governed worktree (wt-admin allocate --task KEY --owner NAME PATH), or set wt-admin policy --unmanaged allow"))
	return v
}

// judge sets v.Refusal (nil when entitled) for process g.pid writing on
// behalf of feature allocation a. own is the allocation's own checkout when
// the write happens there (its HEAD must be on the task branch), nil when
// the write reaches the task branch from anywhere else.
func (g *gate) judge(v *Verdict, a store.Allocation, own *gitrepo.Checkout) {
	path := a.WorktreePath
	if own != nil {
		path = own.TopLevel
		if d := alloc.HeadOffTaskBranch(*own, a); d != nil {
			v.Refusal = d
			return
		}
	}
	l, ok, err := g.tx.Lease(a.AllocationID)
	if err != nil {
		v.Refusal = asDecision(err)
		return
	}
	if ok {
		v.Lease = &l
	}
	if g.repo == nil {
		repo, err := g.tx.Repository()
		if err != nil {
			v.Refusal = asDecision(err)
			return
		}
		g.repo = &repo
	}
	if d := judgeLease(g.procs, gitrepo.AdminDir(g.r.Git.CommonDir, a.WorktreeKey), path, own != nil, a, *g.repo, l, ok, g.pid); d != nil {
		v.Refusal = d
		return
	}
	v.Refusal = foreignBindings(a, l)
}

func asDecision(err error) *decision.Error {
	if d, ok := decision.As(err); ok {
		return d
	}
	return decision.SayWrap(decision.Internal, err, "judge-writer")
}

// foreignBindings refuses a write while the allocation carries an external
// binding that is not the current lease's own runtime occupancy: an opaque
// binding (e.g. ci:job-42) or the runtime binding of another lease fences
// writers here as it fences wt-exec (EXTERNAL_BINDING). The hook does not
// scan /proc: a runtime binding of another lease is judged stale only by
// the next wt-exec, which clears it.
func foreignBindings(a store.Allocation, l store.Lease) *decision.Error {
	for _, s := range a.ExternalBindings {
		b, ok, err := proc.DecodeRuntimeBinding(s)
		if err != nil {
			return asDecision(err)
		}
		if ok && b.LeaseID != nil && *b.LeaseID == l.LeaseID {
			continue
		}
		return decision.Say(decision.ExternalBinding, "allocation-task-has-external", a.TaskKey, s).
			WithHint("whoever added it must remove it; inspect it with wt-admin status --json")
	}
	return nil
}

// judgeLease applies the entitlement rules to the lease of a feature
// allocation, for the process pid. path is where the write happens: the
// worktree itself (own), whose path the lease must record, or the
// allocation's recorded path for a write to its branch from elsewhere.
func judgeLease(r *proc.Reader, adminDir, path string, own bool, a store.Allocation, repo store.Repository, l store.Lease, ok bool, pid int) *decision.Error {
	take := fmt.Sprintf("run the write under wt-exec: wt-exec -C %s -- git commit ...", shell.Word(path))
	if !ok {
		return decision.Say(decision.WriterLeaseRequired, "no-live", path, a.TaskKey).
			WithHint("%s", take)
	}
	if l.RepositoryID != repo.RepositoryID || l.AllocationID != a.AllocationID || (own && l.WorktreePath != path) || l.Owner != a.Owner {
		return decision.Say(decision.WriterLeaseMismatch, "lease-does", l.LeaseID, l.RepositoryID, l.WorktreePath, l.Owner).
			WithHint("see it with wt-admin status; a new wt-exec replaces it once its holder is gone")
	}
	if liveness.Expired(l, time.Now()) {
		return decision.Say(decision.WriterLeaseExpired, "lease-client", path, l.Holder.ClientID, l.Holder.PID, *l.ExpiresAt).
			WithHint("its holder renews it while wt-exec runs with --ttl; a nested wt-exec with --ttl D renews it too")
	}
	// The ancestry first: a holder found among pid's ancestors (pid and
	// start ticks) is live, since a process that exits hands its children
	// on at once, so an entitled commit reads the holder's /proc entry
	// once, in the walk. Liveness is asked apart only to word a refusal.
	anc, err := r.HasAncestor(pid, l.Holder.Identity())
	if err != nil && !errors.Is(err, proc.ErrNoProcess) {
		return decision.SayWrap(decision.InvalidHolder, err, "ancestry-pid", pid)
	}
	if anc {
		return nil
	}
	// In a pid namespace of its own (a sandbox: bubblewrap
	// --unshare-pid, unshare -p) the holder is out of sight: a process in
	// the lease's cgroup, while the holder holds its lock, descends from it.
	if inLeaseCgroup(pid, l) && liveness.HolderLocked(adminDir, l.LeaseID) {
		return nil
	}
	live, err := proc.IsLive(r, l.Holder.Identity())
	if err != nil {
		return decision.SayWrap(decision.InvalidHolder, err, "holder-lease", l.LeaseID)
	}
	if !live {
		return decision.Say(decision.WriterLeaseRequired, "writer-client", path, l.Holder.ClientID, l.Holder.PID, l.AcquiredAt).
			WithHint("if its command still runs (wt-admin ps %s), hand the lease to it: wt-admin lease adopt %s --client-id %s --holder PID; else %s",
				shell.Word(path), shell.Word(path), shell.Word(l.Holder.ClientID), take)
	}
	return decision.HeldBy(path, l.Holder.ClientID, l.Holder.PID, l.AcquiredAt, "this process does not descend from it").
		WithHint("write from the agent that holds it, or wait until it ends and %s", take).
		WithFact("holder", l.Holder)
}

// inLeaseCgroup reports whether pid is in the cgroup wt-exec made for the
// lease's command (or one beneath it). The kernel keeps every descendant of
// the command there, and only a process that may write the cgroup's
// cgroup.procs (root, or its delegate) can move another in; a confined
// command cannot. The cgroup is compared by its path below the hierarchy's
// root, read from /proc/PID/cgroup (a sandbox may mount the hierarchy
// elsewhere, or not at all); in a cgroup namespace of its own the path is
// "/", and the answer is no.
func inLeaseCgroup(pid int, l store.Lease) bool {
	if l.Child == nil || l.Child.Cgroup == "" {
		return false
	}
	b, err := proc.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	name := "/wt-lease-" + l.LeaseID
	for _, line := range strings.Split(string(b), "\n") {
		rel, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		i := strings.Index(rel+"/", name+"/")
		return i >= 0 && strings.HasSuffix(l.Child.Cgroup, rel[:i+len(name)])
	}
	return false
}
