package hookcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wt-tool/wt/cmd/internal/textout"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/internal/gittest"
)

// bare makes a bare repository at dir, with main at one commit, and
// returns that commit.
func bare(t *testing.T, dir string) string {
	t.Helper()
	_, src, base := gittest.Repo(t)
	gittest.Git(t, filepath.Dir(dir), "clone", "-q", "--bare", src, dir)
	return base
}

// fence is the wt.fence configuration of the repository at gitDir, as git
// config lists it ("" for none).
func fence(t *testing.T, gitDir string) string {
	t.Helper()
	out, _ := gitOut(gitDir, "config", "--get-regexp", `^wt\.fence\.`)
	return out
}

// TestServerFenceInstallStatusUninstall: install --server in a bare
// remote without etcd fences it in local mode (its config and its
// receive hooks); status --server shows the fence; uninstall --server
// removes both.
func TestServerFenceInstallStatusUninstall(t *testing.T) {
	t.Chdir(t.TempDir())
	remote := filepath.Join(t.TempDir(), "app.git")
	bare(t, remote)
	bin := self(t)

	env := jsonRun(t, textout.ExitOK, decision.HooksShown, "-C", remote, "status", "--server")
	if env.Decision["fence"] != nil {
		t.Errorf("a fence before install: %v", env.Decision)
	}

	env = jsonRun(t, textout.ExitOK, decision.HooksInstalled, "-C", remote, "install", "--server", "--binary", bin)
	fc, _ := env.Decision["fence"].(map[string]any)
	if fc == nil || fc["local"] != true || str(fc, "key_space") != fleet.RemoteIDIn(remote, "") || str(env.Decision, "git_dir") != remote {
		t.Errorf("install --server: %v", env.Decision)
	}
	if cfg := fence(t, remote); !strings.Contains(cfg, "wt.fence.local true") {
		t.Errorf("fence config:\n%s", cfg)
	}
	for _, h := range []string{"pre-receive", "post-receive"} {
		if b, err := os.ReadFile(filepath.Join(remote, "hooks", h)); err != nil || !strings.Contains(string(b), bin) {
			t.Errorf("%s shim (%v):\n%s", h, err, b)
		}
	}

	r := hook(t, "-C", remote, "status", "--server")
	if r.exit != 0 || !strings.Contains(r.stdout, "pre-receive") || !strings.Contains(r.stdout, "fence: task branches refs/heads/wt/<task>; local mode") {
		t.Errorf("status --server: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}

	jsonRun(t, textout.ExitOK, decision.HooksUninstalled, "-C", remote, "uninstall", "--server")
	if cfg := fence(t, remote); cfg != "" {
		t.Errorf("fence config after uninstall:\n%s", cfg)
	}
	if _, err := os.Stat(filepath.Join(remote, "hooks", "pre-receive")); !os.IsNotExist(err) {
		t.Errorf("pre-receive after uninstall: %v", err)
	}
	r = hook(t, "-C", remote, "status", "--server")
	if r.exit != 0 || !strings.Contains(r.stdout, "fence: not configured in "+remote) {
		t.Errorf("status --server after uninstall: exit %d\n%s", r.exit, r.stdout)
	}
}

// TestServerFenceInstallRefusesBadFlags: each combination of flags the
// fence cannot be made from is a usage error, and configures nothing.
func TestServerFenceInstallRefusesBadFlags(t *testing.T) {
	t.Chdir(t.TempDir())
	remote := filepath.Join(t.TempDir(), "app.git")
	bare(t, remote)
	bin := self(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--etcd-endpoints", "not a url"}, "--etcd-endpoints: "},
		{[]string{"--etcd-endpoints", "http://127.0.0.1:2379"}, "needs one of --remote-url URL"},
		{[]string{"--etcd-endpoints", "http://127.0.0.1:2379", "--remote-url", "git@h:a.git", "--key-space", "k"}, "takes one of --remote-url"},
		{[]string{"--url-base", "git@h:"}, "--url-base goes with --server-root"},
		{[]string{"--etcd-user", "wt"}, "go with --etcd-endpoints"},
		{[]string{"--etcd-endpoints", "http://127.0.0.1:2379", "--key-space", "a b"}, "is not a key space id"},
		{[]string{"--etcd-endpoints", "http://127.0.0.1:2379", "--key-space", "k", "--branch-prefix", "refs/heads/wt/"}, "--branch-prefix"},
		{[]string{"--server-root", remote, "--remote-url", "git@h:a.git"}, "give --url-base URL"},
		{[]string{"--server-root", remote, "--etcd-endpoints", "http://127.0.0.1:2379"}, "needs --url-base URL"},
		{[]string{"--binary", "wt-hook"}, "is not an absolute path"},
	} {
		env := jsonRun(t, textout.ExitUsage, decision.Usage, append([]string{"-C", remote, "install", "--server", "--binary", bin}, tc.args...)...)
		if !strings.Contains(str(env.Error, "message"), tc.want) {
			t.Errorf("%q: %v, want %q", tc.args, env.Error, tc.want)
		}
	}
	if cfg := fence(t, remote); cfg != "" {
		t.Errorf("a refused install configured a fence:\n%s", cfg)
	}
	if _, err := os.Stat(filepath.Join(remote, "hooks", "pre-receive")); !os.IsNotExist(err) {
		t.Errorf("a refused install wrote pre-receive: %v", err)
	}
	jsonRun(t, textout.ExitRefused, decision.NotAGitRepository, "-C", gittest.Outside(t), "install", "--server", "--binary", bin)
}

// TestServerRootFencesEveryRepositoryUnderIt: install --server
// --server-root fences each bare repository under the root (not those in
// dot directories) and writes the template for those made later.
func TestServerRootFencesEveryRepositoryUnderIt(t *testing.T) {
	t.Chdir(t.TempDir())
	root := t.TempDir()
	for _, name := range []string{"team/app.git", "team/lib.git", ".hidden/skip.git"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		bare(t, filepath.Join(root, name))
	}
	env := jsonRun(t, textout.ExitOK, decision.HooksInstalled, "install", "--server", "--server-root", root, "--binary", self(t))
	repos, _ := env.Decision["repositories"].([]any)
	if len(repos) != 2 || str(env.Decision, "template") != filepath.Join(root, templateDirName) {
		t.Fatalf("install --server-root: %v", env.Decision)
	}
	for _, name := range []string{"team/app.git", "team/lib.git"} {
		if cfg := fence(t, filepath.Join(root, name)); !strings.Contains(cfg, "wt.fence.local true") {
			t.Errorf("%s: fence config:\n%s", name, cfg)
		}
	}
	if cfg := fence(t, filepath.Join(root, ".hidden/skip.git")); cfg != "" {
		t.Errorf("a repository in a dot directory was fenced:\n%s", cfg)
	}
	if _, err := os.Stat(filepath.Join(root, templateDirName, "hooks", "pre-receive")); err != nil {
		t.Errorf("template: %v", err)
	}
	r := hook(t, "install", "--server", "--server-root", root, "--binary", self(t))
	if r.exit != 0 || !strings.Contains(r.stdout, "wt-hook: 2 repositories fenced under ") || !strings.Contains(r.stdout, "init.templateDir") {
		t.Errorf("exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	jsonRun(t, textout.ExitRefused, decision.InvalidTarget, "install", "--server", "--server-root", filepath.Join(root, "nowhere"), "--binary", self(t))
}

// TestPreReceiveFencesTaskBranches: in a fenced remote a push to a task
// branch needs a token (FLEET_FENCED without one, INVALID_HOOK_INPUT for
// a malformed one, and a token the remote never granted is not current);
// other branches pass; a remote whose fence is not configured refuses
// task branches, token or not (fail closed). In local mode the newest
// grant's token, with its live holder, passes, and post-receive records
// it: an older grant's token is stale after. (It sets the push options'
// environment: not parallel.)
func TestPreReceiveFencesTaskBranches(t *testing.T) {
	t.Chdir(t.TempDir())
	remote := filepath.Join(t.TempDir(), "app.git")
	base := bare(t, remote)
	zero := strings.Repeat("0", 40)
	task := zero + " " + base + " refs/heads/wt/T-1\n"
	main := base + " " + base + " refs/heads/main\n"

	token := fleet.FenceToken("T-1", 7, strings.Repeat("ab", 16))

	// Not fenced yet: a task branch is refused, with a token too (whose
	// currency nothing can say); main passes.
	stdin(t, task)
	jsonRun(t, textout.ExitRefused, decision.FleetFenced, "-C", remote, "run", "pre-receive")
	t.Setenv("GIT_PUSH_OPTION_COUNT", "1")
	t.Setenv("GIT_PUSH_OPTION_0", token)
	stdin(t, task)
	env := jsonRun(t, textout.ExitRefused, decision.FleetUnreachable, "-C", remote, "run", "pre-receive")
	if !strings.Contains(str(env.Error, "message"), "the fence of this remote is not configured") {
		t.Errorf("unfenced: %v", env.Error)
	}
	stdin(t, main)
	if r := hook(t, "-C", remote, "run", "pre-receive"); r.exit != 0 {
		t.Errorf("main in an unfenced remote: exit %d: %s", r.exit, r.stderr)
	}
	t.Setenv("GIT_PUSH_OPTION_COUNT", "0")

	jsonRun(t, textout.ExitOK, decision.HooksInstalled, "-C", remote, "install", "--server", "--binary", self(t))
	stdin(t, task)
	env = jsonRun(t, textout.ExitRefused, decision.FleetFenced, "-C", remote, "run", "pre-receive")
	if !strings.Contains(str(env.Error, "message"), "carries no fencing token") {
		t.Errorf("no token: %v", env.Error)
	}
	stdin(t, "not a ref line\n")
	jsonRun(t, textout.ExitRefused, decision.InvalidHookInput, "-C", remote, "run", "pre-receive")
	stdin(t, main)
	if r := hook(t, "-C", remote, "run", "pre-receive"); r.exit != 0 {
		t.Errorf("main: exit %d: %s", r.exit, r.stderr)
	}

	t.Setenv("GIT_PUSH_OPTION_COUNT", "1")
	t.Setenv("GIT_PUSH_OPTION_0", fleet.FenceOption+"=T-1@x")
	stdin(t, task)
	jsonRun(t, textout.ExitRefused, decision.InvalidHookInput, "-C", remote, "run", "pre-receive")
	// A token without the holder of its lease: copied out of a run.
	t.Setenv("GIT_PUSH_OPTION_0", token)
	stdin(t, task)
	env = jsonRun(t, textout.ExitRefused, decision.FleetFenced, "-C", remote, "run", "pre-receive")
	if !strings.Contains(str(env.Error, "message"), "names no lease holder beside its token") {
		t.Errorf("no holder: %v", env.Error)
	}

	// The writer's push: a token of now and its holder, this process
	// (live). It passes, and post-receive records its grant as the
	// newest, after which an older grant's token is stale.
	id, err := proc.Self()
	if err != nil {
		t.Skip("this process cannot be described:", err)
	}
	now := time.Now().UnixNano()
	secret := strings.Repeat("cd", 16)
	t.Setenv("GIT_PUSH_OPTION_COUNT", "2")
	t.Setenv("GIT_PUSH_OPTION_0", fleet.FenceToken("T-1", now, secret))
	t.Setenv("GIT_PUSH_OPTION_1", fleet.HolderOption+"="+fleet.HolderValue(id))
	stdin(t, task)
	if r := hook(t, "-C", remote, "run", "pre-receive"); r.exit != 0 {
		t.Fatalf("the writer's push: exit %d: %s", r.exit, r.stderr)
	}
	stdin(t, task)
	if r := hook(t, "-C", remote, "run", "post-receive"); r.exit != 0 {
		t.Fatalf("post-receive: exit %d: %s", r.exit, r.stderr)
	}
	t.Setenv("GIT_PUSH_OPTION_0", fleet.FenceToken("T-1", now-1, secret))
	stdin(t, task)
	env = jsonRun(t, textout.ExitRefused, decision.FleetFenced, "-C", remote, "run", "pre-receive")
	if !strings.Contains(str(env.Error, "message"), "stale or forged fencing token") || !strings.Contains(str(env.Error, "message"), "a newer grant of the task") {
		t.Errorf("an older grant: %v", env.Error)
	}
	// The newest grant's epoch with another secret is forged.
	t.Setenv("GIT_PUSH_OPTION_0", fleet.FenceToken("T-1", now, strings.Repeat("ef", 16)))
	stdin(t, task)
	jsonRun(t, textout.ExitRefused, decision.FleetFenced, "-C", remote, "run", "pre-receive")
	// A malformed holder is bad input.
	t.Setenv("GIT_PUSH_OPTION_0", fleet.FenceToken("T-1", now, secret))
	t.Setenv("GIT_PUSH_OPTION_1", fleet.HolderOption+"=nobody")
	stdin(t, task)
	jsonRun(t, textout.ExitRefused, decision.InvalidHookInput, "-C", remote, "run", "pre-receive")
}
