package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/cmd/internal/execflags"
	"github.com/wt-tool/wt/cmd/internal/textout"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/store"
)

// TestConfinedHandoffGoesToTheBrokerOnly: inside a confined command,
// lease handoff, lease transfer and ready go to the wt-exec that runs it;
// when its socket cannot be reached they are refused with the command to
// run outside (STORE_NOT_WRITABLE). Every other command runs here. (It
// sets the environment: not parallel.)
func TestConfinedHandoffGoesToTheBrokerOnly(t *testing.T) {
	f := newFixture(t)
	a := f.Allocate("T-1", "", "w1")
	t.Setenv(store.ConfinedEnv, "1")
	t.Setenv(store.BrokerEnv, filepath.Join(t.TempDir(), "no.sock"))
	before := f.records()
	for _, tc := range []struct {
		args []string
		hint string
	}{
		{[]string{"lease", "handoff", a.WorktreePath, "--to-client", "next"}, "wt-admin lease handoff PATH --to-client CLIENT"},
		{[]string{"lease", "transfer", a.WorktreePath, "--holder", "42"}, "wt-admin lease transfer PATH --holder PID --reason WHY"},
		{[]string{"ready", "T-1"}, "wt-admin ready TASK --owner OWNER"},
	} {
		r := admin(t, tc.args...)
		if r.exit != textout.ExitRefused || r.stdout != "" || !strings.HasPrefix(r.stderr, "wt-admin: refused: STORE_NOT_WRITABLE: the wt-exec running this confined command cannot be reached") ||
			!strings.Contains(r.stderr, "hint: run it outside the run: "+tc.hint) {
			t.Errorf("%q: exit %d\nstdout: %s\nstderr: %s", tc.args, r.exit, r.stdout, r.stderr)
		}
	}
	if f.records() != before {
		t.Error("a refused brokered command changed the records")
	}
	f.json(textout.ExitRefused, decision.NoWriterLease, "lease", "inspect", a.WorktreePath)
}

// TestExecAppHasWtExecsFlags: the urfave/cli form of wt-exec's command
// line, for its man page and completions, has each flag of wt-exec's
// table but help and version, which urfave/cli adds.
func TestExecAppHasWtExecsFlags(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	appRuns.Lock()
	code := clikit.Run(execflags.Bin, ExecApp, []string{"--help"}, &out, &errb)
	appRuns.Unlock()
	if code != textout.ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	app := ExecApp(&clikit.Env{})
	names := map[string]bool{}
	for _, fl := range app.Flags {
		for _, n := range fl.Names() {
			names[n] = true
		}
	}
	for _, fl := range execflags.Flags {
		if fl.Name == "help" || fl.Name == "version" {
			continue
		}
		dashes := "--"
		if len(fl.Name) == 1 {
			dashes = "-"
		}
		if !names[fl.Name] || !strings.Contains(out.String(), dashes+fl.Name+" ") {
			t.Errorf("--%s is not in wt-exec's app or its help", fl.Name)
		}
	}
	if app.UsageText != execflags.Synopsis {
		t.Errorf("usage %q", app.UsageText)
	}
}
