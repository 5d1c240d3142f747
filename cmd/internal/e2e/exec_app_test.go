package e2e

import (
	"io"
	"slices"
	"testing"

	"github.com/wt-tool/wt/cmd/internal/cli"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/execcli"
)

// TestExecAppAgreesWithParse: wt-exec parses its command line itself
// (execcli), and the man pages and completions are made from ExecApp, the
// same table read by urfave/cli. Both read every line here alike: the same
// flags given, the same values, the same command, and the same lines
// refused.
func TestExecAppAgreesWithParse(t *testing.T) {
	lines := [][]string{
		{"--", "true"},
		{"true", "-C", "x"},
		{"-C", "dir", "--", "make", "--", "x"},
		{"--C=dir", "-client-id", "-odd", "ls"},
		{"--pty", "--wait=false", "--verbose=1", "--", "x"},
		{"--ttl", "90s", "--grace=2s", "x"},
		{"--allow-write", "/a", "--allow-write=/b", "x"},
		{"--owner", "a", "--owner", "b", "x"},
		{"--task", "T-1", "--base", "main", "--path", "p", "--json", "fd:3", "--explain", "--confine", "--no-confine", "--no-pty", "--kind", "test", "--timeout", "1m", "--holder", "self", "--session-id", "s", "--run-id", "r", "x"},
		{"-", "x"},
		{"--no-such-flag", "--", "x"},
		{"-C"},
		{"--ttl", "5", "x"},
		{"--pty=maybe", "x"},
		{"---x", "y"},
	}
	for _, args := range lines {
		l, perr := execcli.Parse(args)
		app := cli.ExecApp(nil)
		app.Name, app.Writer, app.ErrWriter = "wt-exec", io.Discard, io.Discard
		app.ExitErrHandler = func(*ucli.Context, error) {}
		var c *ucli.Context
		app.Action = func(ctx *ucli.Context) error { c = ctx; return nil }
		uerr := app.Run(append([]string{"wt-exec"}, args...))
		if (perr != nil) != (uerr != nil) {
			t.Errorf("%q: execcli says %v, urfave/cli says %v", args, perr, uerr)
			continue
		}
		if perr != nil {
			continue
		}
		for _, f := range execcli.Flags {
			if f.Name == "help" || f.Name == "version" {
				continue
			}
			n := f.Name
			if l.IsSet(n) != c.IsSet(n) {
				t.Errorf("%q: --%s given: execcli %v, urfave/cli %v", args, n, l.IsSet(n), c.IsSet(n))
			}
			switch f.Kind {
			case execcli.String:
				if l.String(n) != c.String(n) {
					t.Errorf("%q: --%s: execcli %q, urfave/cli %q", args, n, l.String(n), c.String(n))
				}
			case execcli.Bool:
				if l.Bool(n) != c.Bool(n) {
					t.Errorf("%q: --%s: execcli %v, urfave/cli %v", args, n, l.Bool(n), c.Bool(n))
				}
			case execcli.Duration:
				if l.Duration(n) != c.Duration(n) {
					t.Errorf("%q: --%s: execcli %s, urfave/cli %s", args, n, l.Duration(n), c.Duration(n))
				}
			case execcli.StringSlice:
				if !slices.Equal(l.Strings(n), c.StringSlice(n)) {
					t.Errorf("%q: --%s: execcli %q, urfave/cli %q", args, n, l.Strings(n), c.StringSlice(n))
				}
			}
		}
		if got, want := l.Command, c.Args().Slice(); !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Errorf("%q: command: execcli %q, urfave/cli %q", args, got, want)
		}
	}
}
