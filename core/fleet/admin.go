package fleet

import (
	"context"
	"strings"
	"unicode"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
)

// Find returns the entry of one task key, or FLEET_NO_LEASE.
func Find(ctx context.Context, co Coordinator, key string) (Entry, error) {
	es, err := co.List(ctx, key)
	if err != nil {
		return Entry{}, err
	}
	for _, e := range es {
		if e.Key == key {
			return e, nil
		}
	}
	return Entry{}, decision.Say(decision.FleetNoLease, "no-fleet", key).
		WithHint("see every task's holder with wt-admin fleet status")
}

// Abandon revokes the fleet lease of a task whose holder's machine is gone
// (`wt-admin fleet abandon`). wt cannot see another machine's processes, so
// the operator's word is required (OPERATOR_REQUIRED without it), with a
// reason; a holder that runs on this machine, in this boot, is never
// abandoned (FLEET_LEASE_HELD): its wt-exec releases it.
func Abandon(ctx context.Context, co Coordinator, key, reason string, operator bool) (Entry, error) {
	for _, r := range reason {
		if unicode.IsControl(r) {
			return Entry{}, decision.Say(decision.Usage, "reason-holds").WithHint("give a reason of printable characters")
		}
	}
	if strings.TrimSpace(reason) == "" {
		return Entry{}, decision.Say(decision.Usage, "reason-must").
			WithHint(`e.g. --reason "host build-7 was decommissioned"`)
	}
	e, err := Find(ctx, co, key)
	if err != nil {
		return e, err
	}
	h := e.Holder
	if boot, err := proc.BootID(); err == nil && h.BootID == boot {
		if live, _ := proc.IsLive(proc.NewReader(), proc.Identity{BootID: h.BootID, PID: h.PID, StartTicks: h.StartTicks}); live {
			return e, decision.Say(decision.FleetLeaseHeld, "task-held", e.TaskKey, h.Describe()).
				WithHint("its wt-exec releases the fleet lease when it ends; see it with wt-admin lease list")
		}
	}
	if !operator {
		return e, decision.Say(decision.OperatorRequired, "task-held", e.TaskKey, h.Describe()).
			WithHint("if it is, say so: wt-admin fleet abandon %s --reason TEXT --operator", shell.Word(e.TaskKey))
	}
	return co.Revoke(ctx, key)
}
