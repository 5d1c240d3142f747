package confine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/decision/decisiontest"
)

// TestAgentProfiles: agents.json decodes, names are sorted, a profile is
// picked by --agent or by the command's program name (any directory), an
// unknown --agent is a usage error naming them all.
func TestAgentProfiles(t *testing.T) {
	t.Parallel()
	want := []string{"aider", "amp", "claude", "codex", "copilot", "crush", "gemini", "opencode", "qwen"}
	if got := AgentNames(); !reflect.DeepEqual(got, want) {
		t.Fatalf("AgentNames: %q, want %q", got, want)
	}
	for _, tc := range []struct{ agent, program, want string }{
		{"", "/usr/local/bin/claude", "claude"},
		{"", "codex", "codex"},
		{"gemini", "claude", "gemini"}, // --agent wins
		{"", "/bin/sh", ""},
		{"", "", ""},
	} {
		p, err := agentProfile(tc.agent, tc.program)
		got := ""
		if p != nil {
			got = p.Name
		}
		if err != nil || got != tc.want {
			t.Errorf("agentProfile(%q, %q) = %q, %v; want %q", tc.agent, tc.program, got, err, tc.want)
		}
	}
	_, err := agentProfile("nosuch", "claude")
	if d := decisiontest.WantHint(t, err, decision.Usage, strings.Join(want, ", ")); !strings.Contains(d.Message, `"nosuch"`) {
		t.Errorf("message: %q", d.Message)
	}
}

func TestExpandHome(t *testing.T) {
	t.Parallel()
	uid := strconv.Itoa(os.Getuid())
	for _, tc := range []struct{ p, home, want string }{
		{"~/.claude", "/home/a", "/home/a/.claude"},
		{"~/.claude", "", ""},
		{"~/.claude", "rel/home", ""},
		{"/tmp/codex-daemon-{uid}", "", "/tmp/codex-daemon-" + uid},
		{"/a//b/", "/home/a", "/a/b"},
	} {
		if got := expandHome(tc.p, tc.home); got != tc.want {
			t.Errorf("expandHome(%q, %q) = %q, want %q", tc.p, tc.home, got, tc.want)
		}
	}
	for p, want := range map[string]string{"/h/a.json": "{}\n", "/h/a.jsonc": "{}\n", "/h/hooks": ""} {
		if got := emptyFor(p); got != want {
			t.Errorf("emptyFor(%s) = %q", p, got)
		}
	}
}

func claudeProfile(t *testing.T) *AgentProfile {
	t.Helper()
	p, err := agentProfile("claude", "")
	if err != nil || p == nil {
		t.Fatal(p, err)
	}
	return p
}

// TestPlanAgentView: with a mount namespace every directory of the claude
// profile is an overlay whose layer is kept in the profile's state, its
// protected places are made (a JSON file as {}), and its private files are
// the profile's own copies: made from the real file the first time, kept
// afterwards, the worktree marked trusted in ~/.claude.json's copy each
// time. The real files are never changed but to be made.
func TestPlanAgentView(t *testing.T) {
	t.Parallel()
	home, top := t.TempDir(), "/work/w1"
	real := filepath.Join(home, ".claude.json")
	if err := os.WriteFile(real, []byte(`{"theme":"dark","projects":{"/other":{"x":1}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := claudeProfile(t)
	plan, err := planAgent(p, home, top, "/tmp/wt-exec-tmp-1", true, false)
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(home, ".local", "state", "wt", "agents", "claude")
	layer := filepath.Join(state, "dirs", "0")
	wantDirs := []Rule{{filepath.Join(home, ".claude"), "the claude profile's state: its own layer, kept in " + layer}}
	wantOverlays := []agentOverlay{{path: filepath.Join(home, ".claude"), upper: filepath.Join(layer, "upper"), work: filepath.Join(layer, "work-wt-exec-tmp-1")}}
	wantProtect := []string{filepath.Join(home, ".claude", "plugins"), filepath.Join(home, ".claude", "hooks"), filepath.Join(home, ".claude", "agents"), filepath.Join(home, ".claude", "commands")}
	wantPrivate := []privateCopy{
		{real, filepath.Join(state, "files", "0-.claude.json")},
		{filepath.Join(home, ".claude", "settings.json"), filepath.Join(state, "files", "1-settings.json")},
		{filepath.Join(home, ".claude", "settings.local.json"), filepath.Join(state, "files", "2-settings.local.json")},
	}
	if plan.name != "claude" || plan.state != state || !reflect.DeepEqual(plan.dirs, wantDirs) || !reflect.DeepEqual(plan.overlays, wantOverlays) ||
		!reflect.DeepEqual(plan.protect, wantProtect) || !reflect.DeepEqual(plan.private, wantPrivate) || plan.readOnly != nil {
		t.Fatalf("plan: %+v", plan)
	}
	for _, d := range append([]string{wantOverlays[0].path, wantOverlays[0].upper, wantOverlays[0].work}, wantProtect...) {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("%s was not made: %v", d, err)
		}
	}
	if got := readFile(t, filepath.Join(home, ".claude", "settings.json")); got != "{}\n" {
		t.Errorf("a missing private file is made with its init: %q", got)
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(readFile(t, wantPrivate[0].copy)), &cfg); err != nil {
		t.Fatal(err)
	}
	projects := cfg["projects"].(map[string]any)
	if cfg["theme"] != "dark" || projects[top].(map[string]any)["hasTrustDialogAccepted"] != true || projects["/other"].(map[string]any)["x"] != float64(1) {
		t.Errorf("the copy of ~/.claude.json: %v", cfg)
	}
	if got := readFile(t, real); got != `{"theme":"dark","projects":{"/other":{"x":1}}}` {
		t.Errorf("the real ~/.claude.json changed: %s", got)
	}
	// A run wrote the profile's copies; the next run keeps what it wrote,
	// and marks its own worktree trusted in the config's copy.
	os.WriteFile(wantPrivate[0].copy, []byte(`{"mcpServers":{"a":{}}}`), 0o600)
	os.WriteFile(wantPrivate[1].copy, []byte(`{"hooks":"the run's"}`), 0o600)
	if _, err := planAgent(p, home, "/work/w2", "/tmp/wt-exec-tmp-2", true, false); err != nil {
		t.Fatal(err)
	}
	cfg = nil
	if err := json.Unmarshal([]byte(readFile(t, wantPrivate[0].copy)), &cfg); err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg["mcpServers"]; !ok || cfg["projects"].(map[string]any)["/work/w2"].(map[string]any)["hasTrustDialogAccepted"] != true {
		t.Errorf("the kept copy of ~/.claude.json: %v", cfg)
	}
	if got := readFile(t, wantPrivate[1].copy); got != `{"hooks":"the run's"}` {
		t.Errorf("the kept copy of settings.json: %q", got)
	}
	text := strings.Join(plan.explain(), "\n")
	for _, want := range []string{"  agent    profile claude", "its own: " + wantOverlays[0].path, "its own: " + real + " (the profile's copy " + wantPrivate[0].copy,
		"read-only: " + wantProtect[0] + " (could make", "note: "} {
		if !strings.Contains(text, want) {
			t.Errorf("explain lacks %q:\n%s", want, text)
		}
	}
}

// TestPlanAgentNoNamespace: without a mount namespace only the profile's
// fallback directories are writable (and made); the directories holding
// its private and protected files stay read-only, and it says which.
func TestPlanAgentNoNamespace(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	p := claudeProfile(t)
	plan, err := planAgent(p, home, "/work/w1", "/tmp/wt-exec-tmp-1", false, false)
	if err != nil {
		t.Fatal(err)
	}
	var want []Rule
	for _, d := range p.Fallback {
		x := filepath.Join(home, strings.TrimPrefix(d, "~/"))
		want = append(want, Rule{x, "the claude profile's state"})
		if fi, err := os.Stat(x); err != nil || !fi.IsDir() {
			t.Errorf("%s was not made: %v", x, err)
		}
	}
	wantRO := []string{filepath.Join(home, ".claude.json"), filepath.Join(home, ".claude", "settings.json"), filepath.Join(home, ".claude", "settings.local.json"),
		filepath.Join(home, ".claude") + " (but the profile's fallback directories)"}
	if !reflect.DeepEqual(plan.dirs, want) || !reflect.DeepEqual(plan.readOnly, wantRO) || plan.state != "" || plan.private != nil || plan.protect != nil || plan.overlays != nil {
		t.Fatalf("plan: %+v", plan)
	}
	if exists(filepath.Join(home, ".claude.json")) || exists(filepath.Join(home, ".local")) {
		t.Error("a run without a namespace made a private file or the profile's state")
	}
	if got := lines(plan.explain(), "no mount namespace"); len(got) != len(wantRO) {
		t.Errorf("explain: %q", got)
	}
}

// TestPlanAgentNeedsHome: a profile whose state must be kept (a namespace)
// refuses to run without an absolute HOME; a dry run makes nothing.
func TestPlanAgentNeedsHome(t *testing.T) {
	t.Parallel()
	p := claudeProfile(t)
	for _, home := range []string{"", "relative"} {
		_, err := planAgent(p, home, "/work/w1", "/tmp/x", true, true)
		decisiontest.WantHint(t, err, decision.ConfinementUnavailable, "env HOME=")
	}
	home := t.TempDir()
	plan, err := planAgent(p, home, "/work/w1", "/tmp/x", true, true)
	if err != nil || len(plan.private) != 3 || len(plan.overlays) != 1 {
		t.Fatalf("dry run: %+v %v", plan, err)
	}
	if ents, _ := os.ReadDir(home); len(ents) != 0 {
		t.Errorf("a dry run made %v", ents)
	}
}

// TestWritePrivateCopy: a config that is not a JSON object is copied as
// it is, trust or not; an unreadable source is CONFINEMENT_UNAVAILABLE.
func TestWritePrivateCopy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	for _, content := range []string{"not json", "[1,2]", "null"} {
		os.WriteFile(src, []byte(content), 0o600)
		if err := writePrivateCopy(src, dst, "claude", "/w"); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, dst); got != content {
			t.Errorf("%q copied as %q", content, got)
		}
	}
	err := writePrivateCopy(filepath.Join(dir, "none"), dst, "", "/w")
	if d, ok := decision.As(err); !ok || d.Code != decision.ConfinementUnavailable {
		t.Errorf("a missing source: %v", err)
	}
	// keepCopy leaves a copy without trust as it is.
	os.WriteFile(dst, []byte("kept"), 0o600)
	if err := keepCopy(src, dst, "", "/w"); err != nil || readFile(t, dst) != "kept" {
		t.Errorf("keepCopy replaced a kept copy: %v", err)
	}
}

// TestNewWithAgent: New applies the profile named by the program: with a
// view its directories are overlays and writable, without one only its
// fallback; a HOME inside another worktree is refused.
func TestNewWithAgent(t *testing.T) {
	r := newRepo(t, "wt/T-1")
	c := r.c
	home := filepath.Join(r.top, "home")
	mkdirs(t, home)
	tmp := t.TempDir()
	t.Run("view", func(t *testing.T) {
		pretend(t, true, false)
		p, err := New(Input{Checkout: c, Branch: "wt/T-1", Home: home, Program: "/opt/bin/claude", TempDir: tmp, ABI: 6, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{c.TopLevel, c.GitDir, c.CommonDir, tmp, filepath.Join(home, ".claude")}
		if got := ruleDirs(p); p.Agent != "claude" || !reflect.DeepEqual(got, want) {
			t.Fatalf("agent %q writable %q, want %q", p.Agent, got, want)
		}
		if got := p.View().workDirs; len(got) != 1 || !strings.HasSuffix(got[0], "work-"+filepath.Base(tmp)) {
			t.Errorf("the profile's work dir is not removed with the view: %q", got)
		}
		if len(lines(p.Explain(c.TopLevel), "  agent    ")) < 5 {
			t.Errorf("explain: %q", p.Explain(c.TopLevel))
		}
	})
	t.Run("landlock only", func(t *testing.T) {
		pretend(t, false, false)
		p, err := New(Input{Checkout: c, Branch: "wt/T-1", Home: home, Agent: "aider", TempDir: tmp, ABI: 6, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := ruleDirs(p); p.Agent != "aider" || got[len(got)-1] != filepath.Join(home, ".aider") {
			t.Fatalf("agent %q writable %q", p.Agent, got)
		}
	})
	t.Run("HOME in another worktree", func(t *testing.T) {
		for _, view := range []bool{false, true} {
			pretend(t, view, false)
			_, err := New(Input{Checkout: c, Branch: "wt/T-1", Home: filepath.Join(r.top, "w2"), Agent: "gemini", TempDir: tmp, ABI: 6, DryRun: true})
			d := decisiontest.WantHint(t, err, decision.ConfinementConflict, "move HOME out of the repository")
			if !strings.Contains(d.Message, "the worktree "+filepath.Join(r.top, "w2")) {
				t.Errorf("message: %q", d.Message)
			}
		}
	})
	t.Run("a profile needing HOME", func(t *testing.T) {
		pretend(t, true, false)
		_, err := New(Input{Checkout: c, Branch: "wt/T-1", Agent: "claude", TempDir: tmp, ABI: 6, DryRun: true})
		decisiontest.WantHint(t, err, decision.ConfinementUnavailable, "env HOME=")
	})
}
