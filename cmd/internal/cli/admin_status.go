package cli

import (
	"fmt"
	"io"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/cmd/internal/textout"
	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/core/view"
	"github.com/wt-tool/wt/install"
)

func (e *env) statusCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "status",
		Usage: "every worktree: role, owner, lifecycle, lease holder and freshness",
		Flags: []ucli.Flag{clikit.JSONFlag},
		Action: e.Action("status", 0, func(c *ucli.Context) error {
			r, err := e.open(c)
			if err != nil {
				return err
			}
			res, err := view.Status(c.Context, r, install.GateState)
			if err != nil {
				return err
			}
			reason := fmt.Sprintf("%d worktree(s)", len(res.Rows))
			return e.Success(res.Code, reason, res, res.Warnings, func(w io.Writer) {
				tw := clikit.Table(w)
				fmt.Fprintln(tw, "PATH\tKEY\tTASK\tROLE\tOWNER\tLIFECYCLE\tBRANCH\tLEASE HOLDER\tFRESHNESS\tGATE")
				for _, row := range res.Rows {
					lifecycle := row.DisplayLifecycle
					if row.GitState != "present" {
						lifecycle += " (" + row.GitState + ")"
					}
					holder, fresh := "-", "-"
					if l := row.Lease; l != nil {
						holder = fmt.Sprintf("%s pid %d", l.Holder.ClientID, l.Holder.PID)
						fresh = l.Freshness
						if l.Fleet != nil {
							fresh += fmt.Sprintf(" (fleet rev %d)", l.Fleet.Revision)
						}
					} else if len(row.Occupants) > 0 {
						o := row.Occupants[0]
						holder, fresh = fmt.Sprintf("occupant pid %d", o.PID), "occupied"
					}
					branch := row.Branch
					if branch == "" && row.Head != "" {
						branch = fmt.Sprintf("(detached %.8s)", row.Head)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", clikit.Clean(row.Path), clikit.Clean(clikit.Dash(row.Key)), clikit.Clean(clikit.Dash(row.TaskKey)),
						clikit.Clean(clikit.Dash(row.Role)), clikit.Clean(clikit.Dash(row.Owner)), lifecycle, clikit.Clean(clikit.Dash(branch)), clikit.Clean(holder), fresh, clikit.Dash(row.Gate))
				}
				tw.Flush()
				for _, row := range res.Rows {
					for _, p := range row.Problems {
						kind := "problem"
						if p.Alarm {
							kind = "ALARM"
						}
						fmt.Fprintf(w, "%s: %s: %s: %s\n", kind, clikit.Clean(row.Path), p.Code, clikit.Clean(p.Message))
						if p.Fix != "" {
							fmt.Fprintf(w, "  fix: %s\n", clikit.Clean(p.Fix))
						}
						if p.Hint != "" {
							fmt.Fprintf(w, "  hint: %s\n", clikit.Clean(p.Hint))
						}
					}
				}
				for _, p := range res.Pending {
					state := "in flight"
					if !p.ActorLive {
						state = "interrupted"
					}
					fmt.Fprintf(w, "pending: %s %s of %s (%s, pid %d)\n", p.Operation, state, clikit.Clean(p.Target), p.Phase, p.Actor.PID)
				}
				for _, n := range res.Next {
					fmt.Fprintf(w, "next: %s: %s\n  %s\n", clikit.Clean(n.Path), n.Why, clikit.Clean(n.Command))
				}
				if line := publicationLine(res.Publication); line != "" {
					fmt.Fprintln(w, line)
				}
				if len(res.ReadyQueue) > 0 {
					fmt.Fprintf(w, "ready to land, in order: %s (wt-admin land --ready)\n", clikit.Clean(strings.Join(res.ReadyQueue, ", ")))
				}
				for _, b := range res.Behind {
					fmt.Fprintf(w, "behind: %s has %s checked out with changes of its own, and its files are still %s's of %s (landings moved the branch under it; git status shows them as a staged reversal)\n  bring it forward, keeping its changes: %s\n",
						clikit.Clean(b.Path), clikit.Clean(res.Policy.PublicationBranch), clikit.Clean(res.Policy.PublicationBranch), gitrepo.Short(b.From), clikit.Clean(b.Fix))
				}
			})
		}),
	}
}

func lifecycleCommand(e *env, name, usage string, run func(r *alloc.Repo, c *ucli.Context) (alloc.LifecycleResult, error)) *ucli.Command {
	return &ucli.Command{
		Name:      name,
		Usage:     usage,
		UsageText: "wt-admin " + name + " PATH --owner NAME [--expect-version N]",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "owner", Usage: "the allocation's owner"},
			&ucli.IntFlag{Name: "expect-version", Usage: "refuse unless the allocation is at this record version"},
			clikit.JSONFlag,
		},
		Action: e.Action(name, 1, func(c *ucli.Context) error {
			if !c.IsSet("owner") || c.Args().Len() != 1 {
				return clikit.UsageErr("needs-path", name)
			}
			r, err := e.open(c)
			if err != nil {
				return err
			}
			res, err := run(r, c)
			if err != nil {
				return err
			}
			a := res.Allocation
			reason := fmt.Sprintf("task %s at %s is %s", a.TaskKey, a.WorktreePath, a.Lifecycle)
			if a.Lifecycle == store.Retained {
				reason += "; its work is kept and no writer may take a lease until it is resumed"
			}
			return e.Success(res.Code, reason, res, nil, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, res.Code, clikit.Clean(reason))
			})
		}),
	}
}

func (e *env) retainCommand() *ucli.Command {
	return lifecycleCommand(e, "retain", "keep an allocation's work but admit no writer (ACTIVE -> RETAINED)",
		func(r *alloc.Repo, c *ucli.Context) (alloc.LifecycleResult, error) {
			return r.Retain(c.Context, c.Args().First(), c.String("owner"), optInt(c, "expect-version"))
		})
}

func (e *env) resumeCommand() *ucli.Command {
	return lifecycleCommand(e, "resume", "admit writers again (RETAINED -> ACTIVE)",
		func(r *alloc.Repo, c *ucli.Context) (alloc.LifecycleResult, error) {
			return r.Resume(c.Context, c.Args().First(), c.String("owner"), optInt(c, "expect-version"))
		})
}

func (e *env) versionCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "version",
		Usage: "tool version, JSON schema version, store layout version, known decision codes",
		Flags: []ucli.Flag{clikit.JSONFlag},
		Action: e.Action("version", 0, func(c *ucli.Context) error {
			res := map[string]any{"tool_version": textout.Version(), "json_schema_version": textout.JSONSchemaVersion,
				"store_layout_version": store.LayoutVersion, "record_schema_version": store.SchemaVersion,
				"decision_codes": decision.Codes(), "decision_table": decision.Describe()}
			return e.Success(decision.VersionShown, "wt "+textout.Version(), res, nil, func(w io.Writer) {
				fmt.Fprintf(w, "wt %s (json schema %d, store layout %d, record schema %d)\n", textout.Version(), textout.JSONSchemaVersion, store.LayoutVersion, store.SchemaVersion)
				fmt.Fprintf(w, "decision codes: %d known (wt-admin version --json lists them)\n", len(decision.Codes()))
			})
		}),
	}
}

// publicationLine says who holds the publication lease ("" for nobody).
func publicationLine(p *view.PublicationView) string {
	if p == nil {
		return ""
	}
	task := ""
	if p.Task != "" {
		task = ", landing task " + clikit.Clean(p.Task)
	}
	line := ""
	switch {
	case p.Unknown != "":
		line = fmt.Sprintf("publication lease: lander pid %d%s, since %s; whether it runs cannot be read (%s)", p.Holder.PID, task, p.AcquiredAt, clikit.Clean(p.Unknown))
	case p.Live:
		line = fmt.Sprintf("publication lease: held by lander pid %d%s, since %s", p.Holder.PID, task, p.AcquiredAt)
	default:
		line = fmt.Sprintf("publication lease: left by dead lander pid %d%s (the next wt-admin land takes it over)", p.Holder.PID, task)
	}
	if len(p.Waiting) > 0 {
		var pids []string
		for _, pid := range p.Waiting {
			pids = append(pids, fmt.Sprintf("pid %d", pid))
		}
		line += fmt.Sprintf("; %d lander(s) in line for it: %s (first come, first served)", len(p.Waiting), strings.Join(pids, ", "))
	}
	return line
}
