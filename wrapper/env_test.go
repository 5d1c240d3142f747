package wrapper

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/decision/decisiontest"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

func TestClientIDFrom(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 200)
	for in, want := range map[string]string{
		"/usr/bin/claude": "claude",
		"my agent!":       "my-agent-",
		"./.hidden":       "hidden",
		"--":              "wt-exec",
		"é":               "wt-exec",
		"-_x:y.z":         "x:y.z",
		long:              long[:128],
	} {
		if got := clientIDFrom(in); got != want {
			t.Errorf("clientIDFrom(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEnvLookup(t *testing.T) {
	t.Parallel()
	env := []string{"A=1", "B=", "A=2", "AB=3"}
	for _, tc := range []struct {
		name, want string
		ok         bool
	}{{"A", "2", true}, {"B", "", true}, {"AB", "3", true}, {"C", "", false}} {
		if v, ok := envLookup(env, tc.name); v != tc.want || ok != tc.ok {
			t.Errorf("envLookup(%s) = %q %v", tc.name, v, ok)
		}
	}
	if got := withoutVar(env, "A"); !reflect.DeepEqual(got, []string{"B=", "AB=3"}) {
		t.Errorf("withoutVar: %q", got)
	}
	if got := confinedEnv([]string{"TMPDIR=/tmp", "X=1", ConfinedEnv + "=0"}, "/p"); !reflect.DeepEqual(got, []string{"X=1", "TMPDIR=/p", ConfinedEnv + "=1"}) {
		t.Errorf("confinedEnv: %q", got)
	}
}

// TestLookPath finds a command as a shell does: not found is
// COMMAND_NOT_FOUND, found but not runnable COMMAND_NOT_EXECUTABLE, and a
// relative path is taken from the directory the child runs in.
func TestLookPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "tool"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(bin, "data"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(bin, "sub"), 0o755)
	env := []string{"PATH=/nonexistent:" + bin}
	if got, err := LookPath("tool", "", env); err != nil || got != filepath.Join(bin, "tool") {
		t.Errorf("in PATH: %q %v", got, err)
	}
	if got, err := LookPath("bin/tool", dir, env); err != nil || got != filepath.Join(bin, "tool") {
		t.Errorf("relative to -C: %q %v", got, err)
	}
	for _, tc := range []struct{ name, dir, code string }{
		{"data", "", decision.CommandNotFound}, // in PATH but not executable: not found, as a shell says
		{"sub", "", decision.CommandNotFound},
		{"none", "", decision.CommandNotFound},
		{"bin/none", dir, decision.CommandNotFound},
		{"bin/data", dir, decision.CommandNotRunnable},
		{"bin/sub", dir, decision.CommandNotRunnable},
	} {
		_, err := LookPath(tc.name, tc.dir, env)
		decisiontest.Want(t, err, tc.code)
	}
	// An empty PATH entry is the current directory.
	if _, err := LookPath("tool", "", []string{"PATH="}); decision.CodeOf(err) != decision.CommandNotFound {
		t.Errorf("empty PATH: %v", err)
	}
}

// TestResolveHolder: the holder is this process unless a selector says
// otherwise; the ids come from the options, else the environment, else
// the command's name; an outer wt-exec's holder is inherited only by its
// descendants.
func TestResolveHolder(t *testing.T) {
	t.Parallel()
	self := os.Getpid()
	sess := "s-opt"
	for _, tc := range []struct {
		name    string
		opts    Options
		client  string
		pid     int
		session string
	}{
		{"the command's name", Options{Args: []string{"/usr/bin/claude"}}, "claude", self, ""},
		{"the environment", Options{Args: []string{"x"}, Environ: []string{"WT_CLIENT_ID=env-client", "WT_SESSION_ID=s-env", "WT_RUN_ID=r"}}, "env-client", self, "s-env"},
		{"the options first", Options{Args: []string{"x"}, ClientID: "opt", SessionID: &sess, Environ: []string{"WT_CLIENT_ID=env", "WT_SESSION_ID=s-env"}}, "opt", self, "s-opt"},
		{"an outer holder that is an ancestor", Options{Args: []string{"x"}, Environ: []string{"WT_HOLDER_PID=" + strconv.Itoa(os.Getppid())}}, "x", os.Getppid(), ""},
		{"an outer holder that is not", Options{Args: []string{"x"}, Environ: []string{"WT_HOLDER_PID=1"}}, "x", self, ""},
		{"an explicit pid", Options{Args: []string{"x"}, Holder: strconv.Itoa(self), Environ: []string{"WT_HOLDER_PID=" + strconv.Itoa(os.Getppid())}}, "x", self, ""},
	} {
		h, err := resolveHolder(tc.opts)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		s := ""
		if h.SessionID != nil {
			s = *h.SessionID
		}
		if h.ClientID != tc.client || h.PID != tc.pid || s != tc.session {
			t.Errorf("%s: %+v", tc.name, h)
		}
	}
	_, err := resolveHolder(Options{Args: []string{"x"}, Holder: "bogus"})
	decisiontest.Want(t, err, decision.InvalidHolder)
	for _, v := range []string{"", "x", "1", "0", strconv.Itoa(os.Getpid())} {
		if isAncestor(v) {
			t.Errorf("isAncestor(%q)", v)
		}
	}
	if !isAncestor(strconv.Itoa(os.Getppid())) {
		t.Error("the parent is not an ancestor")
	}
}

func TestWithDefaults(t *testing.T) {
	t.Parallel()
	o := withDefaults(Options{})
	if o.Kind != DefaultKind || o.Grace != DefaultGrace || o.Notify == nil {
		t.Errorf("withDefaults: %+v", o)
	}
	o = withDefaults(Options{Kind: "test", Grace: time.Second})
	if o.Kind != "test" || o.Grace != time.Second {
		t.Errorf("withDefaults kept nothing: %+v", o)
	}
	b := "wt/T-1"
	if branchOf(store.Allocation{}) != "" || branchOf(store.Allocation{Branch: &b}) != b {
		t.Error("branchOf")
	}
}

// TestGitConfigEnv: git configuration given through GIT_CONFIG_COUNT is
// appended to, never duplicated, and a count git refuses is left alone.
func TestGitConfigEnv(t *testing.T) {
	t.Parallel()
	got := withGitDefault([]string{"A=1"}, "reftable.lockTimeout", "10000")
	want := []string{"A=1", "GIT_CONFIG_KEY_0=reftable.lockTimeout", "GIT_CONFIG_VALUE_0=10000", "GIT_CONFIG_COUNT=1"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("withGitDefault: %q", got)
	}
	if again := withGitDefault(got, "reftable.locktimeout", "5"); !reflect.DeepEqual(again, got) {
		t.Errorf("the caller's value was replaced: %q", again)
	}
	got = withPushOption(got, "o=1")
	want = []string{"A=1", "GIT_CONFIG_KEY_0=reftable.lockTimeout", "GIT_CONFIG_VALUE_0=10000", "GIT_CONFIG_KEY_1=push.pushOption", "GIT_CONFIG_VALUE_1=o=1", "GIT_CONFIG_COUNT=2"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("withPushOption: %q", got)
	}
	if again := withPushOption(got, "o=1"); !reflect.DeepEqual(again, got) {
		t.Errorf("a push option twice: %q", again)
	}
	for _, bad := range []string{"x", "-1"} {
		env := []string{"GIT_CONFIG_COUNT=" + bad}
		if got := withGitDefault(env, "k", "v"); !reflect.DeepEqual(got, env) {
			t.Errorf("GIT_CONFIG_COUNT=%s: %q", bad, got)
		}
	}
}

// TestChildEnv: the child gets the grant's lease variables in place of
// inherited ones, and, with the remote's fence on, a push token for its
// task: the fleet key's revision and space in fleet mode, the grant's time
// and holder in local mode; a wt-exec nested in the lease's own run keeps
// the outer token.
func TestChildEnv(t *testing.T) {
	t.Parallel()
	h := proc.Holder{ClientID: "claude", PID: 4242, BootID: "b", StartTicks: 7}
	g := lease.Grant{Applicable: true, Role: store.RoleFeature,
		Lease:      store.Lease{LeaseID: "L1", AllocationID: "A1", Holder: h, AcquiredAt: "2026-01-02T03:04:05.000000006Z"},
		Allocation: store.Allocation{TaskKey: "T-1"}}
	base := []string{"PATH=/bin", "WT_LEASE_ID=old", "WT_HOLDER_PID=1"}
	lockTimeout := []string{"GIT_CONFIG_KEY_0=reftable.lockTimeout", "GIT_CONFIG_VALUE_0=10000", "GIT_CONFIG_COUNT=1"}
	got := childEnv(base, g, "secret")
	want := append([]string{"PATH=/bin", "WT_LEASE_ID=L1", "WT_ALLOCATION_ID=A1", "WT_CLIENT_ID=claude", "WT_HOLDER_PID=4242"}, lockTimeout...)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("without the fence:\n got %q\nwant %q", got, want)
	}
	g.Policy.FleetServerFence = true
	epoch := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC).UnixNano()
	got = childEnv(base, g, "secret")
	token := fleet.FenceToken("T-1", epoch, "secret")
	holder := fleet.HolderOption + "=" + fleet.HolderValue(h.Identity())
	want = []string{"PATH=/bin", "WT_LEASE_ID=L1", "WT_ALLOCATION_ID=A1", "WT_CLIENT_ID=claude", "WT_HOLDER_PID=4242",
		"GIT_CONFIG_KEY_0=push.pushOption", "GIT_CONFIG_VALUE_0=" + token, "GIT_CONFIG_KEY_1=push.pushOption", "GIT_CONFIG_VALUE_1=" + holder,
		"GIT_CONFIG_KEY_2=reftable.lockTimeout", "GIT_CONFIG_VALUE_2=10000", "GIT_CONFIG_COUNT=3"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("local fence:\n got %q\nwant %q", got, want)
	}
	// Nested in the run that holds the lease: the outer token stays alone.
	nested := []string{"WT_LEASE_ID=L1", "GIT_CONFIG_KEY_0=push.pushOption", "GIT_CONFIG_VALUE_0=" + token, "GIT_CONFIG_COUNT=1"}
	if !inheritsToken(nested, g) || inheritsToken(append(nested, "WT_LEASE_ID=L2"), g) {
		t.Error("inheritsToken")
	}
	if got := childEnv(nested, g, "secret2"); strings.Contains(strings.Join(got, " "), "secret2") {
		t.Errorf("a nested run got a second token: %q", got)
	}
	g.Lease.Fleet = &store.FleetLease{Key: "wt/space1/tasks/T-1", Revision: 99}
	got = childEnv(nil, g, "secret")
	if !reflect.DeepEqual(got[4:8], []string{"GIT_CONFIG_KEY_0=push.pushOption", "GIT_CONFIG_VALUE_0=" + fleet.FenceToken("T-1", 99, "secret"),
		"GIT_CONFIG_KEY_1=push.pushOption", "GIT_CONFIG_VALUE_1=" + fleet.SpaceOption + "=space1"}) {
		t.Errorf("fleet fence: %q", got)
	}
	// No token without a secret, for another role, or without an epoch.
	for name, gg := range map[string]lease.Grant{"integration role": func() lease.Grant { x := g; x.Role = store.RoleIntegration; return x }(),
		"no epoch": func() lease.Grant { x := g; x.Lease.Fleet = nil; x.Lease.AcquiredAt = "bad"; return x }()} {
		if got := childEnv(nil, gg, "secret"); strings.Contains(strings.Join(got, " "), "secret") {
			t.Errorf("%s: %q", name, got)
		}
	}
	if got := childEnv(nil, g, ""); strings.Contains(strings.Join(got, " "), fleet.FenceOption) {
		t.Errorf("no secret: %q", got)
	}
	if got := childEnv(base, lease.Grant{}, ""); !reflect.DeepEqual(got, append([]string{"PATH=/bin"}, lockTimeout...)) {
		t.Errorf("a grant that is not applicable: %q", got)
	}
}
