// Package liveness judges, from one reading of /proc, whether a writer lease
// or a runtime occupancy still has a live process behind it (docs/design.md, "Liveness").
//
// It owns the evidence, not the decisions: core/lease grants and ends leases,
// core/alloc refuses to retain a worktree that is still occupied, and both ask
// this package. Every function here reads only the proc.Scan it is given, so
// one pass answers every question about one moment.
package liveness

import (
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// Freshness values (docs/design.md, "Writer leases").
const (
	FreshActive      = "active"
	FreshExpired     = "expired"
	FreshDeadProcess = "stale_dead_process"
	// FreshOrphaned: the holder (its wt-exec) is gone but its command, or
	// a process of its groups or carrying its lease, still runs.
	FreshOrphaned        = "orphaned"
	FreshMissingWorktree = "stale_missing_worktree"
)

// Expired reports whether the lease is past expires_at at now. Expiry means
// the holder lost entitlement until it renews, never that the lease is dead.
func Expired(l store.Lease, now time.Time) bool {
	if l.ExpiresAt == nil {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, *l.ExpiresAt)
	return err != nil || now.After(t) // an unreadable expiry counts as expired: fail closed
}

// Freshness classifies a lease. A missing worktree wins over a dead holder,
// which wins over expiry.
func Freshness(s Evidence, l store.Lease, now time.Time) string {
	if _, err := os.Lstat(l.WorktreePath); os.IsNotExist(err) {
		return FreshMissingWorktree
	}
	if !s.IsLive(l.Holder.Identity()) {
		if Alive(s, l.Holder, l.Child) != "" || Carriers(s, l.LeaseID) != "" {
			return FreshOrphaned
		}
		return FreshDeadProcess
	}
	if Expired(l, now) {
		return FreshExpired
	}
	return FreshActive
}

// Evidence is one reading of the processes on this machine. *proc.Scan
// implements it; unit tests use a fake.
type Evidence interface {
	// BootID is this boot's id, as the reading saw it.
	BootID() (string, error)
	IsLive(proc.Identity) bool
	GroupMembers(leader int, leaderTicks uint64) []int
	PathsInUse(dir string) ([]proc.Use, error)
	CarryingEnv(name, value string) []int
	// CgroupMembers lists the processes in a cgroup (v2 directory); an
	// error is never evidence that it is empty.
	CgroupMembers(dir string) ([]int, error)
}

// LeaseEnv is the variable that marks a lease's processes (docs/design.md, "wt-exec").
const LeaseEnv = "WT_LEASE_ID"

// Carriers says which processes still carry the lease in their environment
// (WT_LEASE_ID), or "": wt-exec's child from its first instruction, and what
// it started without scrubbing its environment.
func Carriers(ev Evidence, leaseID string, skip ...int) string {
	pids := without(ev.CarryingEnv(LeaseEnv, leaseID), skip)
	if len(pids) == 0 {
		return ""
	}
	return fmt.Sprintf("%d process(es) carry the lease in their environment (%s=%s; pid %d)", len(pids), LeaseEnv, leaseID, pids[0])
}

// Alive says why a holder still has a live process behind it, or "" when it
// has none: the holder itself runs, or a process remains in the group the
// holder led or in the child group (docs/design.md, "Liveness"). A group that a reused pid
// started later is not evidence (see proc.Scan.GroupMembers), and nothing
// of another boot is. When this boot's id cannot be read, nothing is proven
// dead. Processes in skip are not evidence (an adopter and its own).
func Alive(ev Evidence, h proc.Holder, child *store.ChildGroup, skip ...int) string {
	boot, err := ev.BootID()
	if err != nil {
		// Evidence that cannot be read is never evidence of death: without
		// this boot's id, a holder of this boot cannot be told from one of
		// another.
		return "this machine's boot id cannot be read (" + err.Error() + "), so the holder cannot be proven dead"
	}
	if h.BootID != boot {
		return ""
	}
	if ev.IsLive(h.Identity()) {
		return "its holder is running"
	}
	if n := len(without(ev.GroupMembers(h.PID, h.StartTicks), skip)); n > 0 {
		return fmt.Sprintf("%d process(es) remain in its holder's process group", n)
	}
	if child != nil {
		if n := len(without(ev.GroupMembers(child.PID, child.StartTicks), skip)); n > 0 {
			return fmt.Sprintf("%d process(es) remain in its child's process group (leader pid %d)", n, child.PID)
		}
		if child.Cgroup != "" {
			// No process can leave a cgroup on its own: a daemon that
			// started its own session, scrubbed its environment and left
			// the worktree is still here.
			pids, err := ev.CgroupMembers(child.Cgroup)
			if err != nil {
				return fmt.Sprintf("its command's cgroup %s cannot be read (%v), so it cannot be proven empty", child.Cgroup, err)
			}
			if n := len(without(pids, skip)); n > 0 {
				return fmt.Sprintf("%d process(es) remain in its command's cgroup %s", n, child.Cgroup)
			}
		}
	}
	return ""
}

// without is pids less those in skip (processes that are not evidence
// against the asker: an adopter and what it started).
func without(pids, skip []int) []int {
	if len(skip) == 0 {
		return pids
	}
	out := pids[:0:0]
	for _, p := range pids {
		if !slices.Contains(skip, p) {
			out = append(out, p)
		}
	}
	return out
}

// Occupied reports whether a lease has any live process behind it: the holder,
// its group, or the recorded child group.
func Occupied(s Evidence, l store.Lease) bool {
	return Alive(s, l.Holder, l.Child) != ""
}

// Users returns the processes that use the worktree, other than the asking
// process, its ancestors and the processes in skip.
func Users(ev Evidence, dir string, skip ...int) ([]proc.Use, error) {
	uses, err := ev.PathsInUse(dir)
	if err != nil {
		return nil, err
	}
	out := uses[:0]
	for _, u := range uses {
		if !slices.Contains(skip, u.PID) {
			out = append(out, u)
		}
	}
	return out, nil
}
