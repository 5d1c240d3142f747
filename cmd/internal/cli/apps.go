package cli

import (
	"io"

	ucli "github.com/urfave/cli/v2"
)

// Apps are the command-line definitions of wt-admin, wt-exec and wt-hook,
// named as their binaries, for generating man pages and shell completions
// (cmd/internal/docs). They write nowhere; running them is not what
// they are for.
func Apps() []*ucli.App {
	mk := func(bin string, build func(*env) *ucli.App) *ucli.App {
		a := build(&env{bin: bin, stdout: io.Discard, stderr: io.Discard})
		a.Name, a.Version, a.HideHelpCommand = bin, Version(), true
		return a
	}
	return []*ucli.App{
		mk("wt-admin", adminApp),
		mk("wt-exec", func(e *env) *ucli.App { return execApp(e, &execOutcome{child: -1}) }),
		mk("wt-hook", hookApp),
	}
}
