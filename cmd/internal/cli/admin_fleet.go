package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/store"
)

// fleetOf is the fleet side of the repository: its coordinator (the
// wt-fleet helper) and its key space. FLEET mode off is INVALID_POLICY.
func (e *env) fleetOf(c *ucli.Context) (*alloc.Repo, fleet.Coordinator, string, error) {
	r, err := e.open(c)
	if err != nil {
		return nil, nil, "", err
	}
	pol, err := policy.Read(r.Store)
	if err != nil {
		return nil, nil, "", err
	}
	if !pol.FleetOn() {
		return nil, nil, "", decision.Say(decision.InvalidPolicy, "fleet-mode").
			WithHint("turn it on: wt-admin policy --coordinator etcd --etcd-endpoints http://HOST:2379")
	}
	space, err := fleet.KeySpace(c.Context, r.Git, pol)
	if err != nil {
		return nil, nil, "", err
	}
	h, err := fleet.NewHelper(pol.EtcdEndpoints, pol.EtcdAuth(), os.Stderr)
	if err != nil {
		return nil, nil, "", err
	}
	return r, h, space, nil
}

func (e *env) fleetCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "fleet",
		Usage: "fleet mode (etcd): every task's fleet lease under this repository's remote",
		Subcommands: []*ucli.Command{
			{
				Name:  "status",
				Usage: "every task key under the remote's prefix: host, client, since, revision",
				Flags: []ucli.Flag{clikit.JSONFlag},
				Action: e.Action("fleet status", 0, func(c *ucli.Context) error {
					_, co, remote, err := e.fleetOf(c)
					if err != nil {
						return err
					}
					ctx, cancel := context.WithTimeout(c.Context, 10*time.Second)
					defer cancel()
					es, err := co.List(ctx, fleet.Prefix(remote))
					if err != nil {
						return err
					}
					res := map[string]any{"remote_id": remote, "prefix": fleet.Prefix(remote), "tasks": es}
					reason := fmt.Sprintf("%d task(s) held in the fleet under %s", len(es), fleet.Prefix(remote))
					return e.Success(decision.FleetStatusShown, reason, res, nil, func(w io.Writer) {
						fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, decision.FleetStatusShown, clikit.Clean(reason))
						tw := clikit.Table(w)
						fmt.Fprintln(tw, "TASK\tHOST\tCLIENT\tPID\tSINCE\tREVISION\tTTL")
						for _, x := range es {
							fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%ds\n", x.TaskKey, x.Holder.Host, x.Holder.ClientID, x.Holder.PID, x.Holder.Since, x.Revision, x.TTL)
						}
						tw.Flush()
					})
				}),
			},
			{
				Name:      "abandon",
				Usage:     "revoke the fleet lease of a task whose holder's machine is gone (needs --operator and a reason)",
				ArgsUsage: "TASK",
				Flags: []ucli.Flag{clikit.JSONFlag, &ucli.StringFlag{Name: "reason", Usage: "why (kept in the event)"},
					&ucli.BoolFlag{Name: "operator", Usage: "you vouch that the holder's machine is gone"}},
				Action: e.Action("fleet abandon", 1, func(c *ucli.Context) error {
					task, err := oneArg(c, "fleet abandon", "TASK: the task key", "reason")
					if err != nil {
						return err
					}
					if err := store.ValidTaskKey(task); err != nil {
						return err
					}
					r, co, remote, err := e.fleetOf(c)
					if err != nil {
						return err
					}
					ctx, cancel := context.WithTimeout(c.Context, 10*time.Second)
					defer cancel()
					key := fleet.Key(remote, task)
					x, err := fleet.Abandon(ctx, co, key, c.String("reason"), c.Bool("operator"))
					if err != nil {
						return err
					}
					if err := r.Store.Write(func(tx *store.Tx) error {
						tx.Durable()
						return tx.LogEvent("fleet_lease_abandoned", "", map[string]any{"key": key, "task_key": task,
							"holder": x.Holder, "revision": x.Revision, "reason": c.String("reason"), "operator": true})
					}); err != nil {
						return err
					}
					reason := fmt.Sprintf("revoked the fleet lease of task %s held by %s (revision %d)", task, x.Holder.Describe(), x.Revision)
					return e.Success(decision.FleetLeaseAbandoned, reason, x, nil, func(w io.Writer) {
						fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, decision.FleetLeaseAbandoned, clikit.Clean(reason))
					})
				}),
			},
		},
	}
}
