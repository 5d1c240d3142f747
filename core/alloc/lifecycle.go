package alloc

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/liveness"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// Gates a status row can show.
const (
	GateLease     = "writer lease"
	GateReadOnly  = "read-only"
	GateUnmanaged = "unmanaged"
	GateRefused   = "refused"
)

// RoleGate is the gate a role expects and wt does not provide, for the
// roles wt leaves ungated (docs/decisions.md, "Hooks": ungated roles say so).
var RoleGate = map[string]string{
	store.RoleIntegration: "a merge queue or CI that decides what lands",
	store.RoleCanonical:   "the publication branch's own protection (review, branch rules)",
	store.RoleRecovery:    "an operator working by hand",
}

// GateOf says what gates writes in a worktree of allocation a.
func GateOf(a store.Allocation) string {
	switch a.Role {
	case store.RoleFeature:
		return GateLease
	case store.RoleAudit:
		return GateReadOnly
	}
	if g, ok := RoleGate[a.Role]; ok {
		return "ungated: role " + a.Role + " expects " + g
	}
	return GateRefused + " (INVALID_ROLE " + a.Role + ")"
}

// HeadOffTaskBranch refuses a writer in the checkout c of feature
// allocation a whose HEAD is not on a's branch (see gitrepo.OnBranch), or
// returns nil. The commit gate and wt-exec both use it.
func HeadOffTaskBranch(c gitrepo.Checkout, a store.Allocation) *decision.Error {
	if a.Branch == nil || gitrepo.OnBranch(c.Detached, c.Branch, c.GitDir, *a.Branch) {
		return nil
	}
	on := "a detached HEAD"
	if !c.Detached {
		on = "branch " + c.Branch
	}
	return decision.Say(decision.HeadOffTaskBranch, "task-worktree", c.TopLevel, a.TaskKey, *a.Branch, on).
		WithHint("switch it back: git -C %s switch %s", shell.Word(c.TopLevel), shell.Word(*a.Branch)).
		WithFact("branch", *a.Branch)
}

// LifecycleResult is the allocation after retain or resume.
type LifecycleResult struct {
	Code       string           `json:"code"`
	Allocation store.Allocation `json:"allocation"`
}

// Retain moves an ACTIVE allocation to RETAINED: its work is kept, and no
// writer may take a lease until it is resumed. It refuses while a live lease
// (holder or its process groups) or a live runtime occupancy exists.
func (r *Repo) Retain(ctx context.Context, path, owner string, expect *int) (LifecycleResult, error) {
	return r.changeLifecycle(path, owner, expect, store.Active, store.Retained)
}

// Resume moves a RETAINED allocation back to ACTIVE, within the budget.
func (r *Repo) Resume(ctx context.Context, path, owner string, expect *int) (LifecycleResult, error) {
	return r.changeLifecycle(path, owner, expect, store.Retained, store.Active)
}

func (r *Repo) changeLifecycle(path, owner string, expect *int, from, to string) (LifecycleResult, error) {
	var res LifecycleResult
	if err := store.ValidOwner(owner); err != nil {
		return res, err
	}
	err := r.Store.Write(func(tx *store.Tx) error {
		t, err := r.Resolve(tx, path)
		if err != nil {
			return err
		}
		a := t.Allocation
		if err := store.CheckVersion("allocation "+a.AllocationID, &a, expect); err != nil {
			return err
		}
		if err := requireOwner(a, owner); err != nil {
			return err
		}
		if a.Lifecycle != from {
			verb := "retain"
			if to == store.Active {
				verb = "resume"
			}
			return decision.Say(decision.InvalidLifecycle, "allocation-task", a.TaskKey, a.Lifecycle, from, verb).
				WithFact("lifecycle", a.Lifecycle)
		}
		if to == store.Retained {
			if err := r.requireNoLiveWriter(tx, a); err != nil {
				return err
			}
		} else {
			pol, _, err := tx.Policy()
			if err != nil {
				return err
			}
			if err := r.checkTaskAndBudget(tx, a.TaskKey, a.Role, a.AllocationID, pol); err != nil {
				return err
			}
		}
		a.Lifecycle = to
		a.UpdatedAt = store.Now()
		if err := tx.PutAllocation(&a); err != nil {
			return err
		}
		name := "allocation_retained"
		res.Code = decision.Retained
		if to == store.Active {
			name, res.Code = "allocation_resumed", decision.Resumed
		}
		res.Allocation = a
		return event(tx, name, &a, map[string]any{"from": from, "to": to, "owner": owner})
	})
	return res, err
}

func (r *Repo) requireNoLiveWriter(tx *store.Tx, a store.Allocation) error {
	// One reading of /proc for the lease and the bindings, and none when
	// there is neither.
	scan := sync.OnceValues(proc.NewScan)
	l, hasLease, err := liveWriter(tx, a, scan)
	if err != nil {
		return err
	}
	if hasLease {
		return decision.HeldBy(a.WorktreePath, l.Holder.ClientID, l.Holder.PID, l.AcquiredAt, fmt.Sprintf("allocation %s does not change while its writer runs", a.AllocationID)).
			WithHint("wait for it to finish; see it with wt-admin status")
	}
	var bindings []proc.RuntimeBinding
	for _, v := range a.ExternalBindings {
		b, ok, err := proc.DecodeRuntimeBinding(v)
		if err != nil {
			return err
		}
		if ok {
			bindings = append(bindings, b)
		}
	}
	if len(bindings) == 0 {
		return nil
	}
	s, err := scan()
	if err != nil {
		return err
	}
	for _, b := range bindings {
		if liveness.Alive(s, b.Holder, nil) != "" {
			return decision.Say(decision.ExternalBinding, "live-process", b.Kind, b.Holder.ClientID, a.AllocationID, b.Holder.Identity()).
				WithHint("wait for it to end; see it with wt-admin status")
		}
	}
	return nil
}

// LiveWriter is allocation a's writer lease when a live process is behind
// it (its holder, its groups: liveness.Occupied), ok false when none is.
// /proc is read only when a has a lease.
func LiveWriter(tx *store.Tx, a store.Allocation) (l store.Lease, ok bool, err error) {
	return liveWriter(tx, a, proc.NewScan)
}

// liveWriter is LiveWriter reading /proc through scan.
func liveWriter(tx *store.Tx, a store.Allocation, scan func() (*proc.Scan, error)) (l store.Lease, ok bool, err error) {
	l, has, err := tx.Lease(a.AllocationID)
	if err != nil || !has {
		return l, false, err
	}
	s, err := scan()
	if err != nil {
		return l, false, err
	}
	return l, liveness.Occupied(s, l), nil
}

// TaskAllocation returns the ACTIVE or RETAINED allocation of task, or nil
// when the task has none.
func (r *Repo) TaskAllocation(task string) (*store.Allocation, error) {
	var found *store.Allocation
	err := r.Store.Read(func(tx *store.Tx) error {
		var err error
		found, err = taskIn(tx, task)
		return err
	})
	return found, err
}

// taskIn is task's allocation that is not RELEASED, nil for none.
func taskIn(tx *store.Tx, task string) (*store.Allocation, error) {
	all, err := tx.Allocations()
	if err != nil {
		return nil, err
	}
	for i, a := range all {
		if a.TaskKey == task && a.Lifecycle != store.Released {
			return &all[i], nil
		}
	}
	return nil, nil
}

// AwaitTask waits for task's allocation when another allocate of it is in
// flight (its journal names a plan for the task): concurrent first launches
// of one task all run in the one worktree that wins. It returns the
// allocation once it is recorded, or nil when none is in flight (the
// other allocate was undone, or there never was one), or ctx's end.
func (r *Repo) AwaitTask(ctx context.Context, task string) (*store.Allocation, error) {
	pause := 10 * time.Millisecond
	for {
		var found *store.Allocation
		inFlight := false
		err := r.Store.Read(func(tx *store.Tx) error {
			var err error
			if found, err = taskIn(tx, task); err != nil || found != nil {
				return err
			}
			pending, err := r.pendingAllocations(tx)
			for _, p := range pending {
				inFlight = inFlight || p.TaskKey == task
			}
			return err
		})
		if err != nil || found != nil || !inFlight {
			return found, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}
