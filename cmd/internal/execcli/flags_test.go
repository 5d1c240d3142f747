package execcli

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wt-tool/wt/cmd/internal/execflags"
	"github.com/wt-tool/wt/cmd/internal/textout"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/wrapper"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		args    []string
		set     []string
		strs    map[string]string
		durs    map[string]time.Duration
		allow   []string
		command []string
	}{
		{args: []string{"--", "true"}, command: []string{"true"}},
		{args: []string{"true", "-C", "x"}, command: []string{"true", "-C", "x"}},
		{args: []string{"-C", "dir", "--", "make", "--", "x"}, set: []string{"C"}, strs: map[string]string{"C": "dir"}, command: []string{"make", "--", "x"}},
		{args: []string{"--C=dir", "-client-id", "-odd", "ls"}, set: []string{"C", "client-id"}, strs: map[string]string{"C": "dir", "client-id": "-odd"}, command: []string{"ls"}},
		{args: []string{"--pty", "--wait=false", "--verbose=1", "--", "x"}, set: []string{"pty", "wait", "verbose"}, strs: map[string]string{"pty": "true", "wait": "false", "verbose": "true"}, command: []string{"x"}},
		{args: []string{"--ttl", "90s", "--grace=2s", "x"}, set: []string{"ttl", "grace"}, durs: map[string]time.Duration{"ttl": 90 * time.Second, "grace": 2 * time.Second}, command: []string{"x"}},
		{args: []string{"--allow-write", "/a", "--allow-write=/b", "x"}, set: []string{"allow-write"}, allow: []string{"/a", "/b"}, command: []string{"x"}},
		{args: []string{"--owner", "a", "--owner", "b", "x"}, set: []string{"owner"}, strs: map[string]string{"owner": "b"}, command: []string{"x"}},
		{args: []string{"-", "x"}, command: []string{"-", "x"}},
		{args: []string{"-h"}, set: []string{"help"}, strs: map[string]string{"help": "true"}, command: []string{}},
		{args: []string{"-v"}, set: []string{"version"}, strs: map[string]string{"version": "true"}, command: []string{}},
	} {
		l, err := Parse(c.args)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.args, err)
			continue
		}
		var set []string
		for _, f := range Flags {
			if l.IsSet(f.Name) {
				set = append(set, f.Name)
			}
		}
		want := slices.Clone(c.set)
		slices.Sort(set)
		slices.Sort(want)
		if !slices.Equal(set, want) {
			t.Errorf("Parse(%q): set %q, want %q", c.args, set, want)
		}
		for k, v := range c.strs {
			if got := l.String(k); got != v {
				t.Errorf("Parse(%q): %s = %q, want %q", c.args, k, got, v)
			}
		}
		for k, v := range c.durs {
			if got := l.Duration(k); got != v {
				t.Errorf("Parse(%q): %s = %s, want %s", c.args, k, got, v)
			}
		}
		if got := l.Strings("allow-write"); !slices.Equal(got, c.allow) {
			t.Errorf("Parse(%q): allow-write %q, want %q", c.args, got, c.allow)
		}
		if !slices.Equal(l.Command, c.command) && !(len(l.Command) == 0 && len(c.command) == 0) {
			t.Errorf("Parse(%q): command %q, want %q", c.args, l.Command, c.command)
		}
	}
}

func TestParseDefaults(t *testing.T) {
	l, err := Parse([]string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	if l.String("kind") != "agent" || l.Duration("grace") != 10*time.Second || l.Duration("ttl") != 0 || l.Bool("pty") || l.IsSet("kind") {
		t.Errorf("defaults: kind %q grace %s ttl %s pty %v kind set %v", l.String("kind"), l.Duration("grace"), l.Duration("ttl"), l.Bool("pty"), l.IsSet("kind"))
	}
}

// TestParseRefuses: every bad command line is a USAGE refusal (exit 2
// through ExitError) that says what is wrong in wt's words.
func TestParseRefuses(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--no-such-flag", "--", "x"}, "there is no flag --no-such-flag"},
		{[]string{"-C"}, "--C needs a value"},
		{[]string{"--ttl", "5", "x"}, `--ttl "5": a duration needs a number and a unit, e.g. 30s, 10m, 1h`},
		{[]string{"--pty=maybe", "x"}, `--pty "maybe": a flag that is on or off takes true or false`},
		{[]string{"---x", "y"}, "bad flag syntax: ---x"},
		{[]string{"-=x", "y"}, "bad flag syntax: -=x"},
		// An on/off flag's would-be value is not taken for the command.
		{[]string{"--confine", "require"}, `--confine takes no value: "require" would run as the command`},
		{[]string{"-C", "w", "--no-confine", "off", "x"}, `--no-confine takes no value: "off"`},
		{[]string{"--wait", "true", "x"}, `--wait takes no value`},
	} {
		_, err := Parse(c.args)
		var xe *textout.ExitError
		if !errors.As(err, &xe) || xe.Code != textout.ExitUsage || decision.CodeOf(err) != decision.Usage || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Parse(%q) = %v, want a USAGE refusal saying %q", c.args, err, c.msg)
		}
	}
}

// TestParseCommandAfterDashes: with "--", a program named require is
// the command the user said; a word after a flag that takes a value is
// that value.
func TestParseCommandAfterDashes(t *testing.T) {
	for _, args := range [][]string{{"--confine", "--", "require"}, {"--agent", "auto", "x"}, {"--confine=true", "require"}, {"require"}} {
		l, err := Parse(args)
		if err != nil {
			t.Errorf("Parse(%q): %v", args, err)
			continue
		}
		if len(l.Command) == 0 {
			t.Errorf("Parse(%q): no command", args)
		}
	}
}

// TestHelpListsEveryFlag: the help names every flag with its placeholder
// and default, and no backquote is left over.
func TestHelpListsEveryFlag(t *testing.T) {
	var b bytes.Buffer
	PrintHelp(&b)
	help := b.String()
	for _, want := range []string{"wt-exec - " + Summary, "-C DIR ", "--client-id ID ", "--kind KIND ", "(default: agent)", "(default: 10s)", "--help, -h ", "--version, -v ", "--allow-write DIR "} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
	for _, f := range Flags {
		if !strings.Contains(help, dashed(f.Name)) {
			t.Errorf("help lacks %s", dashed(f.Name))
		}
	}
	if strings.Contains(help, "`") {
		t.Errorf("help keeps a backquote:\n%s", help)
	}
}

// TestDefaultsAreTheSupervisors: the flag table (which wt-admin's man
// pages read without linking the supervisor) says the supervisor's own
// defaults.
func TestDefaultsAreTheSupervisors(t *testing.T) {
	if execflags.DefaultKind != wrapper.DefaultKind || execflags.DefaultGrace != wrapper.DefaultGrace {
		t.Errorf("execflags says --kind %s --grace %s; wrapper's defaults are %s and %s",
			execflags.DefaultKind, execflags.DefaultGrace, wrapper.DefaultKind, wrapper.DefaultGrace)
	}
}
