package fleet

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// TestDialTimeoutFromTheEnvironment: a positive duration in
// $WT_FLEET_TIMEOUT bounds each call; anything else is the default.
func TestDialTimeoutFromTheEnvironment(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"":      DefaultDialTimeout,
		"5s":    5 * time.Second,
		"250ms": 250 * time.Millisecond,
		"0s":    DefaultDialTimeout,
		"-1s":   DefaultDialTimeout,
		"five":  DefaultDialTimeout,
	} {
		t.Setenv(TimeoutEnv, v)
		if got := DialTimeout(); got != want {
			t.Errorf("%s=%q: %v, want %v", TimeoutEnv, v, got, want)
		}
	}
}

// TestFindHelperLooksInItsPlaces: $WT_FLEET_BIN first, then PATH; with
// neither, FLEET_HELPER_MISSING saying how to install it.
func TestFindHelperLooksInItsPlaces(t *testing.T) {
	bin := t.TempDir()
	t.Setenv("WT_FLEET_BIN", "/opt/wt/wt-fleet")
	t.Setenv("PATH", bin)
	if p, err := FindHelper(); err != nil || p != "/opt/wt/wt-fleet" {
		t.Errorf("with $WT_FLEET_BIN: %q, %v", p, err)
	}
	t.Setenv("WT_FLEET_BIN", "")
	_, err := FindHelper()
	wttest.WantCode(t, err, decision.FleetHelperMissing)
	if !strings.Contains(err.Error(), HelperName) {
		t.Errorf("the refusal does not name %s: %v", HelperName, err)
	}
	if _, err := NewHelper([]string{"http://127.0.0.1:1"}, store.EtcdAuth{}, nil); decision.CodeOf(err) != decision.FleetHelperMissing {
		t.Errorf("NewHelper without a helper: %v", err)
	}

	// A directory of that name on PATH is not it; an executable is.
	if err := os.Mkdir(filepath.Join(bin, HelperName), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := FindHelper(); decision.CodeOf(err) != decision.FleetHelperMissing {
		t.Errorf("a directory on PATH: %v", err)
	}
	bin2 := t.TempDir()
	exe := filepath.Join(bin2, HelperName)
	if err := os.WriteFile(exe, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+bin2)
	if p, err := FindHelper(); err != nil || p != exe {
		t.Errorf("on PATH: %q, %v", p, err)
	}
	t.Setenv(TimeoutEnv, "3s")
	h, err := NewHelper([]string{"http://127.0.0.1:1"}, store.EtcdAuth{User: "u"}, os.Stderr)
	if err != nil || h.Path != exe || h.DialTimeout != 3*time.Second || h.Auth.User != "u" || len(h.Endpoints) != 1 {
		t.Errorf("NewHelper: %+v, %v", h, err)
	}
}

// TestHelperThatGivesNoAnswerIsUnreachable: a helper that exits without a
// line of JSON makes every call FLEET_UNREACHABLE, naming the operation;
// a helper that cannot be started is FLEET_HELPER_MISSING.
func TestHelperThatGivesNoAnswerIsUnreachable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, name := range []string{"false", "true"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Skip(err)
		}
		h := &Helper{Path: p, Endpoints: []string{"http://127.0.0.1:1"}}
		err = h.Check(ctx, "wt/x/tasks/T-1", 1, "")
		wttest.WantCode(t, err, decision.FleetUnreachable)
		if !strings.Contains(err.Error(), HelperName+" check gave no answer") {
			t.Errorf("%s check: %v", name, err)
		}
		if es, err := h.List(ctx, "wt/x/tasks/"); decision.CodeOf(err) != decision.FleetUnreachable || es != nil {
			t.Errorf("%s list: %v, %v", name, es, err)
		}
		if e, err := h.Revoke(ctx, "wt/x/tasks/T-1"); decision.CodeOf(err) != decision.FleetUnreachable || e != (Entry{}) {
			t.Errorf("%s revoke: %+v, %v", name, e, err)
		}
		if s, err := h.Acquire(ctx, "wt/x/tasks/T-1", Holder{}, time.Minute); decision.CodeOf(err) != decision.FleetUnreachable || s != nil {
			t.Errorf("%s hold: %v, %v", name, s, err)
		}
	}
	missing := &Helper{Path: filepath.Join(t.TempDir(), HelperName)}
	if s, err := missing.Acquire(ctx, "k", Holder{}, time.Minute); decision.CodeOf(err) != decision.FleetHelperMissing || s != nil {
		t.Errorf("a missing helper's hold: %v, %v", s, err)
	}
	if err := missing.Prestart(time.Minute); decision.CodeOf(err) != decision.FleetHelperMissing || missing.pre != nil {
		t.Errorf("a missing helper's prestart: %v", err)
	}
}

// TestHelperRequestsCarryEndpointsAndAuth: what the helper reads on its
// stdin: the endpoints, the bound, and credentials only when there are
// some.
func TestHelperRequestsCarryEndpointsAndAuth(t *testing.T) {
	t.Parallel()
	h := &Helper{Endpoints: []string{"a:1", "b:2"}, DialTimeout: time.Second}
	r := h.request("list")
	if r.Op != "list" || strings.Join(r.Endpoints, ",") != "a:1,b:2" || r.DialTimeout != time.Second || r.Auth != nil {
		t.Errorf("request without auth: %+v", r)
	}
	h.Auth = store.EtcdAuth{User: "wt", PasswordFile: "/pw"}
	if r := h.request("check"); r.Auth == nil || *r.Auth != h.Auth {
		t.Errorf("request with auth: %+v", r)
	}
	for in, want := range map[string]string{"": "", "one": "one", "one\ntwo\n": "one", "\nx": ""} {
		if got := string(firstLine([]byte(in))); got != want {
			t.Errorf("firstLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// alive reports whether pid is a process not yet reaped.
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// TestPrestartedHelperIsEndedByClose: a helper started ahead (here a
// process that reads its stdin and never answers) gets its connect line,
// is kept until Acquire or Close, and Close kills and reaps it; a second
// Prestart keeps the first.
func TestPrestartedHelperIsEndedByClose(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The process passes on the first line it reads through a FIFO, which
	// the test reads: a wait for the line, not for time.
	fifo := filepath.Join(dir, "first-line")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "silent-helper")
	body := "#!/bin/sh\nIFS= read -r line\nprintf '%s\\n' \"$line\" >" + fifo + "\nexec cat >/dev/null\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	h := &Helper{Path: script, Endpoints: []string{"http://127.0.0.1:1"}, Stderr: &stderr}
	if err := h.Prestart(time.Minute); err != nil {
		t.Fatal(err)
	}
	first := h.pre
	if err := h.Prestart(time.Minute); err != nil || h.pre != first {
		t.Fatalf("a second Prestart: %v, started another: %v", err, h.pre != first)
	}
	b, err := os.ReadFile(fifo)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"op":"connect","endpoints":["http://127.0.0.1:1"]`) || !strings.Contains(string(b), `"ttl":60000000000`) {
		t.Errorf("the helper read %q, want the connect request with the TTL to grant", b)
	}
	pid := first.pid
	if !alive(pid) {
		t.Fatal("the prestarted helper is not running")
	}
	if err := h.Close(); err != nil || h.pre != nil {
		t.Fatalf("Close: %v", err)
	}
	if alive(pid) {
		t.Error("Close left the helper running (or unreaped)")
	}
	if err := h.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// TestAcquireGivesUpWithItsContext: a hold whose helper does not answer
// ends when the context does, FLEET_UNREACHABLE, the helper killed.
func TestAcquireGivesUpWithItsContext(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "silent-helper")
	// It keeps its stdout open (as fd 3) and never writes to it: a helper
	// that is slow to answer, not one that has ended.
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec cat 3>&1 >/dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := &Helper{Path: script, Endpoints: []string{"http://127.0.0.1:1"}}
	if err := h.Prestart(0); err != nil {
		t.Fatal(err)
	}
	pid := h.pre.pid
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, err := h.Acquire(ctx, "wt/x/tasks/T-1", Holder{TaskKey: "T-1"}, time.Minute)
	wttest.WantCode(t, err, decision.FleetUnreachable)
	if s != nil || !errors.Is(err, context.Canceled) || h.pre != nil {
		t.Errorf("Acquire: %v, %v (prestarted kept: %v)", s, err, h.pre != nil)
	}
	if alive(pid) {
		t.Error("the helper still runs after the hold gave up")
	}
}

// TestLocalRemoteDirFindsARepositoryOnThisMachine: a bare repository, a
// checkout's .git, with or without ".git" in the URL, relative to the
// repository, through file://; a network URL or a path with no
// repository is "".
func TestLocalRemoteDirFindsARepositoryOnThisMachine(t *testing.T) {
	t.Parallel()
	top, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(top, "srv", "app.git")
	checkout := filepath.Join(top, "other")
	repo := filepath.Join(top, "work", "repo")
	for _, args := range [][]string{{"init", "-q", "--bare", bare}, {"init", "-q", checkout}, {"init", "-q", repo}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	for url, want := range map[string]string{
		bare:                               bare,
		filepath.Join(top, "srv", "app"):   bare,
		"file://" + bare:                   bare,
		"../../srv/app.git":                bare,
		checkout:                           filepath.Join(checkout, ".git"),
		"../../other":                      filepath.Join(checkout, ".git"),
		filepath.Join(top, "nothing"):      "",
		filepath.Join(top, "srv"):          "",
		"https://example.invalid/app.git":  "",
		"git@example.invalid:team/app.git": "",
	} {
		if got := LocalRemoteDir(url, repo); got != want {
			t.Errorf("LocalRemoteDir(%q) = %q, want %q", url, got, want)
		}
	}
}

// TestKeySpaceOfAFencedRemoteOnThisMachine: a local remote whose fence
// records the key space it checks agrees with the client's, or the
// client is refused (FLEET_KEY_SPACE_MISMATCH) rather than hold keys the
// fence does not know; the policy's remote name and case rule are used.
func TestKeySpaceOfAFencedRemoteOnThisMachine(t *testing.T) {
	t.Parallel()
	top, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(top, "srv", "App.git")
	repo := filepath.Join(top, "repo")
	git := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "--bare", bare)
	git("init", "-q", repo)
	git("-C", repo, "remote", "add", "central", bare)
	git("-C", repo, "remote", "add", "hub", "https://Example.invalid/Team/App.git")
	g := &gitrepo.Repo{TopLevel: repo, GitDir: filepath.Join(repo, ".git"), CommonDir: filepath.Join(repo, ".git")}
	ctx := context.Background()

	space, err := KeySpace(ctx, g, store.Policy{FleetRemote: "central"})
	if err != nil || space != RemoteIDIn(bare, repo) {
		t.Fatalf("KeySpace of central: %q, %v", space, err)
	}
	git("--git-dir", bare, "config", "wt.fence.keyspace", space)
	if again, err := KeySpace(ctx, g, store.Policy{FleetRemote: "central"}); err != nil || again != space {
		t.Errorf("with the fence's own key space: %q, %v", again, err)
	}
	git("--git-dir", bare, "config", "wt.fence.keyspace", "0123456789abcdef")
	_, err = KeySpace(ctx, g, store.Policy{FleetRemote: "central"})
	wttest.WantCode(t, err, decision.FleetKeySpaceMismatch)
	if !strings.Contains(err.Error(), "0123456789abcdef") || !strings.Contains(err.Error(), space) {
		t.Errorf("the refusal does not name both key spaces: %v", err)
	}

	folded, err := KeySpace(ctx, g, store.Policy{FleetRemote: "hub"})
	if err != nil || folded != RemoteID("https://example.invalid/team/app") {
		t.Errorf("hub, case folded: %q, %v", folded, err)
	}
	kept, err := KeySpace(ctx, g, store.Policy{FleetRemote: "hub", FleetCaseSensitive: true})
	if err != nil || kept == folded || kept != (Spelling{CaseSensitive: true}).RemoteIDIn("https://example.invalid/Team/App.git", "") {
		t.Errorf("hub, case sensitive: %q, %v", kept, err)
	}
	if _, err := KeySpace(ctx, g, store.Policy{FleetRemote: "nowhere"}); decision.CodeOf(err) != decision.InvalidPolicy {
		t.Errorf("a missing remote: %v", err)
	}
}
