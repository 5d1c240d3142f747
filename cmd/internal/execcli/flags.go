package execcli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wt-tool/wt/cmd/internal/execflags"
	"github.com/wt-tool/wt/cmd/internal/textout"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/shell"
)

// wt-exec's flags are data of their own (cmd/internal/execflags), which
// wt-admin's man pages read without linking the supervisor.
type (
	Kind = execflags.Kind
	Flag = execflags.Flag
)

// Flag kinds.
const (
	String      = execflags.String
	Bool        = execflags.Bool
	Duration    = execflags.Duration
	StringSlice = execflags.StringSlice
)

// Flags are wt-exec's flags, in the order its help lists them.
var Flags = execflags.Flags

// Usage is wt-exec's one-line description and its synopsis.
const (
	Summary  = execflags.Summary
	Synopsis = execflags.Synopsis
)

// Line is a parsed command line: the flags given (by their first name)
// and the command that follows them.
type Line struct {
	set     map[string]bool
	strs    map[string]string
	lists   map[string][]string
	durs    map[string]time.Duration
	Command []string
}

// IsSet reports whether the flag name was given.
func (l *Line) IsSet(name string) bool { return l.set[name] }

// String is a String flag's value, or its default.
func (l *Line) String(name string) string {
	if v, ok := l.strs[name]; ok {
		return v
	}
	return flagNamed(name).Default
}

// Bool is whether a Bool flag is on.
func (l *Line) Bool(name string) bool { return l.strs[name] == "true" }

// Duration is a Duration flag's value, or its default.
func (l *Line) Duration(name string) time.Duration {
	if d, ok := l.durs[name]; ok {
		return d
	}
	d, _ := time.ParseDuration(flagNamed(name).Default) // "" is 0
	return d
}

// Strings is every value a StringSlice flag was given, in order.
func (l *Line) Strings(name string) []string { return l.lists[name] }

func flagNamed(name string) *Flag {
	for i := range Flags {
		if Flags[i].Name == name {
			return &Flags[i]
		}
		for _, a := range Flags[i].Aliases {
			if a == name {
				return &Flags[i]
			}
		}
	}
	return nil
}

// Parse reads wt-exec's command line with the standard flag package, as
// urfave/cli reads one (it uses flag too): a flag is -NAME or --NAME; a
// value follows as the next argument or after "=" (a bool takes only
// "="); flags end at "--" or at the first argument that is not a flag,
// which begins the command. A flag given twice keeps its last value
// (allow-write keeps all). Errors are USAGE refusals in wt's words.
func Parse(args []string) (*Line, error) {
	l := &Line{set: map[string]bool{}, strs: map[string]string{}, lists: map[string][]string{}, durs: map[string]time.Duration{}}
	fs := flag.NewFlagSet(Bin, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	for i := range Flags {
		f := &Flags[i]
		v := &lineValue{l: l, f: f}
		for _, name := range append([]string{f.Name}, f.Aliases...) {
			fs.Var(v, name, "")
		}
	}
	if err := fs.Parse(args); err != nil {
		return nil, parseError(err)
	}
	l.Command = fs.Args()
	if err := valueAsCommand(args, l.Command); err != nil {
		return nil, err
	}
	return l, nil
}

// valueAsCommand refuses a command line where what reads as an on/off
// flag's value was taken for the command: `--confine require` would run
// a program named require. With "--" before it, the command is what the
// user said.
func valueAsCommand(args, command []string) error {
	start := len(args) - len(command)
	if len(command) == 0 || start == 0 || args[start-1] == "--" {
		return nil
	}
	prev := strings.TrimLeft(args[start-1], "-")
	f := flagNamed(prev)
	if f == nil || f.Kind != Bool || strings.Contains(prev, "=") {
		return nil
	}
	switch command[0] {
	case "auto", "require", "on", "off", "true", "false", "yes", "no":
	default:
		return nil
	}
	d := decision.Say(decision.Usage, "takes-no", prev, command[0])
	exec, repo := "wt-exec", "REPO"
	if dir := dirOf(args[:start]); dir != "" {
		abs, err := filepath.Abs(dir)
		if err == nil {
			dir = abs
		}
		exec += " -C " + shell.Word(dir)
		repo = shell.Word(dir)
	}
	if prev == "confine" || prev == "no-confine" {
		d = d.WithHint("%s --%s -- COMMAND for this run; wt-admin --repo %s policy --confine require for every run", exec, prev, repo)
	} else {
		d = d.WithHint("%s --%s -- COMMAND; to run a program named %s, put -- before it", exec, prev, command[0])
	}
	return &textout.ExitError{Code: textout.ExitUsage, Err: d}
}

// dirOf is the last -C value in flags ("" for none).
func dirOf(flags []string) string {
	dir := ""
	for i, a := range flags {
		switch {
		case (a == "-C" || a == "--C") && i+1 < len(flags):
			dir = flags[i+1]
		case strings.HasPrefix(a, "-C="), strings.HasPrefix(a, "--C="):
			_, dir, _ = strings.Cut(a, "=")
		}
	}
	return dir
}

// lineValue is a flag.Value that records one of Flags into a Line.
type lineValue struct {
	l *Line
	f *Flag
}

func (v *lineValue) String() string { return "" }

// IsBoolFlag makes the flag package take a Bool flag without a value.
func (v *lineValue) IsBoolFlag() bool { return v.f.Kind == Bool }

func (v *lineValue) Set(value string) error {
	switch v.f.Kind {
	case Bool:
		b, err := strconv.ParseBool(value)
		if err != nil {
			return errOnOff
		}
		value = strconv.FormatBool(b)
	case Duration:
		d, err := time.ParseDuration(value)
		if err != nil {
			return errDuration
		}
		v.l.durs[v.f.Name] = d
	case StringSlice:
		v.l.lists[v.f.Name] = append(v.l.lists[v.f.Name], value)
	}
	v.l.strs[v.f.Name] = value
	v.l.set[v.f.Name] = true
	return nil
}

var (
	errOnOff    = errors.New("a flag that is on or off takes true or false")
	errDuration = errors.New("a duration needs a number and a unit, e.g. 30s, 10m, 1h")
)

// parseError says an error of the flag package in wt's words: flags with
// the two dashes they are typed with, and what a value needs. (No regexp:
// wt-exec does not link it, for its start's sake.)
func parseError(err error) error {
	msg := err.Error()
	dashless := func(s string) string { return strings.TrimLeft(s, "-") }
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		name = dashless(name)
		var names []string
		for _, f := range Flags {
			names = append(names, f.Name)
		}
		return usageErr("there-no", name, textout.DidYouMean(name, names, "--"))
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return usageErr("needs-value-2", dashless(name))
	}
	if rest, ok := strings.CutPrefix(msg, "bad flag syntax: "); ok {
		return usageErr("bad-flag", rest)
	}
	// invalid [boolean ]value "V" for [flag ]-NAME: WHY
	if rest, ok := strings.CutPrefix(strings.Replace(msg, "invalid boolean value ", "invalid value ", 1), "invalid value "); ok {
		if value, err := strconv.QuotedPrefix(rest); err == nil {
			v, _ := strconv.Unquote(value)
			rest = strings.TrimPrefix(strings.TrimPrefix(rest[len(value):], " for "), "flag ")
			if name, why, ok := strings.Cut(rest, ": "); ok {
				return usageErr("as-given-2", dashless(name), v, why)
			}
		}
	}
	return usageErr("as-given", msg)
}

func usageErr(key string, args ...any) error {
	return &textout.ExitError{Code: textout.ExitUsage, Err: decision.Say(decision.Usage, key, args...)}
}

// placeholder splits a usage text into its value's placeholder (the
// backquoted word, else VALUE for a flag that takes one) and the text
// without the backquotes, as urfave/cli does for the man pages.
func placeholder(f Flag) (name, usage string) {
	usage = f.Usage
	if i := strings.IndexByte(usage, '`'); i >= 0 {
		if j := strings.IndexByte(usage[i+1:], '`'); j >= 0 {
			name = usage[i+1 : i+1+j]
			usage = usage[:i] + name + usage[i+2+j:]
		}
	}
	if name == "" && f.Kind != Bool {
		name = "value"
	}
	return name, usage
}

// PrintHelp writes wt-exec's help.
func PrintHelp(w io.Writer) {
	fmt.Fprintf(w, "NAME:\n   wt-exec - %s\n\nUSAGE:\n   %s\n\nVERSION:\n   %s\n\nGLOBAL OPTIONS:\n", Summary, strings.ReplaceAll(Synopsis, "\n", "\n   "), textout.Version())
	rows := make([][2]string, 0, len(Flags))
	width := 0
	for _, f := range Flags {
		ph, usage := placeholder(f)
		left := dashed(f.Name)
		for _, a := range f.Aliases {
			left += ", " + dashed(a)
		}
		if ph != "" {
			left += " " + ph
		}
		if f.Default != "" {
			usage += fmt.Sprintf(" (default: %s)", f.Default)
		}
		if f.Kind == StringSlice {
			usage += " [ --" + f.Name + " " + ph + " ]"
		}
		rows = append(rows, [2]string{left, usage})
		width = max(width, len(left))
	}
	for _, r := range rows {
		fmt.Fprintf(w, "   %-*s  %s\n", width, r[0], r[1])
	}
}

// dashed is a flag name as it is typed: -C, --client-id.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
