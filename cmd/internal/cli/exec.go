package cli

import (
	"io"

	ucli "github.com/urfave/cli/v2"
)

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
