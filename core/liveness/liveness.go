// Package liveness judges, from one reading of /proc, whether a writer lease
// or a runtime occupancy still has a live process behind it (SPEC §4, §5.1).
//
// It owns the evidence, not the decisions: core/lease grants and ends leases,
// core/alloc refuses to retain a worktree that is still occupied, and both ask
// this package. Every function here reads only the proc.Scan it is given, so
// one pass answers every question about one moment.
package liveness

import (
	"os"
	"time"

	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// Freshness values (SPEC §5.1).
const (
	FreshActive          = "active"
	FreshExpired         = "expired"
	FreshDeadProcess     = "stale_dead_process"
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
func Freshness(s *proc.Scan, l store.Lease, now time.Time) string {
	if _, err := os.Lstat(l.WorktreePath); os.IsNotExist(err) {
		return FreshMissingWorktree
	}
	if !s.IsLive(l.Holder.Identity()) {
		return FreshDeadProcess
	}
	if Expired(l, now) {
		return FreshExpired
	}
	return FreshActive
}

// GroupLive reports whether any process remains in the group the holder
// led or in the child group recorded in the lease (SPEC §4). A group that a
// reused pid started later is not evidence (see proc.Scan.GroupMembers).
func GroupLive(s *proc.Scan, h proc.Holder, child *store.ChildGroup) bool {
	if len(s.GroupMembers(h.PID, h.StartTicks)) > 0 {
		return true
	}
	return child != nil && len(s.GroupMembers(child.PID, child.StartTicks)) > 0
}

// Occupied reports whether a lease has any live process behind it: the holder,
// its group, or the recorded child group.
func Occupied(s *proc.Scan, l store.Lease) bool {
	return s.IsLive(l.Holder.Identity()) || GroupLive(s, l.Holder, l.Child)
}
