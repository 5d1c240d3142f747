package hooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
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

// fixture is a governed repository (wtfixture.Repo) with the gate's own
// readings.
type fixture struct{ *wtfixture.Repo }

func newFixture(t *testing.T, change policy.Change) *fixture {
	t.Helper()
	return &fixture{wtfixture.New(t, change)}
}

// events are the names of the store's events, oldest first.
func (f *fixture) events() []string {
	f.T.Helper()
	b, err := os.ReadFile(filepath.Join(f.R.Store.Root(), "events.jsonl"))
	if err != nil && !os.IsNotExist(err) {
		f.T.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.Index(line, `"event":"`); i >= 0 {
			rest := line[i+len(`"event":"`):]
			out = append(out, rest[:strings.Index(rest, `"`)])
		}
	}
	return out
}

// me is the pid the gate judges for a process that descends from
// wttest.Self;
// other is one that does not (this process's parent, which is older).
var me, other = os.Getpid(), os.Getppid()

func ptr[T any](v T) *T { return &v }

// wantVerdict fails the test unless v has the code and allowance given.
func wantVerdict(t *testing.T, v Verdict, err error, code string, allowed bool) {
	t.Helper()
	if err != nil {
		t.Fatalf("error %v (verdict %+v)", err, v)
	}
	if v.Code != code || v.Allowed != allowed {
		t.Fatalf("got code %q allowed %v (%s), want %q allowed %v", v.Code, v.Allowed, v.Reason, code, allowed)
	}
	if (v.Refusal != nil) != (code != decision.Entitled && code != decision.Unmanaged && code != decision.DedicatedRoleGate) {
		t.Fatalf("refusal %v with code %q", v.Refusal, code)
	}
}
