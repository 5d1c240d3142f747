package cli

import (
	"fmt"
	"io"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/core/view"
)

func (e *env) psCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "ps",
		Usage:     "who is in each governed worktree: the lease holder's processes and every other process using it",
		ArgsUsage: "[PATH]",
		Flags:     []ucli.Flag{clikit.JSONFlag},
		Action: e.Action("ps", 1, func(c *ucli.Context) error {
			r, err := e.open(c)
			if err != nil {
				return err
			}
			res, err := view.Ps(c.Context, r, c.Args().First())
			if err != nil {
				return err
			}
			reason := fmt.Sprintf("%d governed worktree(s), %d processes read", len(res.Rows), res.Processes)
			return e.Success(res.Code, reason, res, nil, func(w io.Writer) {
				tw := clikit.Table(w)
				fmt.Fprintln(tw, "WORKTREE\tTASK\tPID\tRELATION\tWHY\tCOMMAND")
				for _, row := range res.Rows {
					holder := "no lease"
					if l := row.Lease; l != nil {
						holder = fmt.Sprintf("lease of %s pid %d, %s", l.Holder.ClientID, l.Holder.PID, l.Freshness)
					}
					if len(row.Processes) == 0 {
						fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\tnobody (%s)\n", clikit.Clean(row.Path), clikit.Clean(row.TaskKey), holder)
						continue
					}
					for _, p := range row.Processes {
						why := p.Why
						if p.Path != "" {
							why += " " + p.Path
						}
						fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", clikit.Clean(row.Path), clikit.Clean(row.TaskKey), p.PID, p.Relation, clikit.Clean(clikit.Dash(why)), clikit.Clean(p.Command))
					}
				}
				tw.Flush()
				for _, row := range res.Rows {
					if l := row.Lease; l != nil && l.Confined != nil {
						fmt.Fprintf(w, "%s: its command is confined: %s\n", clikit.Clean(row.Path), clikit.Clean(confinedText(l.Confined)))
					}
				}
			})
		}),
	}
}
