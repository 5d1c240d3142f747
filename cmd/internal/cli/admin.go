// Package cli holds the urfave/cli applications of wt-admin and wt-exec,
// one file per command (wt-hook's is cmd/internal/hookcli; what they share
// is cmd/internal/clikit). Actions are a few lines that call into core/,
// wrapper/, hooks/ or install/ and render the result.
package cli

import (
	"io"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/core/alloc"
)

// Admin runs wt-admin with args and returns its exit code.
func Admin(args []string, stdout, stderr io.Writer) int {
	return clikit.Run("wt-admin", AdminApp, args, stdout, stderr)
}

// env is a run of wt-admin or wt-exec: the shared one, with their own
// methods.
type env struct{ *clikit.Env }

// AdminApp is wt-admin's command line (for man pages and completions too).
func AdminApp(k *clikit.Env) *ucli.App { return adminApp(&env{k}) }

func adminApp(e *env) *ucli.App {
	return &ucli.App{
		Usage: "set repositories up, allocate governed worktrees, and show who may write where",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "repo", Aliases: []string{"C"}, Value: ".", Usage: "a directory inside the repository (-C as with git, wt-exec and wt-hook)"},
			clikit.JSONFlag,
		},
		Commands: []*ucli.Command{
			e.initCommand(), e.policyCommand(), e.allocateCommand(), e.statusCommand(), e.psCommand(), e.leaseCommand(),
			e.retainCommand(), e.resumeCommand(), e.recoverCommand(), e.backfillCommand(), e.pruneCommand(), e.finishCommand(), e.auditCommand(), e.fleetCommand(), e.doctorCommand(), e.versionCommand(),
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
