package hooks

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/proc"
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
			return decision.Relay(decision.FleetUnreachable, "etcd at http://x: timeout")
		}
		if current[key] != rev {
			return decision.Relay(decision.FleetFenced, fmt.Sprintf("the fleet lease this writer held (revision %d) was lost", rev))
		}
		if hash != fleet.FenceHash(secret) {
			return decision.Relay(decision.FleetFenced, "not its secret")
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

// TestLocalFence: in local mode the remote accepts a task's first token,
// the same token again, and a newer grant's, which fences the older one
// once its push has landed (Record); an older epoch, the same epoch with
// another secret, an epoch dated past the clock's bound, and a torn
// record are refused. Check alone writes nothing.
func TestLocalFence(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(0, 1_000_000)
	l := LocalFence{GitDir: dir, Now: func() time.Time { return now }, MaxAhead: time.Minute}
	ctx := context.Background()
	key := "wt/ks/tasks/T-1"
	h1, h2 := fleet.FenceHash("one"), fleet.FenceHash("two")
	for _, c := range []struct {
		name   string
		epoch  int64
		hash   string
		landed bool
		code   string
	}{
		{"the first grant", 100, h1, true, ""},
		{"the same token again", 100, h1, true, ""},
		{"its epoch with another secret", 100, h2, false, decision.FleetFenced},
		{"a newer grant, refused after the fence", 200, h2, false, ""},
		{"the older grant, not locked out by that", 100, h1, true, ""},
		{"a newer grant that lands", 300, h2, true, ""},
		{"the older grant, fenced", 100, h1, false, decision.FleetFenced},
		{"an epoch past the clock's bound", now.Add(2 * time.Minute).UnixNano(), h1, false, decision.FleetFenced},
		{"the newer grant again", 300, h2, true, ""},
	} {
		err := l.Check(ctx, key, c.epoch, c.hash)
		if got := decision.CodeOf(err); got != c.code {
			t.Errorf("%s: got %q (%v), want %q", c.name, got, err, c.code)
		}
		if err == nil && c.landed {
			if err := l.Record(key, c.epoch, c.hash); err != nil {
				t.Fatalf("%s: record: %v", c.name, err)
			}
		}
	}
	other := LocalFence{GitDir: t.TempDir()}
	if err := other.Check(ctx, key, 50, h1); err != nil {
		t.Errorf("a first check: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other.GitDir, "wt-fence")); !os.IsNotExist(err) {
		t.Errorf("Check made the fence directory: %v", err)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "wt-fence", "*.json"))
	for _, p := range m {
		if err := os.WriteFile(p, []byte("{torn"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := decision.CodeOf(l.Check(ctx, key, 300, h1)); got != decision.FleetUnreachable {
		t.Errorf("a torn record: got %q, want FLEET_UNREACHABLE", got)
	}
}

// TestLocalFenceShared: the fence of a shared repository is group-writable,
// past a strict umask.
func TestLocalFenceShared(t *testing.T) {
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	for _, c := range []struct {
		shared    string
		dir, file os.FileMode
	}{
		{"", 0o755, 0o644},
		{"group", 0o775 | os.ModeSetgid, 0o664},
		{"true", 0o775 | os.ModeSetgid, 0o664},
		{"0660", 0o770 | os.ModeSetgid, 0o660},
	} {
		d, f := SharedModes(c.shared)
		if d != c.dir || f != c.file {
			t.Errorf("SharedModes(%q) = %v, %v; want %v, %v", c.shared, d, f, c.dir, c.file)
		}
		l := LocalFence{GitDir: t.TempDir(), DirMode: d, FileMode: f}
		if err := l.Record("wt/ks/tasks/T-1", 100, fleet.FenceHash("one")); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(filepath.Join(l.GitDir, "wt-fence"))
		if err != nil || st.Mode()&(os.ModePerm|os.ModeSetgid) != c.dir {
			t.Errorf("%q: wt-fence is %v (%v), want %v", c.shared, st.Mode(), err, c.dir)
		}
		m, _ := filepath.Glob(filepath.Join(l.GitDir, "wt-fence", "*"))
		for _, p := range m {
			if st, err := os.Stat(p); err != nil || st.Mode().Perm() != c.file {
				t.Errorf("%q: %s is %v, want %v", c.shared, p, st.Mode(), c.file)
			}
		}
	}
}

// TestPreReceiveKeySpace: a push whose fleet lease lives in another key
// space than the remote checks (the clone spells the remote's URL
// otherwise) is refused as FLEET_KEY_SPACE_MISMATCH, not as a lost lease;
// in its own key space it goes on to the token's check.
func TestPreReceiveKeySpace(t *testing.T) {
	f := ServerFence{Endpoints: []string{"http://x"}, KeySpace: "ks", BranchPrefix: "wt/"}
	line := "0000000000000000000000000000000000000000 1111111111111111111111111111111111111111 refs/heads/wt/T-1\n"
	tok := fleet.FenceToken("T-1", 7, "0123456789abcdef0123456789abcdef")
	checked := false
	check := func(context.Context, string, int64, string) error { checked = true; return nil }
	err := PreReceive(f, strings.NewReader(line), []string{tok, fleet.SpaceOption + "=other"}, check)
	if decision.CodeOf(err) != decision.FleetKeySpaceMismatch || checked {
		t.Fatalf("another key space: %v (checked %v)", err, checked)
	}
	if err := PreReceive(f, strings.NewReader(line), []string{tok, fleet.SpaceOption + "=ks"}, check); err != nil || !checked {
		t.Fatalf("its own key space: %v (checked %v)", err, checked)
	}
}

// TestPreReceiveLeaseEnded: in local mode a push names its lease's holder
// beside its token; a remote on the same machine refuses the token once
// that process is gone (the lease ended), and cannot judge another boot's
// holder, which passes. A token with no holder named is refused.
func TestPreReceiveLeaseEnded(t *testing.T) {
	f := ServerFence{Local: true, KeySpace: "ks", BranchPrefix: "wt/"}
	line := "0000000000000000000000000000000000000000 1111111111111111111111111111111111111111 refs/heads/wt/T-1\n"
	tok := fleet.FenceToken("T-1", 7, "0123456789abcdef0123456789abcdef")
	accept := func(context.Context, string, int64, string) error { return nil }
	push := func(opts ...string) error {
		return PreReceive(f, strings.NewReader(line), append([]string{tok}, opts...), accept)
	}
	self, err := proc.Self()
	if err != nil {
		t.Fatal(err)
	}
	if err := push(fleet.HolderOption + "=" + fleet.HolderValue(self)); err != nil {
		t.Fatalf("a live holder: %v", err)
	}
	gone := exec.Command("sleep", "600")
	if err := gone.Start(); err != nil {
		t.Fatal(err)
	}
	id, err := proc.Describe(gone.Process.Pid)
	gone.Process.Kill()
	gone.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if err := push(fleet.HolderOption + "=" + fleet.HolderValue(id)); decision.CodeOf(err) != decision.FleetFenced || !strings.Contains(err.Error(), "lease that has ended") {
		t.Fatalf("a holder that is gone: %v", err)
	}
	other := self
	other.BootID = "another-boot"
	if err := push(fleet.HolderOption + "=" + fleet.HolderValue(other)); err != nil {
		t.Fatalf("another boot's holder, which this remote cannot judge: %v", err)
	}
	if err := push(); decision.CodeOf(err) != decision.FleetFenced {
		t.Fatalf("no holder named: %v", err)
	}
}
