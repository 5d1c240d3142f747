package cli

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/cmd/internal/execflags"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/land"
	"github.com/wt-tool/wt/core/shell"
)

func (e *env) landCommand() *ucli.Command {
	return &ucli.Command{
		Name: "land",
		Usage: "land tasks on the publication branch, holding the publication lease: the queue integrated in order in wt's " +
			"integration worktree, tested there in batches (a failing batch split until its failing tasks are found), and each passing batch moved by compare-and-swap from the tip it integrated onto",
		Flags: []ucli.Flag{clikit.JSONFlag,
			&ucli.StringSliceFlag{Name: "task", Usage: "a task to land (repeat it: they land in this order)"},
			&ucli.BoolFlag{Name: "ready", Usage: "land every task of the ready queue (wt-admin ready), in the order they became ready"},
			&ucli.BoolFlag{Name: "recover", Usage: "land nothing: take a dead lander's publication lease over and conclude its landings (what doctor names)"},
			&ucli.StringFlag{Name: "test", Usage: "a shell `COMMAND` each integrated result must pass, run in the integration worktree with no authority (wt-exec --sandbox)"},
			&ucli.BoolFlag{Name: "test-unconfined", Usage: "where the kernel cannot give the test its sandbox, run it unconfined, with the lander's authority (said, and recorded), instead of refusing (LAND_TEST_UNCONFINED)"},
			&ucli.BoolFlag{Name: "accept-ungated", Usage: "land a task whose tip no gate approved (moved with hooks off, rewritten), recorded as such, instead of refusing (LAND_UNGATED)"},
			&ucli.IntFlag{Name: "batch", Usage: "land at most `N` tasks by one move of the publication branch, tested once together; a failing batch is split until the failing tasks are found (0: the whole queue; 1: one task at a time)"},
			&ucli.IntFlag{Name: "jobs", Usage: "run at most `J` tests at once, each in an integration worktree of its own: the next batches, or the halves a failure would test next (0: the machine's CPUs)"},
			&ucli.StringFlag{Name: "strategy", Value: land.Rebase, Usage: "rebase (the task's commits replayed), merge (a merge commit) or squash (one commit)"},
			&ucli.BoolFlag{Name: "wait", Usage: "wait for each task's writer to let go, instead of refusing (WRITER_LEASE_HELD)"},
			&ucli.BoolFlag{Name: "no-wait", Usage: "refuse (PUBLICATION_LEASE_HELD) when another lander holds the publication lease, instead of waiting in line"},
			&ucli.DurationFlag{Name: "timeout", Usage: "the longest each wait lasts, in line for the publication lease or (--wait) for a writer (LAND_WAIT_TIMEOUT)"},
			&ucli.StringFlag{Name: "push", Usage: "publish each landing to `REMOTE` too, by the same compare-and-swap (--force-with-lease), before the local branch moves"},
		},
		Action: e.Action("land", 0, func(c *ucli.Context) error {
			r, err := e.open(c)
			if err != nil {
				return err
			}
			execBin, err := siblingBinary(execflags.Bin)
			if err != nil && c.IsSet("test") {
				return err
			}
			opts := land.Options{Tasks: c.StringSlice("task"), Ready: c.Bool("ready"), Recover: c.Bool("recover"), Test: c.String("test"), ExecBin: execBin,
				Strategy: c.String("strategy"), Wait: c.Bool("wait"), NoWait: c.Bool("no-wait"), Timeout: c.Duration("timeout"), Push: c.String("push"),
				TestUnconfined: c.Bool("test-unconfined"), AcceptUngated: c.Bool("accept-ungated"), Batch: c.Int("batch"), Jobs: c.Int("jobs"),
				RepoArg: shell.Word(r.Git.TopLevel), Stderr: e.Stderr}
			if !e.JSON {
				opts.Notify = func(line string) { fmt.Fprintf(e.Stderr, "%s: land: %s\n", e.Bin, clikit.Clean(line)) }
			}
			res, err := land.Land(c.Context, r, opts)
			if err != nil {
				return err
			}
			if f := res.Failed(); f != nil {
				if !e.JSON {
					printLanding(e.Stdout, res)
				}
				return decision.Relay(f.Code, landSummary(res)).
					WithHint("%s", landHints(r.Git.TopLevel, res)).
					WithFact("tasks", res.Tasks).WithFact("tip", res.Tip).WithFact("test_runs", res.TestRuns)
			}
			return e.Success(res.Code, landSummary(res), res, nil, func(w io.Writer) {
				if len(res.Tasks) > 0 {
					printLanding(w, res)
				}
				fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, res.Code, clikit.Clean(landSummary(res)))
			})
		}),
	}
}

// landSummary says in one line what a land run did.
func landSummary(res land.Result) string {
	if res.Code == decision.LandRecovered {
		return fmt.Sprintf("%s is at %s; the publication lease is free; %d landing(s) of a dead lander concluded", res.Branch, gitrepo.Short(res.Tip), len(res.Recovered))
	}
	if len(res.Tasks) == 0 {
		return "the ready queue is empty: nothing to land"
	}
	var landed, not []string
	for _, t := range res.Tasks {
		if t.Code == decision.Landed || t.Code == decision.AlreadyLanded {
			landed = append(landed, t.Task)
		} else {
			not = append(not, t.Task+" ("+t.Code+")")
		}
	}
	s := fmt.Sprintf("%s is at %s", res.Branch, gitrepo.Short(res.Tip))
	if len(landed) > 0 {
		s += "; landed: " + strings.Join(landed, ", ")
	}
	if len(not) > 0 {
		s += "; not landed: " + strings.Join(not, ", ")
	}
	return s
}

// landHints is the next step for each task that did not land: the one's
// alone, or each after its task and code.
func landHints(top string, res land.Result) string {
	var failed []land.TaskResult
	for _, t := range res.Tasks {
		if t.Code != decision.Landed && t.Code != decision.AlreadyLanded {
			failed = append(failed, t)
		}
	}
	if len(failed) == 1 {
		return landHint(top, res.Branch, failed[0])
	}
	hints := make([]string, len(failed))
	for i, t := range failed {
		hints[i] = fmt.Sprintf("%s (%s): %s", t.Task, t.Code, landHint(top, res.Branch, t))
	}
	return strings.Join(hints, "; ")
}

// landHint is the next step for a task that did not land, whose
// publication branch is branch.
func landHint(top, branch string, t land.TaskResult) string {
	repo := shell.Word(top)
	switch t.Code {
	case decision.LandConflict, decision.LandTestFailed:
		if t.AttemptRef == "" { // the branch moved under it at every try
			return fmt.Sprintf("land it again when the branch is quiet: wt-admin --repo %s land --task %s", repo, shell.Word(t.Task))
		}
		return land.HandBackHint(repo, branch, t.Worktree, t.Task, t.Owner, t.Code, t.AttemptRef, t.TestLog)
	case decision.LandPushRejected:
		return fmt.Sprintf("land it again, onto the remote's tip: wt-admin --repo %s land --task %s --push REMOTE", repo, shell.Word(t.Task))
	case decision.WriterLeaseHeld:
		return fmt.Sprintf("wait for its writer: wt-admin --repo %s land --wait --task %s", repo, shell.Word(t.Task))
	case decision.LandTipMoved:
		return fmt.Sprintf("what lands is the commit marked ready; mark the new tip: wt-admin --repo %s ready %s --owner %s", repo, shell.Word(t.Task), shell.Word(t.Owner))
	case decision.LandUngated:
		return fmt.Sprintf("see how its branch moved: wt-admin --repo %s audit (its restore command puts it back); to land it as it is: wt-admin --repo %s land --accept-ungated --task %s", repo, repo, shell.Word(t.Task))
	}
	return fmt.Sprintf("see the tasks: wt-admin --repo %s status", repo)
}

// printLanding writes a land run as a table, one row a task.
func printLanding(w io.Writer, res land.Result) {
	for _, r := range res.Recovered {
		fmt.Fprintf(w, "recovered: %s\n", clikit.Clean(r))
	}
	t := clikit.Table(w)
	fmt.Fprintln(t, "TASK\tCODE\tRESULT\tDETAIL")
	for _, r := range res.Tasks {
		detail := r.Message
		switch {
		case len(r.Paths) > 0:
			detail = "conflicts: " + strings.Join(r.Paths, ", ") + "; attempt " + r.AttemptRef
		case r.TestLog != "":
			detail = fmt.Sprintf("test exit %d, output %s; attempt %s", r.TestExit, r.TestLog, r.AttemptRef)
		}
		if r.TestUnconfined {
			detail += " (tested unconfined)"
		}
		if r.AcceptedUngated {
			detail += " (an ungated tip, accepted)"
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\n", clikit.Clean(r.Task), r.Code, clikit.Dash(gitrepo.Short(r.Result)), clikit.Clean(detail))
	}
	t.Flush()
}

func (e *env) readyCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "ready",
		Usage:     "put a task in the ready queue that land --ready lands (its owner, or its writer from inside its run)",
		ArgsUsage: "TASK",
		Flags: []ucli.Flag{clikit.JSONFlag,
			&ucli.StringFlag{Name: "owner", Usage: "the task's owner (leave it out inside the task's wt-exec run: its writer marks it)"},
			&ucli.StringFlag{Name: "strategy", Usage: "how this task is to be integrated: rebase, merge or squash (default: land's --strategy)"},
		},
		Action: e.Action("ready", 1, func(c *ucli.Context) error {
			task := c.Args().First()
			if task == "" {
				return clikit.UsageErr("ready-needs")
			}
			r, err := e.open(c)
			if err != nil {
				return err
			}
			res, err := land.MarkReady(r, task, c.String("owner"), c.String("strategy"), shell.Word(r.Git.TopLevel))
			if err != nil {
				return err
			}
			reason := fmt.Sprintf("task %s is ready to land (queue position %d, marked by %s)", task, res.Position, res.Landing.ReadyBy)
			return e.Success(res.Code, reason, res, nil, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, res.Code, clikit.Clean(reason))
			})
		}),
	}
}

// siblingBinary is wt's binary name beside this one (as installed), else
// on PATH.
func siblingBinary(name string) (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", decision.Say(decision.CommandNotFound, "neither-beside", name).
			WithHint("install wt's binaries together (make install), or put %s on PATH", name)
	}
	return p, nil
}
