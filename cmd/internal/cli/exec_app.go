package cli

import (
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/cmd/internal/execflags"
)

// ExecApp is wt-exec's command line as urfave/cli reads it, made from
// execcli's table of its flags, for the man pages and completions only:
// wt-exec itself parses with execcli and links no command-line library.
func ExecApp(*clikit.Env) *ucli.App {
	flags := make([]ucli.Flag, 0, len(execflags.Flags))
	for _, f := range execflags.Flags {
		if f.Name == "help" || f.Name == "version" {
			continue // urfave/cli adds its own
		}
		switch f.Kind {
		case execflags.String:
			flags = append(flags, &ucli.StringFlag{Name: f.Name, Aliases: f.Aliases, Usage: f.Usage, Value: f.Default})
		case execflags.Bool:
			flags = append(flags, &ucli.BoolFlag{Name: f.Name, Aliases: f.Aliases, Usage: f.Usage})
		case execflags.Duration:
			d, _ := time.ParseDuration(f.Default) // "" is none
			flags = append(flags, &ucli.DurationFlag{Name: f.Name, Aliases: f.Aliases, Usage: f.Usage, Value: d})
		case execflags.StringSlice:
			flags = append(flags, &ucli.StringSliceFlag{Name: f.Name, Aliases: f.Aliases, Usage: f.Usage})
		}
	}
	return &ucli.App{Usage: execflags.Summary, UsageText: execflags.Synopsis, Flags: flags}
}
