package hooks

import (
	"context"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
)

// TestPreReceive judges pushes into a fenced remote with a fake fleet (the
// end-to-end test, fleet-server-fence.txtar, uses a real etcd).
func TestPreReceive(t *testing.T) {
	const zero = "0000000000000000000000000000000000000000"
	const a, b = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	f := ServerFence{Endpoints: []string{"http://x"}, KeySpace: "ks", BranchPrefix: "wt/"}
	current := map[string]int64{"wt/ks/tasks/T-1": 7}
	check := func(_ context.Context, key string, rev int64) error {
		if key == "wt/ks/tasks/down" {
			return decision.New(decision.FleetUnreachable, "etcd at http://x: timeout")
		}
		if current[key] != rev {
			return decision.New(decision.FleetFenced, "the fleet lease this writer held (revision %d) was lost", rev)
		}
		return nil
	}
	for _, c := range []struct {
		name, lines string
		options     []string
		code        string
	}{
		{"current token", a + " " + b + " refs/heads/wt/T-1\n", []string{"wt-fence=T-1@7"}, ""},
		{"no token", a + " " + b + " refs/heads/wt/T-1\n", nil, decision.FleetFenced},
		{"stale token", a + " " + b + " refs/heads/wt/T-1\n", []string{"wt-fence=T-1@6"}, decision.FleetFenced},
		{"two tokens for one task, one current", a + " " + b + " refs/heads/wt/T-1\n", []string{"wt-fence=T-1@6", "wt-fence=T-1@7"}, decision.FleetFenced},
		{"the same token twice", a + " " + b + " refs/heads/wt/T-1\n", []string{"wt-fence=T-1@7", "wt-fence=T-1@7"}, ""},
		{"many guessed tokens", a + " " + b + " refs/heads/wt/T-1\n", []string{"wt-fence=T-1@1", "wt-fence=T-1@2", "wt-fence=T-1@3", "wt-fence=T-1@7"}, decision.FleetFenced},
		{"another task's token", a + " " + b + " refs/heads/wt/T-1\n", []string{"wt-fence=T-2@7"}, decision.FleetFenced},
		{"create needs a token", zero + " " + b + " refs/heads/wt/T-1\n", nil, decision.FleetFenced},
		{"delete needs a token", a + " " + zero + " refs/heads/wt/T-1\n", nil, decision.FleetFenced},
		{"a task key with a slash", a + " " + b + " refs/heads/wt/team/T-9\n", []string{"wt-fence=team/T-9@3"}, decision.FleetFenced},
		{"task-dir layout: its task's token", a + " " + b + " refs/heads/wt/T-1/work\n", []string{"wt-fence=T-1@7"}, ""},
		{"task-dir layout: no token", a + " " + b + " refs/heads/wt/T-1/work\n", nil, decision.FleetFenced},
		{"task-dir layout: a stale token", a + " " + b + " refs/heads/wt/T-1/work\n", []string{"wt-fence=T-1@6"}, decision.FleetFenced},
		{"task-dir layout: another task's token", a + " " + b + " refs/heads/wt/T-1/work\n", []string{"wt-fence=T-2@7"}, decision.FleetFenced},
		{"etcd unreachable", a + " " + b + " refs/heads/wt/down\n", []string{"wt-fence=down@1"}, decision.FleetUnreachable},
		{"other refs pass", a + " " + b + " refs/heads/main\n" + a + " " + b + " refs/tags/v1\n" + a + " " + b + " refs/heads/wtx/T-1\n", nil, ""},
		{"the prefix alone is no task", a + " " + b + " refs/heads/wt/\n", nil, ""},
		{"one bad ref refuses the push", a + " " + b + " refs/heads/main\n" + a + " " + b + " refs/heads/wt/T-1\n", nil, decision.FleetFenced},
		{"a malformed token", a + " " + b + " refs/heads/main\n", []string{"wt-fence=T-1"}, decision.InvalidHookInput},
		{"malformed input", "garbage\n", nil, decision.InvalidHookInput},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := PreReceive(f, strings.NewReader(c.lines), c.options, check)
			if got := decision.CodeOf(err); got != c.code {
				t.Fatalf("got %q (%v), want %q", got, err, c.code)
			}
		})
	}
	if got, ok := ParseServerFence("wt.fence.endpoints http://a:1,http://b:2\nwt.fence.keyspace ks\n"); !ok || len(got.Endpoints) != 2 || got.BranchPrefix != DefaultBranchPrefix {
		t.Errorf("ParseServerFence: %+v %v", got, ok)
	}
	if _, ok := ParseServerFence("wt.fence.keyspace ks\n"); ok {
		t.Error("a fence without endpoints counts as configured")
	}
}
