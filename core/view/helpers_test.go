package view

import (
	"os"
	"testing"

	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wtfixture"
)

// TestMain keeps every git away from the configuration of the user and of
// the machine (gittest.Setenv), before any test runs.
func TestMain(m *testing.M) {
	gittest.Setenv()
	os.Exit(m.Run())
}

// fixture is a governed repository (wtfixture.Repo) with the view's own
// reading.
type fixture struct{ *wtfixture.Repo }

func newFixture(t *testing.T, change policy.Change) *fixture {
	t.Helper()
	return &fixture{wtfixture.New(t, change)}
}

// status reads the status view, with what a commit meets from gate.
func (f *fixture) status(gate GateCheck) StatusResult {
	f.T.Helper()
	res, err := Status(f.Ctx, f.R, gate)
	if err != nil {
		f.T.Fatal(err)
	}
	return res
}

// row is the status row of the worktree at path.
func row(t *testing.T, res StatusResult, path string) Row {
	t.Helper()
	for _, r := range res.Rows {
		if r.Path == path {
			return r
		}
	}
	t.Fatalf("no row of %s in %+v", path, res.Rows)
	return Row{}
}

// codes are the problems' codes, in order; an alarm's is marked with a
// leading "!".
func codes(ps []Problem) []string {
	out := []string{}
	for _, p := range ps {
		c := p.Code
		if p.Alarm {
			c = "!" + c
		}
		out = append(out, c)
	}
	return out
}
