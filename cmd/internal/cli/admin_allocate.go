package cli

import (
	"fmt"
	"io"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/install"
)

func (e *env) allocateCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "allocate",
		Usage:     "create a governed worktree for a task",
		UsageText: "wt-admin allocate --task KEY --owner NAME [--role R] [--branch NAME] [--base REV] [--new-task] PATH",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "task", Usage: "the task key (one ACTIVE or RETAINED allocation per key)"},
			&ucli.StringFlag{Name: "owner", Usage: "who owns the task"},
			&ucli.StringFlag{Name: "role", Value: "feature", Usage: "feature, audit, canonical, integration or recovery"},
			&ucli.StringFlag{Name: "branch", Usage: "the new branch (default wt/<KEY>; audit worktrees are detached)"},
			&ucli.StringFlag{Name: "base", Usage: "the commit to start from (default: the publication branch)"},
			&ucli.BoolFlag{Name: "new-task", Usage: "the key is a new task even if it is close to a live task's (otherwise refused: TASK_KEY_SIMILAR, did you mean)"},
			clikit.JSONFlag,
		},
		Action: e.Action("allocate", 1, func(c *ucli.Context) error {
			if !c.IsSet("task") || !c.IsSet("owner") || c.Args().Len() != 1 {
				return clikit.UsageErr("allocate-needs")
			}
			r, err := e.open(c)
			if err != nil {
				return err
			}
			res, err := r.Allocate(c.Context, alloc.Request{TaskKey: c.String("task"), Owner: c.String("owner"),
				Role: c.String("role"), Branch: c.String("branch"), Base: c.String("base"), Path: c.Args().First(), NewTask: c.Bool("new-task")})
			var warnings []string
			for _, rec := range res.Recovered {
				warnings = append(warnings, fmt.Sprintf("interrupted allocate of %s (task %s): %s: %s", rec.Path, rec.TaskKey, rec.Outcome, rec.Detail))
			}
			if err != nil {
				for _, w := range warnings {
					fmt.Fprintf(e.Stderr, "%s: warning: %s\n", e.Bin, w)
				}
				return err
			}
			a := res.Allocation
			warns, notes := ungatedWarnings(c, a)
			warnings = append(warnings, warns...)
			where := "detached"
			if a.Branch != nil {
				where = "branch " + *a.Branch
			}
			reason := fmt.Sprintf("task %s allocated at %s (%s at %.12s, role %s, owner %s)", a.TaskKey, a.WorktreePath, where, a.BaseCommit, a.Role, a.Owner)
			return e.Success(res.Code, reason, res, warnings, func(w io.Writer) {
				for _, n := range notes {
					fmt.Fprintf(e.Stderr, "%s: %s\n", e.Bin, clikit.Clean(n))
				}
				fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, res.Code, clikit.Clean(reason))
			})
		}),
	}
}

// ungatedWarnings says when a worktree allocate made is not gated: its role
// expects a gate wt does not provide, or its hooks dir lacks wt's current
// shims (not installed yet, or core.hooksPath inside the working tree at a
// commit older than the install). notes say what allocate did to ready the
// worktree for the gate (install.PrepareWorktree): said, not warned of.
func ungatedWarnings(c *ucli.Context, a store.Allocation) (out, notes []string) {
	if g, ok := alloc.RoleGate[a.Role]; ok {
		out = append(out, decision.UngatedRole+": "+decision.Words(decision.UngatedRole, "path-role-ungated", a.WorktreePath, a.Role, g))
	}
	if a.Role != store.RoleFeature {
		return out, nil
	}
	if g, err := gitrepo.Discover(c.Context, a.WorktreePath); err == nil {
		did, err := install.PrepareWorktree(c.Context, g, a)
		notes = did
		if err != nil {
			out = append(out, err.Error())
		}
	}
	if w := install.Ungated(c.Context, a.WorktreePath); w != "" {
		out = append(out, w)
	}
	return out, notes
}

func (e *env) recoverCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "recover",
		Usage: "finish or undo every interrupted allocate now, as the next allocate would (and list those still in flight)",
		Flags: []ucli.Flag{clikit.JSONFlag},
		Action: e.Action("recover", 0, func(c *ucli.Context) error {
			r, err := e.open(c)
			if err != nil {
				return err
			}
			recs, err := r.Recover(c.Context)
			if err != nil {
				return err
			}
			reason := fmt.Sprintf("%d interrupted allocate(s)", len(recs))
			return e.Success(decision.AllocationRecovered, reason, map[string]any{"recovered": recs}, nil, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, decision.AllocationRecovered, reason)
				for _, rec := range recs {
					fmt.Fprintf(w, "  %s %s  %s (task %s): %s\n", rec.Code, rec.Outcome, clikit.Clean(rec.Path), clikit.Clean(rec.TaskKey), clikit.Clean(rec.Detail))
				}
			})
		}),
	}
}
