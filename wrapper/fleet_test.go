package wrapper

import (
	"errors"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/decision/decisiontest"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// TestDeadPrevious: a fleet refusal is the grant's own dead predecessor's
// lease only when it names the same local lease, boot and pid.
func TestDeadPrevious(t *testing.T) {
	t.Parallel()
	prev := &store.Lease{LeaseID: "L0", Holder: proc.Holder{BootID: "b", PID: 7}}
	g := lease.Grant{Previous: prev}
	held := func(h fleet.Holder) error {
		return decision.Relay(decision.FleetLeaseHeld, "held").WithFact("fleet_holder", h).WithFact("fleet_revision", int64(12))
	}
	same := fleet.Holder{LeaseID: "L0", BootID: "b", PID: 7, ClientID: "c"}
	if d, ok := deadPrevious(held(same), g); !ok || d.revision != 12 || d.ClientID != "c" {
		t.Errorf("the predecessor's: %+v %v", d, ok)
	}
	for name, tc := range map[string]struct {
		err error
		g   lease.Grant
	}{
		"another lease":     {held(fleet.Holder{LeaseID: "L9", BootID: "b", PID: 7}), g},
		"another boot":      {held(fleet.Holder{LeaseID: "L0", BootID: "x", PID: 7}), g},
		"another pid":       {held(fleet.Holder{LeaseID: "L0", BootID: "b", PID: 8}), g},
		"no predecessor":    {held(same), lease.Grant{}},
		"another refusal":   {decision.Relay(decision.FleetUnreachable, "x"), g},
		"not a decision":    {errors.New("x"), g},
		"no holder in fact": {decision.Relay(decision.FleetLeaseHeld, "x"), g},
	} {
		if _, ok := deadPrevious(tc.err, tc.g); ok {
			t.Errorf("%s: taken for the predecessor's", name)
		}
	}
	// Without fleet mode, or for another role, no fleet lease is taken.
	s := &supervisor{}
	if fl, err := s.fence(lease.Grant{Role: store.RoleFeature}, store.Policy{}); fl != nil || err != nil {
		t.Errorf("fence without fleet mode: %v %v", fl, err)
	}
	if fl, err := s.fence(lease.Grant{Role: store.RoleIntegration}, store.Policy{Coordinator: store.CoordinatorEtcd}); fl != nil || err != nil {
		t.Errorf("fence of an integration worktree: %v %v", fl, err)
	}
	decisiontest.Want(t, func() error {
		_, err := s.fence(lease.Grant{Role: store.RoleFeature}, store.Policy{Coordinator: store.CoordinatorEtcd, FleetTTL: "bogus"})
		return err
	}(), decision.InvalidPolicy)
	s.releaseFleet() // nothing to release
}
