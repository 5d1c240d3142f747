package cli

import (
	"fmt"
	"io"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/core/alloc"
)

func (e *env) allocateCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "allocate",
		Usage:     "create a governed worktree for a task",
		UsageText: "wt-admin allocate --task KEY --owner NAME [--role R] [--branch NAME] [--base REV] PATH",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "task", Usage: "the task key (one ACTIVE or RETAINED allocation per key)"},
			&ucli.StringFlag{Name: "owner", Usage: "who owns the task"},
			&ucli.StringFlag{Name: "role", Value: "feature", Usage: "feature, audit, canonical, integration or recovery"},
			&ucli.StringFlag{Name: "branch", Usage: "the new branch (default wt/<KEY>; audit worktrees are detached)"},
			&ucli.StringFlag{Name: "base", Usage: "the commit to start from (default: the publication branch)"},
			jsonFlag,
		},
		Action: e.action("allocate", 1, func(c *ucli.Context) error {
			if !c.IsSet("task") || !c.IsSet("owner") || c.Args().Len() != 1 {
				return usageErr("allocate needs --task KEY, --owner NAME and one PATH")
			}
			r, err := e.open(c)
			if err != nil {
				return err
			}
			res, err := r.Allocate(c.Context, alloc.Request{TaskKey: c.String("task"), Owner: c.String("owner"),
				Role: c.String("role"), Branch: c.String("branch"), Base: c.String("base"), Path: c.Args().First()})
			var warnings []string
			for _, rec := range res.Recovered {
				warnings = append(warnings, fmt.Sprintf("interrupted allocate of %s (task %s): %s: %s", rec.Path, rec.TaskKey, rec.Outcome, rec.Detail))
			}
			if err != nil {
				for _, w := range warnings {
					fmt.Fprintf(e.stderr, "%s: warning: %s\n", e.bin, w)
				}
				return err
			}
			a := res.Allocation
			where := "detached"
			if a.Branch != nil {
				where = "branch " + *a.Branch
			}
			reason := fmt.Sprintf("task %s allocated at %s (%s at %.12s, role %s, owner %s)", a.TaskKey, a.WorktreePath, where, a.BaseCommit, a.Role, a.Owner)
			return e.success(res.Code, reason, res, warnings, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %s: %s\n", e.bin, res.Code, reason)
			})
		}),
	}
}
