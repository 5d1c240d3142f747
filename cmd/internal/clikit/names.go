package clikit

import (
	ucli "github.com/urfave/cli/v2"
)

// urfave/cli asks a flag for its names through Flag.Names, which runs every
// name through a regular expression, and it asks often: before each
// command runs, it looks up every flag of the command by every name, and
// each lookup walks the flags asking each for its names again. For
// wt-exec's 25 flags that was some 600 regexp replacements, a tenth of its
// own time at every start. The flags of a running app are wrapped so that
// Names answers from a list made once; everything else a flag does is the
// wrapped flag's own (help, parsing, defaults). The apps the docs generator
// reads are not wrapped.

type stringFlag struct {
	*ucli.StringFlag
	names []string
}

func (f stringFlag) Names() []string { return f.names }

type boolFlag struct {
	*ucli.BoolFlag
	names []string
}

func (f boolFlag) Names() []string { return f.names }

type durationFlag struct {
	*ucli.DurationFlag
	names []string
}

func (f durationFlag) Names() []string { return f.names }

type intFlag struct {
	*ucli.IntFlag
	names []string
}

func (f intFlag) Names() []string { return f.names }

type stringSliceFlag struct {
	*ucli.StringSliceFlag
	names []string
}

func (f stringSliceFlag) Names() []string { return f.names }

// fastNames wraps flags (see above); a flag of another type is kept as it is.
func fastNames(flags []ucli.Flag) []ucli.Flag {
	out := make([]ucli.Flag, len(flags))
	for i, f := range flags {
		switch t := f.(type) {
		case *ucli.StringFlag:
			out[i] = stringFlag{t, t.Names()}
		case *ucli.BoolFlag:
			out[i] = boolFlag{t, t.Names()}
		case *ucli.DurationFlag:
			out[i] = durationFlag{t, t.Names()}
		case *ucli.IntFlag:
			out[i] = intFlag{t, t.Names()}
		case *ucli.StringSliceFlag:
			out[i] = stringSliceFlag{t, t.Names()}
		default:
			out[i] = f
		}
	}
	return out
}

// fastCommandNames wraps the flags of cmds and of their subcommands.
func fastCommandNames(cmds []*ucli.Command) {
	for _, c := range cmds {
		c.Flags = fastNames(c.Flags)
		fastCommandNames(c.Subcommands)
	}
}
