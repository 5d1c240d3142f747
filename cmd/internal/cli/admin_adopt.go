package cli

import (
	"fmt"
	"io"
	"strconv"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/core/maint"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
)

func (e *env) adoptCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "adopt",
		Usage:     "bring an existing linked worktree (git worktree add, an agent CLI's, a worktree manager's) under wt as a task's, its branch kept (dry run unless --apply PLAN_ID)",
		ArgsUsage: "PATH (the worktree; a relative PATH is from the current directory, not from --repo)",
		Flags: []ucli.Flag{clikit.JSONFlag, applyFlag,
			&ucli.StringFlag{Name: "task", Usage: "the task `KEY` the worktree becomes"},
			&ucli.StringFlag{Name: "owner", Usage: "the task's owner"},
			&ucli.BoolFlag{Name: "new-task", Usage: "the key is a new task, however close to a live task's (TASK_KEY_SIMILAR)"},
			&ucli.StringFlag{Name: "holder", Usage: "the agent at work in the worktree that becomes its writer: `PID` (with --client-id)"},
			&ucli.StringFlag{Name: "client-id", Usage: "the holder's client id"},
			&ucli.BoolFlag{Name: "rename-branch", Usage: "move the worktree's branch to the task layout's name (wt/KEY) as it is adopted"}},
		Action: e.Action("adopt", 1, func(c *ucli.Context) error {
			path, err := pathArg(c, "adopt", "task", "owner")
			if err != nil {
				return err
			}
			var holder *proc.Holder
			if c.IsSet("holder") {
				if !c.IsSet("client-id") {
					return clikit.UsageErr("holder-without-client")
				}
				if _, err := strconv.Atoi(c.String("holder")); err != nil {
					return clikit.UsageErr("holder-not-pid", c.String("holder"))
				}
				h, err := proc.ResolveAdopter(c.String("holder"), proc.Names{ClientID: c.String("client-id")})
				if err != nil {
					return err
				}
				holder = &h
			} else if c.IsSet("client-id") {
				return clikit.UsageErr("client-without-holder")
			}
			r, err := e.open(c)
			if err != nil {
				return err
			}
			res, err := maint.Adopt(c.Context, r, maint.AdoptRequest{Path: path, Task: c.String("task"), Owner: c.String("owner"),
				NewTask: c.Bool("new-task"), Apply: c.String("apply"), Holder: holder, RenameBranch: c.Bool("rename-branch")})
			if err != nil {
				return err
			}
			p := res.Plan
			reason := fmt.Sprintf("%s becomes task %s's (branch %s at %.12s, owner %s)", p.WorktreePath, p.TaskKey, p.Branch, p.Tip, p.Owner)
			if !res.DryRun {
				reason = fmt.Sprintf("%s is task %s's (allocation %s, branch %s kept)", p.WorktreePath, p.TaskKey, res.AllocationID, p.Branch)
			}
			var warnings []string
			if !res.DryRun {
				var notes []string
				warnings, notes = ungatedWarnings(c, res.Allocation)
				for _, n := range notes {
					fmt.Fprintf(e.Stderr, "%s: %s\n", e.Bin, clikit.Clean(n))
				}
			}
			return e.Success(res.Code, reason, res, warnings, func(w io.Writer) {
				for _, wr := range warnings {
					fmt.Fprintf(e.Stderr, "%s: warning: %s\n", e.Bin, clikit.Clean(wr))
				}
				fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, res.Code, clikit.Clean(reason))
				// What the plan does, or (applied) did.
				verb := func(will, did string) string {
					if res.DryRun {
						return will
					}
					return did
				}
				if l := p.Lock; l != nil {
					fmt.Fprintf(w, "  git lock %q: %s it (%s)\n", clikit.Clean(l.Reason), verb("lifts", "lifted"), clikit.Clean(l.Why))
				}
				if p.RenamedFrom != "" {
					fmt.Fprintf(w, "  branch %s: %s it %s\n", clikit.Clean(p.RenamedFrom), verb("renames", "renamed"), clikit.Clean(p.Branch))
				}
				if h := p.Holder; h != nil {
					fmt.Fprintf(w, "  writer: pid %d, client %s (its lease granted with the adoption)\n", h.PID, clikit.Clean(h.ClientID))
				}
				if res.DryRun {
					holderArgs := ""
					if p.RenamedFrom != "" {
						verb := "renames"
						if !res.DryRun {
							verb = "renamed"
						}
						fmt.Fprintf(w, "  branch %s: %s it %s\n", clikit.Clean(p.RenamedFrom), verb, clikit.Clean(p.Branch))
					}
					if h := p.Holder; h != nil {
						holderArgs = fmt.Sprintf(" --holder %d --client-id %s", h.PID, shell.Word(h.ClientID))
					}
					if p.RenamedFrom != "" {
						holderArgs += " --rename-branch"
					}
					fmt.Fprintf(w, "plan_id %s\nnext: wt-admin --repo %s adopt %s --task %s --owner %s%s --apply %s\n", res.PlanID,
						shell.Word(r.Git.TopLevel), shell.Word(p.WorktreePath), shell.Word(p.TaskKey), shell.Word(p.Owner), holderArgs, res.PlanID)
				}
			})
		}),
	}
}
