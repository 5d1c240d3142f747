package cli

import (
	"fmt"
	"io"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/land"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

func (e *env) whyCommand() *ucli.Command {
	return &ucli.Command{
		Name: "why",
		Usage: "say how a commit of the publication branch came there: the task, its writer lease, the tip let go, " +
			"the batch and the test it passed, the lander and the push (from wt's store, or in a clone from the notes land --push publishes)",
		ArgsUsage: "COMMIT",
		Flags: []ucli.Flag{clikit.JSONFlag,
			&ucli.StringFlag{Name: "branch", Usage: "the publication `BRANCH` (default: the policy's; in a clone without wt's store, the checked-out branch)"},
		},
		Action: e.Action("why", 1, func(c *ucli.Context) error {
			commit := c.Args().First()
			if commit == "" {
				return clikit.UsageErr("why-needs")
			}
			g, err := gitrepo.Discover(c.Context, repoDir(c))
			if err != nil {
				return err
			}
			root, branch := "", c.String("branch")
			if s, err := store.Open(g.CommonDir); err == nil {
				root = s.Root()
				if branch == "" {
					pol, err := policy.Read(s)
					if err != nil {
						return err
					}
					branch = pol.PublicationBranch
				}
			} else if d, ok := decision.As(err); !ok || d.Code != decision.NotInitialized {
				return err
			}
			if branch == "" {
				out, err := g.Git(c.Context, false, "symbolic-ref", "--short", "-q", "HEAD")
				branch = strings.TrimSpace(string(out))
				if err != nil || branch == "" {
					branch = "main"
				}
			}
			res, err := land.Why(c.Context, g, root, branch, commit, shell.Word(g.TopLevel))
			if err != nil {
				return err
			}
			summary := fmt.Sprintf("%s is on %s: ", gitrepo.Short(res.Commit), res.Branch)
			if p := res.Landing; p != nil {
				summary += "task " + p.Task + " landed it"
			} else {
				summary += "no landing of wt's brought it"
			}
			return e.Success(decision.WhyShown, summary, res, nil, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, decision.WhyShown, clikit.Clean(summary))
				printWhy(w, res)
			})
		}),
	}
}

// printWhy writes why's answer, a line a fact.
func printWhy(w io.Writer, res land.WhyResult) {
	line := func(k, v string) { fmt.Fprintf(w, "  %-8s %s\n", k+":", clikit.Clean(v)) }
	line("commit", res.Commit)
	p := res.Landing
	if p == nil {
		line("unseen", res.Unseen)
		line("from", from(res.From))
		return
	}
	task := p.Task
	if p.Branch != "" {
		task += " (branch " + p.Branch + ")"
	}
	line("task", task)
	if wr := p.Writer; wr != nil {
		v := fmt.Sprintf("lease %s", wr.LeaseID)
		if wr.ClientID != "" {
			v += " of client " + wr.ClientID
		}
		v += fmt.Sprintf(" approved %s (%s)", gitrepo.Short(p.Source), wr.Via)
		if wr.At != "" {
			v += " at " + wr.At
		}
		line("writer", v)
	} else {
		line("writer", "no approval of "+gitrepo.Short(p.Source)+" is recorded")
	}
	if p.ReadyBy != "" {
		line("let go", fmt.Sprintf("%s, marked ready by %s at %s", gitrepo.Short(p.Source), p.ReadyBy, p.ReadyAt))
	} else {
		line("let go", gitrepo.Short(p.Source)+", its tip once its writer had let go (not marked ready)")
	}
	landed := fmt.Sprintf("%s onto %s as %s", p.Strategy, gitrepo.Short(p.Onto), gitrepo.Short(p.Result))
	if p.Attempt > 0 {
		landed += fmt.Sprintf(", attempt %d", p.Attempt)
	}
	if p.LandedAt != "" {
		landed += ", at " + p.LandedAt
	}
	if p.Lander != "" {
		landed += fmt.Sprintf(", by the lander of publication lease %s (pid %d)", p.Lander, p.LanderPID)
	}
	if p.AcceptedUngated {
		landed += "; its tip was not one a gate approved (--accept-ungated)"
	}
	line("landed", landed)
	if p.Batch != "" {
		line("batch", fmt.Sprintf("%s: %s, tested together as %s", p.Batch, strings.Join(p.BatchTasks, ", "), gitrepo.Short(p.Tested)))
	}
	switch {
	case p.Test == "":
		line("test", "none (land ran without --test)")
	default:
		v := fmt.Sprintf("%q passed on %s", p.Test, gitrepo.Short(p.Tested))
		if p.TestUnconfined {
			v += ", run unconfined (--test-unconfined)"
		}
		if p.TestLog != "" {
			v += "; output " + p.TestLog
		}
		line("test", v)
	}
	if p.Push != "" {
		line("push", "pushed to "+p.Push+" by the same compare-and-swap")
	}
	line("from", from(res.From))
}

func from(s string) string {
	if s == "notes" {
		return "the notes of " + land.NotesRef + " (no wt store here)"
	}
	return "wt's store (events.jsonl)"
}
