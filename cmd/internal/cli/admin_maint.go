package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/maint"
	"github.com/wt-tool/wt/core/shell"
)

var applyFlag = &ucli.StringFlag{Name: "apply", Usage: "apply the plan with this plan_id (from the dry run); without it, a dry run"}

func (e *env) backfillCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "backfill",
		Usage: "register bindings written before registrations existed, where the live evidence proves them (dry run unless --apply PLAN_ID)",
		Flags: []ucli.Flag{clikit.JSONFlag, applyFlag},
		Action: e.Action("backfill", 0, func(c *ucli.Context) error {
			r, err := e.open(c)
			if err != nil {
				return err
			}
			res, err := maint.Backfill(c.Context, r, c.String("apply"))
			if err != nil {
				return err
			}
			reason := fmt.Sprintf("%d candidate(s), %d refused, %d already registered", len(res.Candidates), len(res.Refused), res.AlreadyRegistered)
			if !res.DryRun {
				reason = fmt.Sprintf("%d registration(s) written, %d refused, %d already registered", res.Written, len(res.Refused), res.AlreadyRegistered)
			}
			return e.Success(res.Code, reason, res, nil, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, res.Code, clikit.Clean(reason))
				tw := clikit.Table(w)
				for _, c := range res.Candidates {
					fmt.Fprintf(tw, "  candidate\t%s\t%s\tallocation %s\n", c.WorktreeKey, c.Path, c.AllocationID)
				}
				for _, f := range res.Refused {
					fmt.Fprintf(tw, "  refused\t%s\t%s\t%s\n", f.WorktreeKey, clikit.Dash(f.Path), strings.Join(f.Blockers, ", "))
				}
				tw.Flush()
				if res.DryRun && len(res.Candidates) > 0 {
					fmt.Fprintf(w, "plan_id %s\nnext: wt-admin --repo %s backfill --apply %s\n", res.PlanID, shell.Word(r.Git.TopLevel), res.PlanID)
				}
			})
		}),
	}
}

func (e *env) pruneCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "prune",
		Usage:     "remove the git registration of a retained audit worktree whose checkout is gone, on its owner's word (dry run unless --apply PLAN_ID)",
		ArgsUsage: "PATH",
		Flags:     []ucli.Flag{clikit.JSONFlag, applyFlag, &ucli.StringFlag{Name: "owner", Usage: "the allocation's recorded owner, who authorizes it"}},
		Action: e.Action("prune", 1, func(c *ucli.Context) error {
			path, err := pathArg(c, "prune", "owner")
			if err != nil {
				return err
			}
			r, err := e.open(c)
			if err != nil {
				return err
			}
			res, err := maint.Prune(c.Context, r, path, c.String("owner"), c.String("apply"))
			if err != nil {
				return err
			}
			p := res.Plan
			reason := fmt.Sprintf("%s (task %s, key %s): its audit HEAD %s is kept by %s", p.TargetPath, p.TaskKey, p.WorktreeKey, gitrepo.Short(p.ExpectedHead), p.PreservingRef)
			if !res.DryRun {
				reason = fmt.Sprintf("pruned the registration of %s (task %s); allocation %s is RELEASED, owner unassigned; receipt %s", p.TargetPath, p.TaskKey, p.AllocationID, res.TransactionID)
				if res.ResumedFrom != "" {
					reason += "; resumed from phase " + res.ResumedFrom
				}
			}
			return e.Success(res.Code, reason, res, nil, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, res.Code, clikit.Clean(reason))
				if res.DryRun {
					fmt.Fprintf(w, "plan_id %s\nnext: wt-admin --repo %s prune %s --owner %s --apply %s\n", res.PlanID, shell.Word(r.Git.TopLevel),
						shell.Word(p.TargetPath), shell.Word(p.Owner), res.PlanID)
				}
			})
		}),
	}
}

func (e *env) finishCommand() *ucli.Command {
	return &ucli.Command{
		Name: "finish",
		Usage: "end a task whose work is safe: remove its worktree (never forced), delete its merged or archived branch, " +
			"release its allocation so the task key is free (dry run unless --apply PLAN_ID)",
		ArgsUsage: "[PATH]",
		Flags: []ucli.Flag{clikit.JSONFlag, applyFlag,
			&ucli.StringFlag{Name: "owner", Usage: "the allocation's recorded owner, who authorizes it"},
			&ucli.StringFlag{Name: "task", Usage: "name the task by its key instead of its worktree's PATH"},
			&ucli.BoolFlag{Name: "archive", Usage: "keep commits the publication branch lacks under refs/wt/archive/TASK/N, then finish"},
		},
		Action: e.Action("finish", 1, func(c *ucli.Context) error {
			if !c.IsSet("owner") {
				return clikit.UsageErr("finish-needs")
			}
			r, err := e.open(c)
			if err != nil {
				return err
			}
			res, err := maint.Finish(c.Context, r, maint.FinishRequest{Path: c.Args().First(), Task: c.String("task"),
				Owner: c.String("owner"), Archive: c.Bool("archive"), Apply: c.String("apply")})
			if decision.CodeOf(err) == decision.GCAlreadyApplied && c.String("apply") != "" {
				// Finished already: its branch on the remotes goes now if
				// it could not then.
				if plan, ok, perr := maint.FinishedPlan(r, c.Args().First(), c.String("task")); perr == nil && ok {
					for _, d := range maint.DeleteRemoteBranches(c.Context, r, plan, e.Stderr) {
						fmt.Fprintf(e.Stderr, "%s: finish: %s\n", e.Bin, clikit.Clean(d.Message))
					}
				}
			}
			if err != nil {
				return err
			}
			p := res.Plan
			steps := finishSteps(p)
			reason := fmt.Sprintf("task %s at %s can be finished: %s", p.TaskKey, p.TargetPath, strings.Join(steps, "; "))
			if !res.DryRun {
				reason = fmt.Sprintf("finished task %s: %s; task key %s is free; receipt %s", p.TaskKey, strings.Join(steps, "; "), p.TaskKey, res.TransactionID)
				if res.ResumedFrom != "" {
					reason += "; resumed from phase " + res.ResumedFrom
				}
				res.Remotes = maint.DeleteRemoteBranches(c.Context, r, p, e.Stderr)
			}
			return e.Success(res.Code, reason, res, nil, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, res.Code, clikit.Clean(reason))
				for _, d := range res.Remotes {
					if d.Outcome != maint.RemoteAbsent {
						fmt.Fprintf(w, "remote %s: %s: %s\n", clikit.Clean(d.Remote), d.Outcome, clikit.Clean(d.Message))
					}
				}
				if res.DryRun {
					if out, err := r.Git.Git(c.Context, true, "remote"); err == nil && p.Branch != "" && len(strings.Fields(string(out))) > 0 {
						fmt.Fprintf(w, "then: delete %s on each remote that holds it at a commit kept (%s; through the remote's fence)\n", p.Branch, strings.Join(strings.Fields(string(out)), ", "))
					}
					args := []string{"wt-admin", "--repo", r.Git.TopLevel, "finish", p.TargetPath, "--owner", p.Owner}
					// Whether it archives is in the plan id: apply needs no --archive.
					fmt.Fprintf(w, "plan_id %s\nnext: %s --apply %s\n", res.PlanID, shell.Words(args...), res.PlanID)
				}
			})
		}),
	}
}

// finishSteps says what a finish plan does, in order.
func finishSteps(p maint.FinishPlan) []string {
	var steps []string
	for _, a := range p.Archive {
		steps = append(steps, fmt.Sprintf("keep %d unmerged commit(s) at %s under %s", a.Commits, gitrepo.Short(a.OID), a.Ref))
	}
	switch p.Checkout {
	case maint.CheckoutPresent:
		steps = append(steps, "git worktree remove "+p.TargetPath)
	case maint.CheckoutMissing:
		steps = append(steps, "remove the registration of the deleted checkout "+p.TargetPath)
	default:
		steps = append(steps, "the worktree was already removed")
	}
	switch {
	case p.DeleteBranch && len(p.Archive) == 0:
		steps = append(steps, fmt.Sprintf("delete branch %s (merged into %s)", p.Branch, strings.TrimPrefix(p.PublicationRef, "refs/heads/")))
	case p.DeleteBranch:
		steps = append(steps, fmt.Sprintf("delete branch %s (archived)", p.Branch))
	case p.Branch != "":
		steps = append(steps, fmt.Sprintf("branch %s is already gone", p.Branch))
	}
	if len(p.Leftovers) > 0 {
		var refs []string
		for _, x := range p.Leftovers {
			refs = append(refs, x.Ref)
		}
		steps = append(steps, "remove wt's refs of the task: "+strings.Join(refs, ", "))
	}
	for _, x := range p.UngatedKept {
		steps = append(steps, fmt.Sprintf("keep %s (an ungated tip, at %s, that nothing else holds: look at it, then git update-ref -d %s %s)", x.Ref, gitrepo.Short(x.OID), x.Ref, x.OID))
	}
	return append(steps, "release allocation "+p.AllocationID)
}

func (e *env) auditCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "audit",
		Usage:     "the moves of every live task branch: those the gate approved, by lease, and every one it never saw (UNGATED_REF_MOVE), with the command that restores the branch",
		UsageText: "wt-admin audit [--since TIME|DURATION] [--json]",
		Flags: []ucli.Flag{clikit.JSONFlag,
			&ucli.StringFlag{Name: "since", Usage: "only moves after `TIME` (RFC 3339) or this long ago (a Go duration, e.g. 24h)"}},
		Action: e.Action("audit", 0, func(c *ucli.Context) error {
			var since time.Time
			if v := c.String("since"); v != "" {
				if d, err := time.ParseDuration(v); err == nil {
					since = time.Now().Add(-d)
				} else if t, err := time.Parse(time.RFC3339, v); err == nil {
					since = t
				} else {
					return clikit.UsageErr("since-neither", v)
				}
			}
			r, err := e.open(c)
			if err != nil {
				return err
			}
			res, err := maint.Audit(r, since, nil)
			if err != nil {
				return err
			}
			maint.MarkAudit(r.Git.CommonDir, res) // doctor reports what came after
			reason := fmt.Sprintf("%d branch(es), %d move(s) no gate approved", len(res.Tasks), res.Ungated)
			if res.Missing > 0 {
				reason += fmt.Sprintf(", %d branch(es) gone (TASK_BRANCH_MISSING)", res.Missing)
			}
			return e.Success(res.Code, reason, res, nil, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, res.Code, reason)
				for _, t := range res.Tasks {
					approved := 0
					for _, n := range t.ByLease {
						approved += n
					}
					if t.Publication {
						fmt.Fprintf(w, "publication branch %s at %s: %d move(s) a gate saw, %d it never saw\n", clikit.Clean(t.Branch), gitrepo.Short(t.Tip), approved, len(t.Ungated))
					} else {
						fmt.Fprintf(w, "task %s (%s at %s): %d approved move(s) under %d lease(s), %d ungated\n", clikit.Clean(t.TaskKey), clikit.Clean(t.Branch), gitrepo.Short(t.Tip), approved, len(t.ByLease), len(t.Ungated))
					}
					if t.Unseen != "" {
						fmt.Fprintf(w, "  not audited: cannot read %s\n", clikit.Clean(t.Unseen))
					}
					if m := t.Missing; m != nil {
						fmt.Fprintf(w, "  ALARM: %s: %s\n    restore: %s\n", m.Code, clikit.Clean(m.Message), clikit.Clean(m.Restore))
					}
					if s := t.Symref; s != nil {
						fmt.Fprintf(w, "  ALARM: %s: %s\n", s.Code, clikit.Clean(s.Message))
						for _, fix := range s.Repair {
							fmt.Fprintf(w, "    repair: %s\n", clikit.Clean(fix))
						}
					}
					for _, m := range t.Ungated {
						when := m.Time
						if when == "" {
							when = "no reflog entry"
						}
						fmt.Fprintf(w, "  %s: %s -> %s (%s): %s\n", m.Code, gitrepo.Short(m.Old), gitrepo.Short(m.New), when, clikit.Clean(m.Message))
						switch {
						case m.Holder != "":
							fmt.Fprintf(w, "    lease then: %s\n", clikit.Clean(m.Holder))
						case m.NoLease:
							fmt.Fprintf(w, "    lease then: none was held\n")
						}
						if m.Restore != "" {
							fmt.Fprintf(w, "    restore: %s\n", clikit.Clean(m.Restore))
						}
					}
				}
			})
		}),
	}
}
