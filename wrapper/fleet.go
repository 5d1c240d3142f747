package wrapper

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/store"
)

// fence takes the fleet lease for a grant wt-exec owns, when the policy's
// coordinator is etcd and the worktree is a feature worktree (docs/design.md, "Fleet mode"):
// the task key of the remote's key space, created only if absent, kept
// alive by the wt-fleet helper until release. It runs inside the lease
// section, before the child starts, so a refusal (FLEET_LEASE_HELD,
// FLEET_UNREACHABLE) starts nothing.
func (s *supervisor) fence(g lease.Grant, pol store.Policy) (*store.FleetLease, error) {
	if !pol.FleetOn() || g.Role != store.RoleFeature {
		return nil, nil
	}
	ttl, err := pol.FleetTTLDuration()
	if err != nil {
		return nil, decision.Wrap(decision.InvalidPolicy, err, "fleet policy")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*fleet.DialTimeout())
	defer cancel()
	space, err := fleet.KeySpace(ctx, s.repo.Git, pol)
	if err != nil {
		return nil, err
	}
	helper, err := fleet.NewHelper(pol.EtcdEndpoints, s.opts.Stderr)
	if err != nil {
		return nil, err
	}
	key := fleet.Key(space, g.Allocation.TaskKey)
	host, _ := os.Hostname()
	machine, _ := os.ReadFile("/etc/machine-id")
	h := g.Lease.Holder
	holder := fleet.Holder{Host: host, MachineID: strings.TrimSpace(string(machine)), BootID: h.BootID, PID: h.PID,
		StartTicks: h.StartTicks, ClientID: h.ClientID, LeaseID: g.Lease.LeaseID, TaskKey: g.Allocation.TaskKey,
		Since: time.Now().UTC().Format(time.RFC3339Nano)}
	// The helper detaches to init; wt-exec must not adopt it as one of
	// the command's leftovers (it has no other child yet).
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	sess, err := helper.Acquire(ctx, key, holder, ttl)
	if dead, ok := deadPrevious(err, g); ok {
		// The fleet key is the lease this grant just took over locally:
		// its holder, on this machine, is dead and nothing of it runs
		// (lease.Acquire proved it). Revoke it and try once more.
		if _, rerr := helper.Revoke(ctx, key); rerr == nil {
			s.opts.Notify(fmt.Sprintf("the fleet lease of dead holder client %s pid %d (revision %d) was revoked with its local lease", dead.ClientID, dead.PID, dead.revision))
			sess, err = helper.Acquire(ctx, key, holder, ttl)
		} else {
			// Say what stopped the takeover, not the refusal it answers.
			err = rerr
		}
	}
	if perr := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); perr != nil && err == nil {
		err = decision.Wrap(decision.Internal, perr, "become a child subreaper again")
	}
	if err != nil {
		if sess != nil {
			sess.Release(ctx)
		}
		return nil, err
	}
	s.fleet = sess
	return &store.FleetLease{Key: key, Revision: sess.Revision(), EtcdLease: sess.LeaseID(), Endpoints: pol.EtcdEndpoints, TTL: ttl.String()}, nil
}

// releaseFleet revokes the fleet lease, after the local release
// (docs/design.md, "Fleet mode"). If it cannot, the lease expires with its
// TTL.
func (s *supervisor) releaseFleet() {
	if s.fleet == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*fleet.DialTimeout())
	defer cancel()
	if err := s.fleet.Release(ctx); err != nil {
		s.opts.Notify("the fleet lease was not revoked (it expires with its TTL): " + err.Error())
	}
	s.fleet = nil
}

type deadHolder struct {
	fleet.Holder
	revision int64
}

// deadPrevious reports whether a FLEET_LEASE_HELD refusal names the very
// lease g took over: the same local lease id, on this boot. Only then may
// wt-exec end another's fleet lease without an operator.
func deadPrevious(err error, g lease.Grant) (deadHolder, bool) {
	d, ok := decision.As(err)
	if !ok || d.Code != decision.FleetLeaseHeld || g.Previous == nil {
		return deadHolder{}, false
	}
	h, ok := d.Facts["fleet_holder"].(fleet.Holder)
	if !ok || h.LeaseID != g.Previous.LeaseID || h.BootID != g.Previous.Holder.BootID || h.PID != g.Previous.Holder.PID {
		return deadHolder{}, false
	}
	rev, _ := d.Facts["fleet_revision"].(int64)
	return deadHolder{h, rev}, true
}
