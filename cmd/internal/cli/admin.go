package cli

import (
	"context"
	"io"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/core/alloc"
)

// Admin runs wt-admin with args and returns its exit code.
func Admin(args []string, stdout, stderr io.Writer) int {
	return Run("wt-admin", adminApp, args, stdout, stderr)
}

var jsonFlag = &ucli.BoolFlag{Name: "json", Usage: "print exactly one JSON object"}

func adminApp(e *env) *ucli.App {
	return &ucli.App{
		Usage: "set repositories up, allocate governed worktrees, and show who may write where",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "repo", Value: ".", Usage: "a directory inside the repository"},
			jsonFlag,
		},
		Commands: []*ucli.Command{
			e.initCommand(), e.policyCommand(), e.allocateCommand(), e.statusCommand(), e.psCommand(), e.leaseCommand(),
			e.retainCommand(), e.resumeCommand(), e.recoverCommand(), e.backfillCommand(), e.pruneCommand(), e.finishCommand(), e.fleetCommand(), e.doctorCommand(), e.versionCommand(),
		},
	}
}

// open opens the governed repository named by --repo.
func (e *env) open(c *ucli.Context) (*alloc.Repo, error) {
	return alloc.Open(c.Context, repoDir(c))
}

func repoDir(c *ucli.Context) string {
	for _, l := range c.Lineage() {
		if l.IsSet("repo") {
			return l.String("repo")
		}
	}
	return "."
}

// action wraps a command body: it records the command name for the JSON
// envelope and refuses stray positional arguments.
func (e *env) action(name string, maxArgs int, body func(c *ucli.Context) error) ucli.ActionFunc {
	return func(c *ucli.Context) error {
		e.command = name
		if c.Args().Len() > maxArgs {
			return usageErr("%s takes at most %d argument(s), got %q", name, maxArgs, c.Args().Slice())
		}
		if c.Context == nil {
			c.Context = context.Background()
		}
		return body(c)
	}
}

func optString(c *ucli.Context, name string) *string {
	if !c.IsSet(name) {
		return nil
	}
	v := c.String(name)
	return &v
}

func optInt(c *ucli.Context, name string) *int {
	if !c.IsSet(name) {
		return nil
	}
	v := c.Int(name)
	return &v
}
