package cli

import (
	"fmt"
	"io"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/lease"
)

func (e *env) leaseCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "lease",
		Usage: "writer leases: list them",
		Subcommands: []*ucli.Command{
			{
				Name:  "list",
				Usage: "current leases with their freshness; --all adds ended ones from the event log",
				Flags: []ucli.Flag{jsonFlag, &ucli.BoolFlag{Name: "all", Usage: "also the leases that ended: who held which worktree, when, how it ended"}},
				Action: e.action("lease list", 0, func(c *ucli.Context) error {
					r, err := e.open(c)
					if err != nil {
						return err
					}
					entries, err := lease.List(r, c.Bool("all"))
					if err != nil {
						return err
					}
					res := map[string]any{"leases": entries}
					return e.success(decision.LeasesListed, fmt.Sprintf("%d lease(s)", len(entries)), res, nil, func(w io.Writer) {
						tw := table(w)
						fmt.Fprintln(tw, "TASK\tWORKTREE\tCLIENT\tPID\tGEN\tFROM\tTO\tSTATE")
						for _, l := range entries {
							state := l.Freshness
							if l.Ended != "" {
								state = l.Ended
							}
							fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", dash(l.TaskKey), dash(l.WorktreePath), l.Holder.ClientID, l.Holder.PID, l.Generation, l.From, dash(l.To), state)
						}
						tw.Flush()
					})
				}),
			},
		},
	}
}
