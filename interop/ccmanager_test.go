//go:build wt_network

package interop_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestCcmanager drives the real ccmanager (4.4.3, its Linux binary from
// npm: interop/run.sh installs it and names it in $WT_CCMANAGER) through
// its terminal UI, with the command preset docs/launchers.md gives
// (wt-exec --hold … as the preset's command):
//
//   - ccmanager's "New Worktree" makes a worktree wt does not govern; its
//     session shows wt-exec's refusal and the adopt hint in the pane
//     (ccmanager drops what a session writes before its pane attaches:
//     --hold waits for the terminal to answer before it writes);
//   - after wt-admin adopt, the same session runs under the lease and
//     commits on the worktree's branch;
//   - its "main" entry, with policy --unmanaged refuse, shows
//     UNMANAGED_REFUSED in the pane;
//   - after ccmanager's Delete, status names the one command that ends
//     the task, and it runs from outside the repository.
func TestCcmanager(t *testing.T) {
	ccm := os.Getenv("WT_CCMANAGER")
	if ccm == "" {
		t.Fatal("$WT_CCMANAGER names no ccmanager binary (interop/run.sh installs one)")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	top := t.TempDir()
	bin := filepath.Join(top, "bin")
	home := filepath.Join(top, "home")
	repo := filepath.Join(top, "repo")
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME=", "XDG_STATE_HOME=",
		"PATH="+bin+":"+os.Getenv("PATH"), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@wt.invalid",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@wt.invalid", "WT_CLIENT_ID=", "WT_HOLDER_PID=", "WT_LEASE_ID=")
	run := func(dir string, wantOK bool, name string, args ...string) string {
		t.Helper()
		if strings.HasPrefix(name, "wt-") {
			name = filepath.Join(bin, name)
		}
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if (err == nil) != wantOK {
			t.Fatalf("%s %v: %v (want success %v)\n%s", name, args, err, wantOK, out)
		}
		return string(out)
	}
	run(root, true, "go", "build", "-tags", "urfave_cli_no_docs", "-o", bin+"/", "./cmd/wt-admin", "./cmd/wt-exec", "./cmd/wt-hook", "./cmd/wt-gate")
	run(top, true, "git", "init", "-q", "-b", "main", repo)
	run(repo, true, "git", "commit", "-q", "--allow-empty", "-m", "init")
	run(repo, true, "wt-admin", "init")
	run(repo, true, "wt-hook", "install")

	// The preset docs/launchers.md gives (its recipe), the agent replaced
	// by a stand-in that commits, says so, and waits for Enter.
	config := launchersRecipe(t, filepath.Join(root, "docs", "launchers.md"))
	agent := `git commit -q --allow-empty -m from-ccmanager && echo "COMMITTED on $(git rev-parse --abbrev-ref HEAD)"; read _`
	for _, p := range config.CommandPresets.Presets {
		for _, args := range []*[]string{&p.Args, &p.FallbackArgs} {
			i := slices.Index(*args, "--")
			if i < 0 {
				t.Fatalf("the recipe's preset %q runs no command after --: %q", p.Name, *args)
			}
			*args = append((*args)[:i+1:i+1], "sh", "-c", agent)
		}
	}
	b, _ := json.Marshal(config)
	if err := os.MkdirAll(filepath.Join(home, ".config", "ccmanager"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".config", "ccmanager", "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	// settled: the menu as ccmanager draws it once it has read the
	// worktrees' state (before that, keys typed may go nowhere).
	settled := regexp.MustCompile(`feat-login @ feat +(just now|\d+\w+ ago)`)
	const (
		down  = "\x1b[B"
		enter = "\r"
		menu  = "Q ⏻ Exit"
	)

	// New Worktree: ../feat on a new branch feat-login from main.
	s := startTUI(t, ccm, repo, env, home)
	s.waitFor(menu)
	s.send("n")
	s.waitFor("Enter worktree path")
	s.send("../feat")
	s.waitFor("../feat")
	s.send(enter)
	s.waitFor("Select base branch")
	s.send(enter)
	s.waitFor("How do you want")
	s.send(enter)
	s.waitFor("branch creation strategy")
	s.send(enter)
	s.waitFor("Enter new branch name")
	s.send("feat-login")
	s.waitFor("feat-login")
	s.send(enter)
	s.waitFor("Copy .claude directory")
	s.send(enter)
	s.waitFor("session data")
	s.send(down)
	s.waitFor("❯ ❌ No, start fresh")
	s.send(enter)
	s.waitFor("feat-login @ feat")
	feat := filepath.Join(top, "feat")
	if out := run(repo, true, "git", "worktree", "list"); !strings.Contains(out, feat+" ") {
		t.Fatalf("ccmanager made no worktree at %s:\n%s", feat, out)
	}

	// Its session there: the refusal and the adopt hint, in the pane.
	s.waitFor(menu)
	s.send(down)
	s.waitFor("❯ 1 ❯ feat-login")
	s.send(enter)
	pane := s.waitFor("press Enter to close")
	for _, want := range []string{"UNREGISTERED_WORKTREE", "wt-admin --repo " + feat + " adopt " + feat + " --task KEY --owner NAME"} {
		if !strings.Contains(pane, want) {
			t.Fatalf("the pane lacks %q:\n%s", want, pane)
		}
	}
	s.send(enter)
	s.waitFor(menu)
	s.quit()

	// Adopted, the same preset runs under the lease and commits.
	plan := run(top, true, "wt-admin", "--repo", repo, "adopt", feat, "--task", "feat-login", "--owner", "t")
	id := regexp.MustCompile(`--apply (\S+)`).FindStringSubmatch(plan)
	if id == nil {
		t.Fatalf("adopt's dry run names no plan:\n%s", plan)
	}
	run(top, true, "wt-admin", "--repo", repo, "adopt", feat, "--task", "feat-login", "--owner", "t", "--apply", id[1])
	s = startTUI(t, ccm, repo, env, home)
	s.waitForRe(settled)
	s.send(down)
	s.waitFor("❯ 1 ❯ feat-login")
	s.send(enter)
	s.waitFor("COMMITTED on feat-login")
	s.send(enter)
	s.waitFor(menu)
	if got := run(repo, true, "git", "log", "-1", "--format=%s", "feat-login"); strings.TrimSpace(got) != "from-ccmanager" {
		t.Fatalf("feat-login's last commit is %q, not the session's", got)
	}
	if got := run(repo, true, "wt-admin", "lease", "list", "--all"); !strings.Contains(got, "ccmanager") {
		t.Fatalf("no lease of client ccmanager on record:\n%s", got)
	}

	// The "main" entry, with unmanaged launches refused: the refusal in the pane.
	run(repo, true, "wt-admin", "policy", "--unmanaged", "refuse")
	s.send("0")
	pane = s.waitFor("press Enter to close")
	if !strings.Contains(pane, "UNMANAGED_REFUSED") {
		t.Fatalf("the main entry's pane lacks UNMANAGED_REFUSED:\n%s", pane)
	}
	s.send(enter)
	s.waitFor(menu)

	// ccmanager's Delete, branch kept: status names finish, runnable from anywhere.
	s.send("d")
	s.waitFor("Select worktrees to delete")
	s.send(" ")
	s.waitFor("1 worktree selected")
	s.send(enter)
	s.waitFor("Keep the branches")
	s.send("j")
	s.waitFor(">( ) Keep the branches")
	s.send(" ")
	s.waitFor(">(•) Keep the branches")
	s.send(enter)
	s.waitFor("✓ Keep the branches")
	s.send("k")
	s.waitFor("> Confirm")
	s.send(enter)
	s.waitFor(menu)
	s.quit()
	if _, err := os.Stat(feat); !os.IsNotExist(err) {
		t.Fatalf("ccmanager's Delete left %s: %v", feat, err)
	}
	status := run(top, true, "wt-admin", "--repo", repo, "status")
	next := regexp.MustCompile(`(?m)^next: .*feat.*\n  (wt-admin .*)$`).FindStringSubmatch(status)
	if next == nil {
		t.Fatalf("status names no next step for the deleted worktree:\n%s", status)
	}
	elsewhere := t.TempDir()
	out := run(elsewhere, false, "sh", "-c", next[1])
	archive := regexp.MustCompile(`and finish: (wt-admin .*)`).FindStringSubmatch(out)
	if archive == nil {
		t.Fatalf("%s refused with no runnable next step:\n%s", next[1], out)
	}
	plan = run(elsewhere, true, "sh", "-c", archive[1])
	apply := regexp.MustCompile(`(wt-admin .*--apply \S+)`).FindStringSubmatch(plan)
	if apply == nil {
		t.Fatalf("finish's dry run names no way to apply it:\n%s", plan)
	}
	run(elsewhere, true, "sh", "-c", apply[1])
	if status := run(top, true, "wt-admin", "--repo", repo, "status"); strings.Contains(status, "feat-login") && strings.Contains(status, "ACTIVE") {
		t.Fatalf("the task is still active after finish:\n%s", status)
	}
}

// ccmanagerConfig is the part of ccmanager's config.json the recipe sets.
type ccmanagerConfig struct {
	CommandPresets struct {
		DefaultPresetID string `json:"defaultPresetId"`
		Presets         []*struct {
			ID           string   `json:"id"`
			Name         string   `json:"name"`
			Command      string   `json:"command"`
			Args         []string `json:"args"`
			FallbackArgs []string `json:"fallbackArgs"`
		} `json:"presets"`
	} `json:"commandPresets"`
}

// launchersRecipe reads the ccmanager recipe of docs/launchers.md.
func launchersRecipe(t *testing.T, page string) ccmanagerConfig {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- recipe: ccmanager -->\n```json\n")
	body, _, ok2 := strings.Cut(rest, "```")
	var c ccmanagerConfig
	if !ok || !ok2 {
		t.Fatalf("%s has no ccmanager recipe", page)
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("the ccmanager recipe: %v", err)
	}
	if len(c.CommandPresets.Presets) == 0 || c.CommandPresets.Presets[0].Command != "wt-exec" {
		t.Fatalf("the ccmanager recipe's preset does not run wt-exec: %s", body)
	}
	return c
}

// tui is a terminal program on a pty this test reads and types into. It
// answers the cursor-position question (ESC [ 6 n) as a terminal does.
type tui struct {
	t     *testing.T
	cmd   *exec.Cmd
	ptmx  *os.File
	mu    sync.Mutex
	buf   bytes.Buffer
	since int // where the screen's text since the last key starts
	done  chan struct{}
}

// startTUI starts ccm in dir on a 50x160 pty, with no sessions to
// restore from an earlier run.
func startTUI(t *testing.T, ccm, dir string, env []string, home string) *tui {
	t.Helper()
	os.Remove(filepath.Join(home, ".config", "ccmanager", "sessions.json"))
	cmd := exec.Command(ccm)
	cmd.Dir, cmd.Env = dir, env
	ptmx, err := pty.StartWithAttrs(cmd, &pty.Winsize{Rows: 50, Cols: 160}, &syscall.SysProcAttr{Setsid: true, Setctty: true})
	if err != nil {
		t.Fatal(err)
	}
	s := &tui{t: t, cmd: cmd, ptmx: ptmx, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		b := make([]byte, 65536)
		for {
			n, err := ptmx.Read(b)
			if n > 0 {
				s.mu.Lock()
				s.buf.Write(b[:n])
				s.mu.Unlock()
				for range bytes.Count(b[:n], []byte("\x1b[6n")) {
					ptmx.WriteString("\x1b[1;1R")
				}
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); ptmx.Close() })
	return s
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;?>]*[a-zA-Z]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\x1b[=>]`)

// text is what the program wrote since the last key, its escapes removed.
func (s *tui) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ansi.ReplaceAllString(string(s.buf.Bytes()[s.since:]), "")
}

func (s *tui) send(keys string) {
	s.mu.Lock()
	s.since = s.buf.Len()
	s.mu.Unlock()
	if _, err := s.ptmx.WriteString(keys); err != nil {
		s.t.Fatal(err)
	}
}

// waitFor waits until the screen since the last key shows want, and
// returns it. It gives up after a minute, which only a broken run reaches.
func (s *tui) waitFor(want string) string {
	s.t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got := s.text(); strings.Contains(got, want) {
			return got
		}
	}
	s.t.Fatalf("ccmanager never showed %q; its screen since the last key:\n%s", want, s.text())
	return ""
}

// waitForRe is waitFor with a pattern.
func (s *tui) waitForRe(want *regexp.Regexp) string {
	s.t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got := s.text(); want.MatchString(got) {
			return got
		}
	}
	s.t.Fatalf("ccmanager never showed %s; its screen since the last key:\n%s", want, s.text())
	return ""
}

// quit ends ccmanager. Not through its menu: after a session has ended,
// ccmanager 4.4.3 stays running once its Exit is confirmed.
func (s *tui) quit() {
	s.t.Helper()
	s.cmd.Process.Kill()
	s.cmd.Wait()
}
