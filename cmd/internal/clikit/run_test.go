package clikit

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/wt-tool/wt/cmd/internal/textout"

	ucli "github.com/urfave/cli/v2"
)

// testApp is a small app shaped like wt-admin: a global value flag with
// an alias, a command with a value flag and a bool, and a command group.
// Its actions record the command line they saw.
func testApp(seen *[]string) func(*Env) *ucli.App {
	return func(e *Env) *ucli.App {
		record := func(c *ucli.Context) error {
			*seen = append(*seen, "repo="+c.String("repo"), "owner="+c.String("owner"), "args="+strings.Join(c.Args().Slice(), ","))
			return nil
		}
		return &ucli.App{
			Flags: []ucli.Flag{&ucli.StringFlag{Name: "repo", Aliases: []string{"C"}, Value: "."}, JSONFlag},
			Commands: []*ucli.Command{
				{Name: "retain", Flags: []ucli.Flag{&ucli.StringFlag{Name: "owner"}, &ucli.BoolFlag{Name: "force"}}, Action: record},
				{Name: "lease", Subcommands: []*ucli.Command{
					{Name: "inspect", Flags: []ucli.Flag{&ucli.StringFlag{Name: "owner"}}, Action: record},
				}},
			},
		}
	}
}

func runTest(args ...string) (code int, seen []string, stderr string) {
	var out, errb bytes.Buffer
	code = Run("wt-test", testApp(&seen), args, &out, &errb)
	return code, seen, errb.String()
}

func TestReorder(t *testing.T) {
	app := testApp(new([]string))(&Env{})
	for _, tc := range []struct {
		in, want []string
		err      string
	}{
		{[]string{"retain", "p", "--owner", "al"}, []string{"retain", "--owner", "al", "--", "p"}, ""},
		{[]string{"--repo", "r", "retain", "--owner", "al", "p"}, []string{"--repo", "r", "retain", "--owner", "al", "--", "p"}, ""},
		// The app's flags after the command go before it.
		{[]string{"retain", "p", "--repo", "r", "--owner", "al"}, []string{"--repo", "r", "retain", "--owner", "al", "--", "p"}, ""},
		{[]string{"lease", "inspect", "p", "-C", "r"}, []string{"-C", "r", "lease", "inspect", "--", "p"}, ""},
		// What follows "--" is left alone; "-" is an argument.
		{[]string{"retain", "--", "--owner"}, []string{"retain", "--", "--owner"}, ""},
		{[]string{"retain", "-", "--force"}, []string{"retain", "--force", "--", "-"}, ""},
		// A value flag given last, with no value.
		{[]string{"retain", "p", "--owner"}, nil, "--owner needs a value"},
		{[]string{"--repo"}, nil, "--repo needs a value"},
	} {
		got, err := reorder(app, tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("reorder(%q) = %q, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("reorder(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestRun: flags before or after the path reach the command; a value flag
// with no value, an unknown command and an unknown flag are usage errors
// (exit 2) with a suggestion when one is close.
func TestRun(t *testing.T) {
	code, seen, stderr := runTest("retain", "p", "--owner", "al", "--repo", "r")
	if code != 0 || !slices.Equal(seen, []string{"repo=r", "owner=al", "args=p"}) {
		t.Fatalf("exit %d, saw %q\n%s", code, seen, stderr)
	}
	code, seen, stderr = runTest("-C", "r", "lease", "inspect", "p")
	if code != 0 || !slices.Equal(seen, []string{"repo=r", "owner=", "args=p"}) {
		t.Fatalf("-C: exit %d, saw %q\n%s", code, seen, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"retain", "p", "--owner"}, "USAGE: --owner needs a value"},
		{[]string{"retian", "p"}, `USAGE: unknown command "retian" (did you mean retain?)`},
		{[]string{"lease", "inspct", "p"}, `(did you mean inspect?)`},
		{[]string{"retain", "p", "--ownr", "x"}, "USAGE: there is no flag --ownr (did you mean --owner?)"},
		{[]string{"retain", "p", "--zzz", "x"}, "USAGE: there is no flag --zzz\n"},
	} {
		code, seen, stderr := runTest(tc.args...)
		if code != textout.ExitUsage || len(seen) > 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, ran %v, stderr %q; want exit 2 and %q", tc.args, code, seen, stderr, tc.want)
		}
	}
}
