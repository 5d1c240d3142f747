package hooks

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wttest"
)

// push runs PrePush from dir for the pre-push lines given.
func push(t *testing.T, dir string, pid int, lines ...string) Verdict {
	t.Helper()
	in := ""
	for _, l := range lines {
		in += l + "\n"
	}
	v, err := PrePush(dir, strings.NewReader(in), pid)
	if err != nil {
		t.Fatalf("PrePush %q: %v", lines, err)
	}
	return v
}

// TestPrePushOwn: from the task's own worktree its writer pushes only its
// task branch, and only commits of that branch's history.
func TestPrePushOwn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	wt := a.WorktreePath
	own := "refs/heads/wt/T-1"
	gittest.Git(t, wt, "commit", "-q", "--allow-empty", "-m", "work")
	tip := gittest.Git(t, wt, "rev-parse", "HEAD")
	line := func(local, oid, remote string) string { return local + " " + oid + " " + remote + " " + zeroOID }

	v := push(t, wt, me, line(own, tip, own))
	if v.Code != decision.WriterLeaseRequired || v.Allowed {
		t.Fatalf("no lease: %+v", v)
	}
	f.Lease(a, wttest.Self(t), nil)
	for _, c := range []struct {
		name, line, code string
	}{
		{"its tip", line(own, tip, own), decision.Entitled},
		{"HEAD", line("HEAD", tip, own), decision.Entitled},
		{"a commit of its history", line(f.Base, f.Base, own), decision.Entitled},
		{"another branch on the remote", line(own, tip, "refs/heads/main"), decision.PushRefNotOwned},
		{"a tag", line("refs/tags/v1", tip, "refs/tags/v1"), decision.PushRefNotOwned},
		{"a deletion", "(delete) " + zeroOID + " " + own + " " + tip, decision.PushRefNotOwned},
		{"a commit not of its history", line("x", commit(t, f.Dir, f.Base, "elsewhere"), own), decision.PushRefNotOwned},
	} {
		v := push(t, wt, me, c.line)
		if v.Code != c.code || v.Allowed != (c.code == decision.Entitled) {
			t.Errorf("%s: got %s (%s)", c.name, v.Code, v.Reason)
		}
		if c.code == decision.PushRefNotOwned && !strings.Contains(v.Refusal.Hint, "git push <remote> HEAD:wt/T-1") {
			t.Errorf("%s: hint %q", c.name, v.Refusal.Hint)
		}
	}
	if v := push(t, wt, other, line(own, tip, own)); v.Code != decision.WriterLeaseHeld {
		t.Errorf("not the holder: %+v", v)
	}
	if _, err := PrePush(wt, strings.NewReader("garbage\n"), me); decision.CodeOf(err) != decision.InvalidHookInput {
		t.Errorf("garbage: %v", err)
	}
}

// TestPrePushElsewhere: from a checkout that is not a governed feature
// worktree, only a line that updates a guarded task branch on the remote
// needs that task's entitlement.
func TestPrePushElsewhere(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	line := f.Base + " " + f.Base + " refs/heads/wt/T-1 " + zeroOID
	mainLine := "refs/heads/main " + f.Base + " refs/heads/main " + zeroOID
	if v := push(t, f.Dir, other, mainLine); v.Code != decision.Unmanaged || !v.Allowed {
		t.Errorf("main: %+v", v)
	}
	v := push(t, f.Dir, other, mainLine, line)
	if v.Code != decision.WriterLeaseRequired || v.Allowed || !strings.HasPrefix(v.Reason, "this push updates refs/heads/wt/T-1, task T-1's branch") {
		t.Errorf("the task branch, no lease: %+v", v)
	}
	f.Lease(a, wttest.Self(t), nil)
	if v := push(t, f.Dir, other, line); v.Code != decision.WriterLeaseHeld || v.Allowed {
		t.Errorf("the task branch, not the holder: %+v", v)
	}
	if v := push(t, f.Dir, me, mainLine, line); v.Code != decision.Unmanaged || !v.Allowed {
		t.Errorf("the task branch, the holder: %+v", v)
	}
}

// TestPrePushFleet: in fleet mode a push from the task's worktree needs a
// lease that holds a fleet lease (the check of one with etcd is the
// end-to-end tests').
func TestPrePushFleet(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	f.Write(func(tx *store.Tx) error {
		p, _, err := tx.Policy()
		if err != nil {
			return err
		}
		p.Coordinator, p.EtcdEndpoints = store.CoordinatorEtcd, []string{"http://127.0.0.1:2379"}
		return tx.PutPolicy(&p)
	})
	f.Lease(a, wttest.Self(t), nil)
	own := "refs/heads/wt/T-1"
	v := push(t, a.WorktreePath, me, own+" "+f.Base+" "+own+" "+zeroOID)
	if v.Code != decision.FleetFenced || v.Allowed || !strings.Contains(v.Reason, "holds no fleet lease") {
		t.Errorf("no fleet lease: %+v", v)
	}
	// A push of nothing asks no one.
	if v := push(t, a.WorktreePath, me); v.Code != decision.Entitled || !v.Allowed {
		t.Errorf("an empty push: %+v", v)
	}
}

// TestPostReceive: once a push has landed, the token of each task branch
// it updated is recorded; a push with no token or several for a task
// records nothing for it.
func TestPostReceive(t *testing.T) {
	t.Parallel()
	f := ServerFence{Local: true, KeySpace: "ks", BranchPrefix: "wt/"}
	const a, b = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	lines := a + " " + b + " refs/heads/wt/T-1\n" + a + " " + b + " refs/heads/wt/T-2/work\n" + a + " " + b + " refs/heads/main\n" + a + " " + b + " refs/heads/wt/T-3\n"
	sec := "0123456789abcdef0123456789abcdef"
	opts := []string{fleet.FenceToken("T-1", 7, sec), fleet.FenceToken("T-2", 8, sec), fleet.FenceToken("T-3", 1, sec), fleet.FenceToken("T-3", 2, sec)}
	var got []string
	record := func(key string, epoch int64, hash string) error {
		if hash != fleet.FenceHash(sec) {
			t.Errorf("%s: hash %s", key, hash)
		}
		got = append(got, key+"@"+strings.Repeat("I", int(epoch)))
		return nil
	}
	if err := PostReceive(f, strings.NewReader(lines), opts, record); err != nil {
		t.Fatal(err)
	}
	if want := "wt/ks/tasks/T-1@IIIIIII wt/ks/tasks/T-2@IIIIIIII"; strings.Join(got, " ") != want {
		t.Errorf("recorded %v, want %s", got, want)
	}
	failing := func(string, int64, string) error { return decision.Relay(decision.FleetUnreachable, "disk full") }
	if err := PostReceive(f, strings.NewReader(lines), opts, failing); decision.CodeOf(err) != decision.FleetUnreachable {
		t.Errorf("a record that fails: %v", err)
	}
	if err := PostReceive(f, strings.NewReader("garbage\n"), opts, record); decision.CodeOf(err) != decision.InvalidHookInput {
		t.Errorf("garbage: %v", err)
	}
	if err := PostReceive(f, strings.NewReader(lines), []string{fleet.FenceOption + "=bad"}, record); decision.CodeOf(err) != decision.InvalidHookInput {
		t.Errorf("a malformed token: %v", err)
	}
}

// TestServerFenceConfig: every key of a fence's git config, and the push
// options git hands pre-receive.
func TestServerFenceConfig(t *testing.T) {
	t.Parallel()
	f, ok := ParseServerFence(strings.Join([]string{
		"wt.fence.endpoints  http://a:1, ,http://b:2", "wt.fence.keyspace ks", "wt.fence.branchprefix task/",
		"wt.fence.local true", "wt.fence.urlbase https://forge/", "wt.fence.root /srv/git", "wt.fence.casesensitive true",
		"core.sharedrepository group", "wt.fence.etcdcert /c", "wt.fence.etcdkey /k", "wt.fence.etcdcacert /ca",
		"wt.fence.etcduser u", "wt.fence.etcdpasswordfile /p", "WT.FENCE.KEYSPACE KS2", "noise",
	}, "\n"))
	want := ServerFence{Endpoints: []string{"http://a:1", "http://b:2"}, KeySpace: "KS2", BranchPrefix: "task/", Local: true,
		URLBase: "https://forge/", Root: "/srv/git", CaseSensitive: true, Shared: "group",
		Auth: store.EtcdAuth{Cert: "/c", Key: "/k", CACert: "/ca", User: "u", PasswordFile: "/p"}}
	if !ok || strings.Join(f.Endpoints, ",") != strings.Join(want.Endpoints, ",") {
		t.Fatalf("endpoints: %+v %v", f, ok)
	}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("ParseServerFence:\n got %+v\nwant %+v", f, want)
	}
	if _, ok := ParseServerFence("wt.fence.local true\n"); !ok {
		t.Error("a local fence counts as not configured")
	}

	env := map[string]string{"GIT_PUSH_OPTION_COUNT": "2", "GIT_PUSH_OPTION_0": "a=1", "GIT_PUSH_OPTION_1": "b"}
	if got := PushOptions(func(k string) string { return env[k] }); strings.Join(got, "|") != "a=1|b" {
		t.Errorf("PushOptions: %q", got)
	}
	for _, n := range []string{"", "0", "-1", "x"} {
		if got := PushOptions(func(string) string { return n }); got != nil {
			t.Errorf("PushOptions with count %q: %q", n, got)
		}
	}
}

// TestSharedModes: the fence's modes for every spelling of
// core.sharedRepository.
func TestSharedModes(t *testing.T) {
	t.Parallel()
	for v, want := range map[string][2]os.FileMode{
		"false": {0o755, 0o644}, "umask": {0o755, 0o644}, " Off ": {0o755, 0o644},
		"all": {0o775 | os.ModeSetgid, 0o664}, "world": {0o775 | os.ModeSetgid, 0o664}, "2": {0o775 | os.ModeSetgid, 0o664},
		"0640": {0o750 | os.ModeSetgid, 0o640}, "0666": {0o777 | os.ModeSetgid, 0o666},
		"0400": {0o755, 0o644}, "banana": {0o755, 0o644},
	} {
		if d, f := SharedModes(v); d != want[0] || f != want[1] {
			t.Errorf("SharedModes(%q) = %v, %v; want %v, %v", v, d, f, want[0], want[1])
		}
	}
}

// TestLocalFenceDefaults: without a clock or a bound given, the fence
// reads the time and bounds epochs by DefaultMaxAhead; a record of
// another key in the task's file is refused as torn.
func TestLocalFenceDefaults(t *testing.T) {
	t.Parallel()
	l := LocalFence{GitDir: t.TempDir()}
	ctx := context.Background()
	if err := l.Check(ctx, "wt/ks/tasks/T-1", 1, fleet.FenceHash("x")); err != nil {
		t.Errorf("an old epoch with no record: %v", err)
	}
	if err := l.Check(ctx, "wt/ks/tasks/T-1", 1<<62, fleet.FenceHash("x")); decision.CodeOf(err) != decision.FleetFenced {
		t.Errorf("an epoch past the default bound: %v", err)
	}
	if err := l.Record("wt/ks/tasks/T-1", 5, fleet.FenceHash("x")); err != nil {
		t.Fatal(err)
	}
	if err := l.Record("wt/ks/tasks/T-1", 4, fleet.FenceHash("y")); err != nil {
		t.Fatal(err)
	}
	if err := l.Check(ctx, "wt/ks/tasks/T-1", 5, fleet.FenceHash("x")); err != nil {
		t.Errorf("an older record left the newer one: %v", err)
	}
	m, _ := filepath.Glob(filepath.Join(l.GitDir, "wt-fence", "*.json"))
	if len(m) != 1 {
		t.Fatalf("records: %v", m)
	}
	if err := os.WriteFile(m[0], []byte(`{"key":"wt/ks/tasks/OTHER","epoch":5,"fence_hash":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.Check(ctx, "wt/ks/tasks/T-1", 5, fleet.FenceHash("x")); decision.CodeOf(err) != decision.FleetUnreachable {
		t.Errorf("another key's record: %v", err)
	}
	// A fence directory that is a file cannot be used.
	bad := LocalFence{GitDir: t.TempDir()}
	if err := os.WriteFile(filepath.Join(bad.GitDir, "wt-fence"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := bad.Record("wt/ks/tasks/T-1", 5, fleet.FenceHash("x")); decision.CodeOf(err) != decision.FleetUnreachable {
		t.Errorf("a fence that is a file: %v", err)
	}
}
