package cli

import (
	"fmt"
	"io"
	"os"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/hooks"
)

// Hook runs wt-hook with args: exit 0 allow, 1 refuse, 2 usage (SPEC §7).
func Hook(args []string, stdout, stderr io.Writer) int {
	return Run("wt-hook", func(e *env) *ucli.App {
		return &ucli.App{
			Usage:     "git hooks that admit commits and pushes only from the live writer",
			UsageText: "wt-hook check [PATH] | run pre-commit | install | uninstall | status",
			Flags:     []ucli.Flag{&ucli.BoolFlag{Name: "json", Usage: "print one JSON object"}},
			Commands: []*ucli.Command{
				{
					Name:      "check",
					Usage:     "would a commit from this process be allowed? print the decision",
					ArgsUsage: "[PATH]",
					Action: e.action("check", 1, func(c *ucli.Context) error {
						dir := c.Args().First()
						if dir == "" {
							dir = "."
						}
						return e.verdict(dir, true)
					}),
				},
				{
					Name:  "run",
					Usage: "run as git's hook HOOK (installed shims call this)",
					Subcommands: []*ucli.Command{
						{
							Name:  "pre-commit",
							Usage: "refuse a commit from a process that is not the worktree's live writer",
							Action: e.action("run pre-commit", 0, func(c *ucli.Context) error {
								// git runs hooks at the top of the worktree.
								return e.verdict(".", false)
							}),
						},
					},
				},
			},
		}
	}, args, stdout, stderr)
}

// verdict decides for this process in dir and reports it: a refusal exits
// 1 (or, under enforcement warn, is printed as a warning); an allowance is
// printed only when show is set (check) or asked for with --json.
func (e *env) verdict(dir string, show bool) error {
	v, err := hooks.Entitled(dir, os.Getpid())
	if err != nil {
		return err
	}
	if !v.Allowed {
		return v.Refusal
	}
	var warnings []string
	if v.Warning {
		warnings = append(warnings, fmt.Sprintf("policy enforcement is warn, so this is allowed; it would be refused: %s: %s (hint: %s)", v.Refusal.Code, v.Refusal.Message, v.Refusal.Hint))
	}
	if !show && !e.json {
		for _, w := range warnings {
			fmt.Fprintf(e.stderr, "%s: warning: %s\n", e.bin, w)
		}
		return nil
	}
	return e.success(v.Code, v.Reason, v, warnings, func(w io.Writer) {
		fmt.Fprintf(w, "%s: %s: %s\n", e.bin, v.Code, v.Reason)
	})
}
