package doctor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/shell"
)

// fleetOn: the fleet check runs in fleet mode only.
func fleetOn(s *scope) bool { return s.pol.FleetOn() }

// checkFleet: in fleet mode, the wt-fleet helper is installed and etcd
// answers (outside the store's lock: the network may be slow).
func checkFleet(s *scope) {
	ctx, r, pol := s.ctx, s.r, s.pol
	h, err := fleet.NewHelper(pol.EtcdEndpoints, pol.EtcdAuth(), nil)
	if err != nil {
		s.find(Finding{Subject: fleet.HelperName, Problem: err.Error(), Hint: "install wt again (make install), which installs " + fleet.HelperName})
		return
	}
	space, err := fleet.KeySpace(ctx, r.Git, pol)
	if err != nil {
		s.find(Finding{Subject: "remote " + pol.FleetRemoteName(),
			Problem: "fleet mode names the task keys after remote " + pol.FleetRemoteName() + ", which this repository lacks",
			Fix:     fmt.Sprintf("git -C %s remote add %s URL", shell.Word(r.Git.TopLevel), pol.FleetRemoteName())})
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := h.List(cctx, fleet.Prefix(space)); err != nil {
		s.find(Finding{Subject: strings.Join(pol.EtcdEndpoints, ","), Problem: err.Error(),
			Hint: "start etcd or fix the endpoints (wt-admin policy --etcd-endpoints URL[,URL]); until then wt-exec refuses to start and pushes are refused"})
	}
}
