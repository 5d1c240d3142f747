package cli

import (
	"io"

	ucli "github.com/urfave/cli/v2"
)

// Exec runs wt-exec with args. Until the writer-lease issue lands it only
// describes itself; running a command is refused with exit 125.
func Exec(args []string, stdout, stderr io.Writer) int {
	code := Run("wt-exec", func(e *env) *ucli.App {
		return &ucli.App{
			Usage:     "run a command as the live writer of a governed worktree",
			UsageText: "wt-exec [-C DIR] [--client-id ID] [--holder SELECTOR] [--ttl D] [--grace D] [--pty|--no-pty] -- COMMAND [ARG...]",
			Action: func(c *ucli.Context) error {
				return usageErr("running commands under a writer lease is not built yet")
			},
		}
	}, args, stdout, stderr)
	if code == ExitUsage {
		return 125 // wt-exec refuses before a child starts with 125 (SPEC §6.7)
	}
	return code
}

// Hook runs wt-hook with args. Until the hook issue lands it only describes
// itself.
func Hook(args []string, stdout, stderr io.Writer) int {
	return Run("wt-hook", func(e *env) *ucli.App {
		return &ucli.App{
			Usage:     "git hooks that admit commits and pushes only from the live writer",
			UsageText: "wt-hook install|uninstall|status|run HOOK|check [PATH]",
			Action: func(c *ucli.Context) error {
				return usageErr("hook commands are not built yet")
			},
		}
	}, args, stdout, stderr)
}
