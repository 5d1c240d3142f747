package hooks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
)

// TestPreReceive judges pushes into a fenced remote with a fake fleet (the
// end-to-end test, fleet-server-fence.txtar, uses a real etcd).
func TestPreReceive(t *testing.T) {
	const zero = "0000000000000000000000000000000000000000"
	const a, b = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	f := ServerFence{Endpoints: []string{"http://x"}, KeySpace: "ks", BranchPrefix: "wt/"}
	secret, err := fleet.NewFenceSecret()
	if err != nil {
		t.Fatal(err)
	}
	current := map[string]int64{"wt/ks/tasks/T-1": 7}
	check := func(_ context.Context, key string, rev int64, hash string) error {
		if key == "wt/ks/tasks/down" {
			return decision.New(decision.FleetUnreachable, "etcd at http://x: timeout")
		}
		if current[key] != rev {
			return decision.New(decision.FleetFenced, "the fleet lease this writer held (revision %d) was lost", rev)
		}
		if hash != fleet.FenceHash(secret) {
			return decision.New(decision.FleetFenced, "not its secret")
		}
		return nil
	}
	for _, c := range []struct {
		name, lines string
		options     []string
		code        string
	}{
		{"current token", a + " " + b + " refs/heads/wt/T-1\n", []string{"wt-fence=T-1@7." + secret}, ""},
		{"no token", a + " " + b + " refs/heads/wt/T-1\n", nil, decision.FleetFenced},
		{"stale token", a + " " + b + " refs/heads/wt/T-1\n", []string{"wt-fence=T-1@6." + secret}, decision.FleetFenced},
		{"two tokens for one task, one current", a + " " + b + " refs/heads/wt/T-1\n", []string{"wt-fence=T-1@6." + secret, "wt-fence=T-1@7." + secret}, decision.FleetFenced},
		{"the same token twice", a + " " + b + " refs/heads/wt/T-1\n", []string{"wt-fence=T-1@7." + secret, "wt-fence=T-1@7." + secret}, ""},
		{"many guessed tokens", a + " " + b + " refs/heads/wt/T-1\n", []string{"wt-fence=T-1@1." + secret, "wt-fence=T-1@2." + secret, "wt-fence=T-1@3." + secret, "wt-fence=T-1@7." + secret}, decision.FleetFenced},
		{"another task's token", a + " " + b + " refs/heads/wt/T-1\n", []string{"wt-fence=T-2@7." + secret}, decision.FleetFenced},
		{"create needs a token", zero + " " + b + " refs/heads/wt/T-1\n", nil, decision.FleetFenced},
		{"delete needs a token", a + " " + zero + " refs/heads/wt/T-1\n", nil, decision.FleetFenced},
		{"a task key with a slash", a + " " + b + " refs/heads/wt/team/T-9\n", []string{"wt-fence=team/T-9@3." + secret}, decision.FleetFenced},
		{"task-dir layout: its task's token", a + " " + b + " refs/heads/wt/T-1/work\n", []string{"wt-fence=T-1@7." + secret}, ""},
		{"task-dir layout: no token", a + " " + b + " refs/heads/wt/T-1/work\n", nil, decision.FleetFenced},
		{"task-dir layout: a stale token", a + " " + b + " refs/heads/wt/T-1/work\n", []string{"wt-fence=T-1@6." + secret}, decision.FleetFenced},
		{"task-dir layout: another task's token", a + " " + b + " refs/heads/wt/T-1/work\n", []string{"wt-fence=T-2@7." + secret}, decision.FleetFenced},
		{"etcd unreachable", a + " " + b + " refs/heads/wt/down\n", []string{"wt-fence=down@1." + secret}, decision.FleetUnreachable},
		{"other refs pass", a + " " + b + " refs/heads/main\n" + a + " " + b + " refs/tags/v1\n" + a + " " + b + " refs/heads/wtx/T-1\n", nil, ""},
		{"the prefix alone is no task", a + " " + b + " refs/heads/wt/\n", nil, ""},
		{"one bad ref refuses the push", a + " " + b + " refs/heads/main\n" + a + " " + b + " refs/heads/wt/T-1\n", nil, decision.FleetFenced},
		{"a malformed token", a + " " + b + " refs/heads/main\n", []string{"wt-fence=T-1"}, decision.InvalidHookInput},
		{"a token of an older wt, without a secret", a + " " + b + " refs/heads/wt/T-1\n", []string{"wt-fence=T-1@7"}, decision.InvalidHookInput},
		{"the current revision with a guessed secret", a + " " + b + " refs/heads/wt/T-1\n", []string{"wt-fence=T-1@7." + strings.Repeat("0", 32)}, decision.FleetFenced},
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

// TestLocalChecker: in local mode the remote accepts a task's first token,
// the same token again, and a newer grant's, which fences the older one;
// an older epoch, the same epoch with another secret, and a torn record
// are refused.
func TestLocalChecker(t *testing.T) {
	dir := t.TempDir()
	check := LocalChecker(dir)
	ctx := context.Background()
	h1, h2 := fleet.FenceHash("one"), fleet.FenceHash("two")
	for _, c := range []struct {
		name  string
		epoch int64
		hash  string
		code  string
	}{
		{"the first grant", 100, h1, ""},
		{"the same token again", 100, h1, ""},
		{"its epoch with another secret", 100, h2, decision.FleetFenced},
		{"a newer grant", 200, h2, ""},
		{"the older grant, fenced", 100, h1, decision.FleetFenced},
		{"the newer grant again", 200, h2, ""},
	} {
		if got := decision.CodeOf(check(ctx, "wt/ks/tasks/T-1", c.epoch, c.hash)); got != c.code {
			t.Errorf("%s: got %q, want %q", c.name, got, c.code)
		}
	}
	if err := check(ctx, "wt/ks/tasks/T-2", 50, h1); err != nil {
		t.Errorf("another task: %v", err)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "wt-fence", "*.json"))
	for _, p := range m {
		if err := os.WriteFile(p, []byte("{torn"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := decision.CodeOf(check(ctx, "wt/ks/tasks/T-1", 300, h1)); got != decision.FleetUnreachable {
		t.Errorf("a torn record: got %q, want FLEET_UNREACHABLE", got)
	}
}
