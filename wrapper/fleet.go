package wrapper

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/wt-tool/wt/core/alloc"
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
		return nil, decision.SayWrap(decision.InvalidPolicy, err, "fleet-policy")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*fleet.DialTimeout())
	defer cancel()
	helper, space, err := s.early.take(ctx, s.repo, pol, s.opts.Stderr)
	if err != nil {
		return nil, err
	}
	defer helper.Close() // a helper started ahead and left unused
	key := fleet.Key(space, g.Allocation.TaskKey)
	holder := fleet.HolderOf(g.Lease.Holder, g.Lease.LeaseID, g.Allocation.TaskKey)
	holder.FenceHash = fleet.FenceHash(s.fenceSecret)
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
	if err != nil {
		if sess != nil {
			sess.Release(ctx)
		}
		return nil, err
	}
	s.fleet = sess
	if p, ok := sess.(interface{ Pid() int }); ok {
		// The helper is wt-exec's child: not one of the command's
		// leftovers, it lives until releaseFleet.
		s.child.Spare(p.Pid())
	}
	return &store.FleetLease{Key: key, Revision: sess.Revision(), EtcdLease: sess.LeaseID(), Endpoints: pol.EtcdEndpoints, TTL: ttl.String()}, nil
}

// releaseFleet revokes the fleet lease, after the local release
// (docs/design.md, "Fleet mode"). If it cannot, the lease expires with its
// TTL.
func (s *supervisor) releaseFleet() {
	s.early.close()
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

// earlyFleet is fleet work begun before the lease section, when the policy
// read without the lock (store.PolicyHint) names etcd: the helper is
// starting (its start, about 8 ms, overlaps wt-exec's own) and the fleet
// remote's URL is being read. take uses them when the policy read inside
// the section agrees, and does the work afresh otherwise.
type earlyFleet struct {
	pol    store.Policy
	helper *fleet.Helper
	// space and spaceErr are the key space read from the remote's URL,
	// once spaceDone is closed.
	spaceDone chan struct{}
	space     string
	spaceErr  error
}

// startFleet begins the fleet work early when the policy says etcd. A
// failure here is no refusal: take does the work again and reports it.
func (s *supervisor) startFleet() {
	pol, ok := s.repo.Store.PolicyHint()
	if !ok || !pol.FleetOn() {
		return
	}
	e := &earlyFleet{pol: pol, spaceDone: make(chan struct{})}
	ttl, _ := pol.FleetTTLDuration() // unreadable: no lease granted ahead
	if h, err := fleet.NewHelper(pol.EtcdEndpoints, pol.EtcdAuth(), s.opts.Stderr); err == nil && h.Prestart(ttl) == nil {
		e.helper = h
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*fleet.DialTimeout())
		defer cancel()
		e.space, e.spaceErr = fleet.KeySpace(ctx, s.repo.Git, pol)
		close(e.spaceDone)
	}()
	s.early = e
}

// take returns the helper and the key space for pol: the early ones when
// they were made for the same endpoints and remote, else new ones.
func (e *earlyFleet) take(ctx context.Context, repo *alloc.Repo, pol store.Policy, stderr io.Writer) (*fleet.Helper, string, error) {
	var (
		helper *fleet.Helper
		space  string
		err    error
		known  bool // the key space read early is for pol's remote
	)
	if e != nil {
		<-e.spaceDone
		if e.pol.FleetRemoteName() == pol.FleetRemoteName() {
			space, err, known = e.space, e.spaceErr, true
		}
		if slices.Equal(e.pol.EtcdEndpoints, pol.EtcdEndpoints) && e.pol.EtcdAuth() == pol.EtcdAuth() {
			helper, e.helper = e.helper, nil
		}
	}
	if !known {
		space, err = fleet.KeySpace(ctx, repo.Git, pol)
	}
	if err != nil {
		if helper != nil {
			helper.Close()
		}
		return nil, "", err
	}
	if helper == nil {
		if helper, err = fleet.NewHelper(pol.EtcdEndpoints, pol.EtcdAuth(), stderr); err != nil {
			return nil, "", err
		}
	}
	return helper, space, nil
}

// close ends what take did not use: an unused helper, and the wait for
// the remote's URL (the git it runs is wt-exec's child, and must have
// ended before the command's leftovers are counted).
func (e *earlyFleet) close() {
	if e == nil {
		return
	}
	<-e.spaceDone
	if e.helper != nil {
		e.helper.Close()
		e.helper = nil
	}
}
