package hooks

import (
	"errors"
	"fmt"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/liveness"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// Verdict is the answer to "may this process write through this worktree
// now?" (SPEC §7). A refusal under policy enforcement "warn" is Allowed
// with Warning set to the refusal.
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
	// warnOnly is policy enforcement "warn": refusals become warnings.
	warnOnly bool
	// pol is the policy the decision was made under.
	pol store.Policy
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
// (allowed). The canonical checkout and a worktree without a valid
// registration are unmanaged: allowed, unless policy unmanaged is refuse.
// Roles with their own gates are allowed (DEDICATED_ROLE_GATE); audit is
// refused (AUDIT_READ_ONLY). A feature worktree needs its lease
// (WRITER_LEASE_REQUIRED) matching the records (WRITER_LEASE_MISMATCH), not
// expired (WRITER_LEASE_EXPIRED), whose holder is live (else
// WRITER_LEASE_REQUIRED) and an ancestor of pid (else WRITER_LEASE_HELD).
// Policy enforcement warn turns a refusal into an allowance with a warning.
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
	r, err := alloc.OpenCheckout(c)
	if decision.CodeOf(err) == decision.NotInitialized {
		v.Allowed, v.Code, v.Reason = true, decision.Unmanaged, "the repository is not governed by wt"
		return v, nil
	}
	if err != nil {
		return v, err
	}
	var pol store.Policy
	err = r.Store.Read(func(tx *store.Tx) error {
		var ok bool
		if pol, ok, err = tx.Policy(); err != nil {
			return err
		} else if !ok {
			return decision.New(decision.InvalidMetadata, "policy.json is missing from %s", r.Store.Root()).
				WithHint("run wt-admin init to finish setting the repository up")
		}
		t, err := r.ResolveCheckout(tx, c)
		switch {
		case decision.CodeOf(err) == decision.UnregisteredWorktree:
			v.Code, v.Reason = decision.Unmanaged, "wt does not govern this worktree"
			return unmanaged(&v, pol, err)
		case err != nil:
			return err
		case c.Key == gitrepo.MainKey:
			v.Code, v.Reason = decision.Unmanaged, "the canonical checkout is not a governed worktree"
			return unmanaged(&v, pol, nil)
		}
		a := t.Allocation
		v.Role, v.TaskKey, v.AllocationID = a.Role, a.TaskKey, a.AllocationID
		switch a.Role {
		case store.RoleFeature:
		case store.RoleAudit:
			v.Refusal = decision.New(decision.AuditReadOnly, "%s is an audit worktree of task %s: commits are refused", c.TopLevel, a.TaskKey).
				WithHint("review without committing; write in a feature worktree (wt-admin allocate --task KEY --owner NAME PATH)")
			return nil
		default:
			v.Allowed, v.Code, v.Reason = true, decision.DedicatedRoleGate, "role "+a.Role+" is governed by its own gate, not a writer lease"
			return nil
		}
		l, ok, err := tx.Lease(a.AllocationID)
		if err != nil {
			return err
		}
		if ok {
			v.Lease = &l
		}
		repo, err := tx.Repository()
		if err != nil {
			return err
		}
		v.Refusal = judgeLease(c, a, repo, l, ok, pid)
		return nil
	})
	if err != nil {
		return v, err
	}
	v.warnOnly, v.pol = pol.Enforcement == store.EnforcementWarn, pol
	if v.Refusal != nil {
		v.refuse(v.Refusal)
		return v, nil
	}
	if v.Code == "" {
		v.Allowed, v.Code, v.Reason = true, decision.Entitled, "this process descends from the live holder of the worktree's writer lease"
	}
	return v, nil
}

func unmanaged(v *Verdict, pol store.Policy, why error) error {
	if pol.Unmanaged != store.UnmanagedRefuse {
		v.Allowed = true
		return nil
	}
	msg := fmt.Sprintf("%s: %s, and policy unmanaged is refuse", v.Path, v.Reason)
	if d, ok := decision.As(why); ok {
		msg += " (" + d.Message + ")"
	}
	v.Refusal = decision.New(decision.UnmanagedRefused, "%s", msg).
		WithHint("write in a governed worktree (wt-admin allocate --task KEY --owner NAME PATH), or set wt-admin policy --unmanaged allow")
	return nil
}

// judgeLease applies the entitlement rules to the lease of a feature
// allocation, for the process pid.
func judgeLease(c gitrepo.Checkout, a store.Allocation, repo store.Repository, l store.Lease, ok bool, pid int) *decision.Error {
	take := fmt.Sprintf("run the write under wt-exec: wt-exec -C %s -- git commit ...", c.TopLevel)
	if !ok {
		return decision.New(decision.WriterLeaseRequired, "no live writer holds %s (task %s): commits need its writer lease", c.TopLevel, a.TaskKey).
			WithHint("%s", take)
	}
	if l.RepositoryID != repo.RepositoryID || l.AllocationID != a.AllocationID || l.WorktreePath != c.TopLevel || l.Owner != a.Owner {
		return decision.New(decision.WriterLeaseMismatch, "lease %s does not match its records (repository %s, path %s, owner %s)", l.LeaseID, l.RepositoryID, l.WorktreePath, l.Owner).
			WithHint("see it with wt-admin status; a new wt-exec replaces it once its holder is gone")
	}
	if liveness.Expired(l, time.Now()) {
		return decision.New(decision.WriterLeaseExpired, "the lease of %s (client %s, pid %d) expired at %s", c.TopLevel, l.Holder.ClientID, l.Holder.PID, *l.ExpiresAt).
			WithHint("its holder renews it while wt-exec runs with --ttl; a nested wt-exec --ttl D renews it too")
	}
	r := proc.NewReader()
	live, err := proc.IsLive(r, l.Holder.Identity())
	if err != nil {
		return decision.Wrap(decision.InvalidHolder, err, "holder of lease %s", l.LeaseID)
	}
	if !live {
		return decision.New(decision.WriterLeaseRequired, "the writer of %s (client %s, pid %d, since %s) has exited: its lease gives nobody entitlement", c.TopLevel, l.Holder.ClientID, l.Holder.PID, l.AcquiredAt).
			WithHint("%s", take)
	}
	anc, err := r.HasAncestor(pid, l.Holder.Identity())
	if err != nil && !errors.Is(err, proc.ErrNoProcess) {
		return decision.Wrap(decision.InvalidHolder, err, "ancestry of pid %d", pid)
	}
	if !anc {
		return decision.New(decision.WriterLeaseHeld, "%s is held by client %s, pid %d, since %s: this process does not descend from it", c.TopLevel, l.Holder.ClientID, l.Holder.PID, l.AcquiredAt).
			WithHint("commit from the agent that holds it, or wait until it ends and %s", take).
			WithFact("holder", l.Holder)
	}
	return nil
}
