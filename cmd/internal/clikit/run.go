// Package clikit is what the urfave/cli command lines of wt-hook and
// wt-admin share: running an app with wt's exit codes, usage errors and
// JSON envelope. Each binary's application is a package of its own
// (cmd/internal/cli for wt-admin, cmd/internal/hookcli for wt-hook,
// cmd/internal/execcli for wt-exec and cmd/internal/gate for wt-gate, which
// link no CLI library), so that a binary links only what it uses: wt-hook,
// which a fenced remote starts at every push, links neither wt-exec's
// supervisor (pty, Landlock) nor wt-admin's maintenance. Those packages,
// textout and this one are the only places that write to stdout and
// stderr. It keeps none of the start-up shortcuts it once had (flag names
// answered from a list, no stat of its own executable, the version read
// only when printed): the commit gate and wt-exec, which they were for, no
// longer link it, and a wt-hook or wt-admin start measured the same
// without them.
package clikit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/textout"
	"github.com/wt-tool/wt/core/decision"
)

// Env is what one run of a binary shares between its commands: the output
// streams, and whether --json was asked for.
type Env struct {
	Bin     string
	Stdout  io.Writer
	Stderr  io.Writer
	JSON    bool
	Command string
	// Dir is the directory the command acts in (--repo, absolute): its
	// hints are anchored there (textout.Anchor). "" is the working
	// directory; NoAnchor leaves hints as written (a server hook's, read
	// by a pushing client).
	Dir string
}

// NoAnchor, as Env.Dir, leaves the hints as written.
const NoAnchor = "\x00"

// UsageErr is a USAGE refusal (exit 2) in the words of its form key.
func UsageErr(key string, args ...any) error {
	return &textout.ExitError{Code: textout.ExitUsage, Err: decision.Say(decision.Usage, key, args...)}
}

// Run runs a binary's app with args (without the program name) and returns
// the process exit code. It owns the mapping from errors to exit codes and
// the one place errors are written.
func Run(bin string, build func(*Env) *ucli.App, args []string, stdout, stderr io.Writer) int {
	e := &Env{Bin: bin, Stdout: textout.Safe(stdout), Stderr: textout.Safe(stderr)}
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" {
			e.JSON = true
		}
	}
	app := build(e)
	app.Name = bin
	app.Version = textout.Version()
	app.Writer, app.ErrWriter = stdout, stderr
	app.HideHelpCommand = true
	app.ExitErrHandler = func(*ucli.Context, error) {} // main owns the exit
	app.OnUsageError = func(c *ucli.Context, err error, _ bool) error { return UsageErr("as-given", flagError(err, app.Flags)) }
	app.CommandNotFound = func(c *ucli.Context, name string) {
		e.Report(UsageErr("unknown-command", name, textout.DidYouMean(name, commandNames(c), ""), bin))
		panic(errReported)
	}
	for _, c := range app.Commands {
		setUsageHandlers(c)
	}
	code := func() (code int) {
		defer func() {
			if r := recover(); r != nil {
				if r != errReported {
					panic(r)
				}
				code = textout.ExitUsage
			}
		}()
		line, err := reorder(app, args)
		if err != nil {
			return e.Report(err)
		}
		err = app.Run(append([]string{bin}, line...))
		if err == nil {
			return textout.ExitOK
		}
		return e.Report(err)
	}()
	return code
}

var errReported = errors.New("reported")

// commandNames are the names of the commands c's command line may name
// next: its command's subcommands, or the app's commands.
func commandNames(c *ucli.Context) []string {
	cmds := c.App.Commands
	if c.Command != nil && len(c.Command.Subcommands) > 0 {
		cmds = c.Command.Subcommands
	}
	var names []string
	for _, cmd := range cmds {
		names = append(names, cmd.Names()...)
	}
	return names
}

func setUsageHandlers(c *ucli.Command) {
	c.OnUsageError = func(_ *ucli.Context, err error, _ bool) error { return UsageErr("as-given", flagError(err, c.Flags)) }
	for _, s := range c.Subcommands {
		setUsageHandlers(s)
	}
}

// Report writes err once (as a JSON envelope with --json, else two lines on
// stderr) and returns the exit code for it.
func (e *Env) Report(err error) int {
	code, d, reported := textout.Decide(err, e.Bin, e.Command)
	if reported {
		return code
	}
	if e.Dir != NoAnchor {
		d = textout.Anchored(d, cmp.Or(e.Dir, textout.WorkDir()))
	}
	if e.JSON {
		e.WriteJSON(textout.ErrorEnvelope(e.Command, d))
		return code
	}
	textout.Print(e.Stderr, e.Bin, code, d)
	return code
}

// WriteJSON writes v to stdout, indented.
func (e *Env) WriteJSON(v any) { textout.WriteJSON(e.Stdout, v, "  ") }

// Success prints a decision: the envelope with --json, else human text.
func (e *Env) Success(code, reason string, result any, warnings []string, human func(w io.Writer)) error {
	if warnings == nil {
		warnings = []string{}
	}
	if e.JSON {
		env, err := textout.DecisionEnvelope(e.Command, code, reason, result, warnings)
		if err != nil {
			return err
		}
		e.WriteJSON(env)
		return nil
	}
	human(e.Stdout)
	for _, w := range warnings {
		fmt.Fprintf(e.Stderr, "%s: warning: %s\n", e.Bin, Clean(w))
	}
	return nil
}

// reorder moves flags that follow positional arguments in front of them, for
// the command the arguments select, so that `retain PATH --owner NAME` works
// as docs/design.md writes it, and the app's own flags given after the
// command (`status --repo DIR`) in front of the command. urfave/cli v2
// stops at the first positional argument. Everything after "--" is left
// alone. A flag that takes a value and is given last, with none, is a
// usage error: urfave/cli would take the next word (the "--" this inserts)
// for its value.
//
// An app without commands (wt-exec) is left alone: what follows its first
// positional argument is the command line it runs.
func reorder(app *ucli.App, args []string) ([]string, error) {
	if len(app.Commands) == 0 {
		return args, nil
	}
	flags, cmds := app.Flags, app.Commands
	var out []string
	i, start := 0, -1 // start: where the command path begins in out
	// Global flags and the command path.
	for i < len(args) {
		a := args[i]
		if a == "--" {
			return args, nil
		}
		if strings.HasPrefix(a, "-") {
			out = append(out, a)
			if takesValue(flags, a) && i+1 >= len(args) {
				return nil, UsageErr("needs-value", a)
			}
			if takesValue(flags, a) && i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
			i++
			continue
		}
		var found *ucli.Command
		for _, c := range cmds {
			if c.HasName(a) {
				found = c
			}
		}
		if found == nil {
			break
		}
		if start < 0 {
			start = len(out)
		}
		out = append(out, a)
		i++
		flags, cmds = found.Flags, found.Subcommands
		if len(cmds) == 0 {
			break
		}
	}
	var global, fl, pos []string
	for i < len(args) {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i:]...)
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			dst, of := &fl, flags
			if !defines(flags, a) && defines(app.Flags, a) {
				dst, of = &global, app.Flags
			}
			*dst = append(*dst, a)
			if takesValue(of, a) {
				if i+1 >= len(args) {
					return nil, UsageErr("needs-value", a)
				}
				*dst = append(*dst, args[i+1])
				i++
			}
		} else {
			pos = append(pos, a)
		}
		i++
	}
	// The app's flags go before the command path.
	if start >= 0 && len(global) > 0 {
		out = append(append(slices.Clone(out[:start]), global...), out[start:]...)
	}
	out = append(out, fl...)
	if len(pos) > 0 && pos[0] != "--" {
		out = append(out, "--")
	}
	return append(out, pos...), nil
}

// defines reports whether one of flags is named by arg (-x, --x, --x=v).
func defines(flags []ucli.Flag, arg string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return true
		}
	}
	return false
}

func takesValue(flags []ucli.Flag, arg string) bool {
	if strings.Contains(arg, "=") {
		return false
	}
	name := strings.TrimLeft(arg, "-")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				v, ok := f.(ucli.DocGenerationFlag)
				return !ok || v.TakesValue()
			}
		}
	}
	return false
}

// flagError says a flag error of the command-line library in wt's words:
// flags with the two dashes they are typed with, and what a value needs.
func flagError(err error, flags []ucli.Flag) string {
	// Compiled here, on the error path: no start of wt pays for them.
	undefinedFlag := regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)
	invalidFlag := regexp.MustCompile(`^invalid value "(.*)" for flag -+([^:]+): (.*)$`)
	msg := err.Error()
	if m := undefinedFlag.FindStringSubmatch(msg); m != nil {
		var names []string
		for _, f := range flags {
			names = append(names, f.Names()...)
		}
		return "there is no flag --" + m[1] + textout.DidYouMean(m[1], names, "--")
	}
	if m := invalidFlag.FindStringSubmatch(msg); m != nil {
		why := m[3]
		if strings.Contains(why, "parse error") || strings.Contains(why, "time: ") {
			why = "a duration needs a number and a unit, e.g. 30s, 10m, 1h"
		}
		return fmt.Sprintf("--%s %q: %s", m[2], m[1], why)
	}
	return msg
}

// JSONFlag is every command's --json.
var JSONFlag = &ucli.BoolFlag{Name: "json", Usage: "print exactly one JSON object"}

// Action wraps a command body: it records the command name for the JSON
// envelope and refuses stray positional arguments.
func (e *Env) Action(name string, maxArgs int, body func(c *ucli.Context) error) ucli.ActionFunc {
	return func(c *ucli.Context) error {
		e.Command = name
		for _, l := range c.Lineage() {
			if l.IsSet("repo") {
				if abs, err := filepath.Abs(l.String("repo")); err == nil {
					e.Dir = abs
				}
				break
			}
		}
		if c.Args().Len() > maxArgs {
			return UsageErr("takes-most", name, maxArgs, c.Args().Slice())
		}
		if c.Context == nil {
			c.Context = context.Background()
		}
		return body(c)
	}
}
