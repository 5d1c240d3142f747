package land

import (
	"context"
	"io"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/store"
)

// fleetLease takes the remote's publication lease in etcd (fleet mode):
// one lander per remote, whichever machine it runs on. The local lease,
// already held, is recorded with it. A lander elsewhere holds it:
// PUBLICATION_LEASE_HELD, or waited for with wait. The session it returns
// is kept alive by the wt-fleet helper until released; a lander that dies
// lets it expire with the policy's fleet TTL.
func fleetLease(ctx context.Context, r *alloc.Repo, pol store.Policy, mine *store.PublicationLease, stderr io.Writer, repoArg string, wait bool, timeout, poll time.Duration) (fleet.Session, error) {
	ttl, err := pol.FleetTTLDuration()
	if err != nil {
		return nil, decision.SayWrap(decision.InvalidPolicy, err, "fleet-policy")
	}
	space, err := fleet.KeySpace(ctx, r.Git, pol)
	if err != nil {
		return nil, err
	}
	key := fleet.PublicationKey(space)
	holder := fleet.HolderOf(mine.Holder, mine.LeaseID, "(publication of "+pol.PublicationBranch+")")
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	for {
		helper, err := fleet.NewHelper(pol.EtcdEndpoints, pol.EtcdAuth(), stderr)
		if err != nil {
			return nil, err
		}
		actx, cancel := context.WithTimeout(ctx, 4*fleet.DialTimeout())
		sess, err := helper.Acquire(actx, key, holder, ttl)
		cancel()
		if err == nil {
			mine.Fleet = &store.FleetLease{Key: key, Revision: sess.Revision(), EtcdLease: sess.LeaseID(), Endpoints: pol.EtcdEndpoints, TTL: ttl.String()}
			return sess, r.Store.Write(func(tx *store.Tx) error {
				l, ok, err := tx.PublicationLease()
				if err != nil {
					return err
				}
				if !ok || l.LeaseID != mine.LeaseID {
					return lost(mine)
				}
				l.Fleet = mine.Fleet
				if err := tx.PutPublicationLease(&l); err != nil {
					return err
				}
				*mine = l
				return nil
			})
		}
		helper.Close()
		if decision.CodeOf(err) != decision.FleetLeaseHeld {
			return nil, err
		}
		d, _ := decision.As(err)
		refusal := decision.Say(decision.PublicationLeaseHeld, "publication-lease", pol.PublicationBranch, d.Message).
			WithHint("wait for it: wt-admin --repo %s land --wait ...; see it with wt-admin --repo %s fleet status", repoArg, repoArg)
		if !wait {
			return nil, refusal
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return nil, decision.Say(decision.LandWaitTimeout, "waited-publication", timeout, refusal.Message).
				WithHint("wait longer: wt-admin --repo %s land --wait --timeout 30m ...", repoArg)
		}
		if err := pause(ctx, poll, "waiting for the publication lease"); err != nil {
			return nil, err
		}
	}
}

// fleetLost is the refusal of a lander whose fleet lease was lost (etcd
// unreachable past its TTL): another lander may hold it now.
func fleetLost(branch, repoArg string) *decision.Error {
	return decision.Say(decision.FleetLeaseLost, "fleet-publication", branch).
		WithHint("land again once etcd answers; see it with wt-admin --repo %s fleet status", repoArg)
}
