package wrapper

import (
	"encoding/json"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/broker"
	"github.com/wt-tool/wt/core/store"
)

// TestBrokeredArgs: a confined command may pass on only wt-admin ready of
// its own task and lease handoff or transfer of its own worktree, with
// their own flags; anything else is refused.
func TestBrokeredArgs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	top := f.c.TopLevel
	ok := []struct {
		args []string
		dir  string
		want []string
	}{
		{[]string{"ready", "T-1"}, "", []string{"--repo", top, "ready", "T-1"}},
		{[]string{"ready", "T-1", "--json"}, "", []string{"--json", "--repo", top, "ready", "T-1"}},
		{[]string{"ready", "T-1", "--strategy", "squash"}, "", []string{"--repo", top, "ready", "T-1", "--strategy", "squash"}},
		{[]string{"ready", "T-1", "--strategy=merge", "--json"}, "", []string{"--json", "--repo", top, "ready", "T-1", "--strategy=merge"}},
		{[]string{"lease", "handoff", top, "--to-client", "codex", "--ttl", "5m", "--json"}, "", []string{"--json", "--repo", top, "lease", "handoff", top, "--to-client", "codex", "--ttl", "5m"}},
		{[]string{"lease", "transfer", ".", "--holder", "42", "--expect-generation", "3"}, top, []string{"--repo", top, "lease", "transfer", top, "--holder", "42", "--expect-generation", "3"}},
	}
	for _, tc := range ok {
		got, err := brokeredArgs(f.c, "T-1", brokerRequest{Args: tc.args, Dir: tc.dir})
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %q %v, want %q", tc.args, got, err, tc.want)
		}
	}
	other := filepath.Join(f.top, "repo")
	refused := []struct {
		task string
		args []string
		why  string
	}{
		{"T-1", []string{"ready", "T-2"}, "not the run's own task"},
		{"", []string{"ready", ""}, "not the run's own task"},
		{"T-1", []string{"ready", "T-1", "--operator"}, "takes only --json and --strategy"},
		{"T-1", []string{"ready", "T-1", "--strategy", "--operator"}, "takes only --json and --strategy"},
		{"T-1", []string{"ready", "T-1", "--strategy=ours"}, "takes only --json and --strategy"},
		{"T-1", []string{"lease", "release", top}, "passes on only"},
		{"T-1", []string{"lease", "handoff"}, "passes on only"},
		{"T-1", []string{"finish", "T-1"}, "passes on only"},
		{"T-1", []string{"lease", "handoff", other}, "not the run's own worktree"},
		{"T-1", []string{"lease", "handoff", filepath.Join(f.top, "none")}, "not the run's own worktree"},
		{"T-1", []string{"lease", "handoff", top, "--operator"}, "is not passed on"},
		{"T-1", []string{"lease", "handoff", top, "--holder", "1"}, "is not passed on"},
		{"T-1", []string{"lease", "transfer", top, "--holder"}, "is not passed on"},
	}
	for _, tc := range refused {
		if got, err := brokeredArgs(f.c, tc.task, brokerRequest{Args: tc.args}); err == nil || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%q: %q %v, want a refusal saying %q", tc.args, got, err, tc.why)
		}
	}
}

// TestBroker: the socket in the run's TMPDIR answers a request it refuses
// with a usage error, and a message that is no request likewise; it is
// named by WT_EXEC_BROKER.
func TestBroker(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tmp := t.TempDir()
	s := &supervisor{}
	kv, err := s.startBroker(f.c, "T-1", tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer s.stopBroker()
	sock := filepath.Join(tmp, ".wt-exec.sock")
	if kv != store.BrokerEnv+"="+sock {
		t.Errorf("the variable: %q", kv)
	}
	ask := func(msg string) broker.Reply {
		t.Helper()
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.Write([]byte(msg))
		var r broker.Reply
		if err := json.NewDecoder(conn).Decode(&r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := ask(`{"args":["lease","abandon","` + f.c.TopLevel + `"]}`); r.Code != 2 || r.Stdout != "" || !strings.HasPrefix(r.Stderr, "wt-exec: refused: USAGE: wt-exec passes on only") {
		t.Errorf("a refused request: %+v", r)
	}
	if r := ask("not json\n"); r.Code != 2 || !strings.HasPrefix(r.Stderr, "wt-exec: refused: USAGE: not a request") {
		t.Errorf("not a request: %+v", r)
	}
	s.stopBroker()
	if s.broker != nil {
		t.Error("the broker still listens")
	}
	if _, err := net.Dial("unix", sock); err == nil {
		t.Error("the socket answers after stopBroker")
	}
	if _, err := s.startBroker(f.c, "T-1", filepath.Join(tmp, "none")); err == nil {
		t.Error("a broker in a missing directory")
	}
}
