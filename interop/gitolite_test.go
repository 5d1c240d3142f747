//go:build wt_network

package interop_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// glUser is the system user the gitolite of this test runs as (made when
// missing: interop/run.sh runs as root).
const glUser = "wt-interop-gl"

// TestGitoliteFence runs wt's fence on a real gitolite (Debian's gitolite3,
// 3.6) behind a real OpenSSH server, with the recipe of docs/forges.md:
// wt's hooks in the rc file's LOCAL_CODE as common hooks, the fence's
// configuration as gitolite config lines. A task branch push without the
// token is refused; the holder's push and its nested wt-exec's land;
// after gitolite's full setup (its rebuild) the fence still refuses; and
// wt-hook install --server inside a repository gitolite manages refuses to
// write a hook gitolite would remove.
func TestGitoliteFence(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root: it makes the gitolite user and runs sshd (make interop runs as root)")
	}
	for _, p := range []string{"gitolite", "/usr/sbin/sshd", "ssh-keygen", "su"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s is not installed (interop/run.sh installs gitolite3 and openssh-server): %v", p, err)
		}
	}
	root, _ := filepath.Abs("..")
	// A directory the gitolite user can read: the wt binaries its hooks
	// run, and the admin's public key.
	top, err := os.MkdirTemp("", "wt-gitolite-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	os.Chmod(top, 0o755)
	bin := filepath.Join(top, "bin")
	sh := func(dir string, wantOK bool, env []string, name string, args ...string) string {
		t.Helper()
		c := exec.Command(name, args...)
		c.Dir, c.Env = dir, append(os.Environ(), env...)
		out, err := c.CombinedOutput()
		if (err == nil) != wantOK {
			t.Fatalf("%s %v: %v (want success %v)\n%s", name, args, err, wantOK, out)
		}
		return string(out)
	}
	sh(root, true, []string{"CGO_ENABLED=0"}, "go", "build", "-tags", "urfave_cli_no_docs", "-o", bin+"/", "./cmd/wt-admin", "./cmd/wt-exec", "./cmd/wt-hook", "./cmd/wt-gate")
	sh(top, true, nil, "chmod", "-R", "a+rX", top)
	as := func(wantOK bool, script string) string {
		t.Helper()
		return sh("/", wantOK, nil, "su", "-", glUser, "-c", script)
	}

	// The gitolite user, fresh: its account usable for ssh keys only.
	if err := exec.Command("id", glUser).Run(); err != nil {
		sh("/", true, nil, "useradd", "-m", "-s", "/bin/sh", glUser)
	}
	sh("/", true, nil, "usermod", "-p", "*", glUser)
	home := strings.TrimSpace(as(true, `printf %s "$HOME"`))
	as(true, "rm -rf .gitolite .gitolite.rc repositories local .ssh projects.list")
	sh(top, true, nil, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(top, "admin"))
	sh(top, true, nil, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(top, "hostkey"))
	os.Chmod(filepath.Join(top, "admin.pub"), 0o644)
	as(true, "gitolite setup -pk "+filepath.Join(top, "admin.pub"))

	// docs/forges.md's recipe: LOCAL_CODE and GIT_CONFIG_KEYS in the rc,
	// wt's hooks as common hooks, installed by gitolite.
	rcPath := filepath.Join(home, ".gitolite.rc")
	rc, err := os.ReadFile(rcPath)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(rc), "GIT_CONFIG_KEYS                 =>  '',", `GIT_CONFIG_KEYS => 'wt\..* receive\.advertisePushOptions',`, 1)
	edited = strings.Replace(edited, `# LOCAL_CODE                =>  "$ENV{HOME}/local",`, `LOCAL_CODE => "$ENV{HOME}/local",`, 1)
	if edited == string(rc) || !strings.Contains(edited, "LOCAL_CODE => ") || !strings.Contains(edited, "advertisePushOptions") {
		t.Fatalf("this gitolite's rc does not read as 3.6's: the recipe's lines were not placed\n%s", rc)
	}
	if err := os.WriteFile(rcPath, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	as(true, fmt.Sprintf(`mkdir -p local/hooks/common &&
printf '#!/bin/sh\nexec %[1]s/wt-hook run pre-receive\n' > local/hooks/common/pre-receive &&
printf '#!/bin/sh\nexec %[1]s/wt-hook run post-receive\n' > local/hooks/common/post-receive &&
chmod 755 local/hooks/common/pre-receive local/hooks/common/post-receive &&
gitolite setup --hooks-only`, bin))

	// OpenSSH in front of it, on a free loopback port.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg := filepath.Join(top, "sshd_config")
	os.WriteFile(cfg, []byte(fmt.Sprintf("Port %d\nListenAddress 127.0.0.1\nHostKey %s\nPidFile %s\nAuthorizedKeysFile .ssh/authorized_keys\nStrictModes no\nPasswordAuthentication no\nUsePAM no\n",
		port, filepath.Join(top, "hostkey"), filepath.Join(top, "sshd.pid"))), 0o600)
	os.MkdirAll("/run/sshd", 0o755)
	sshd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", cfg)
	logf, _ := os.Create(filepath.Join(top, "sshd.log"))
	sshd.Stdout, sshd.Stderr = logf, logf
	if err := sshd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sshd.Process.Kill(); sshd.Wait(); logf.Close() })
	work := t.TempDir()
	env := []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + filepath.Join(work, "home"),
		"GIT_SSH_COMMAND=ssh -i " + filepath.Join(top, "admin") + fmt.Sprintf(" -p %d", port) + " -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@wt.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@wt.invalid",
		"WT_CLIENT_ID=", "WT_HOLDER_PID=", "WT_LEASE_ID="}
	run := func(dir string, wantOK bool, name string, args ...string) string {
		t.Helper()
		if strings.HasPrefix(name, "wt-") {
			name = filepath.Join(bin, name)
		}
		return sh(dir, wantOK, env, name, args...)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		c := exec.Command("ssh", "-i", filepath.Join(top, "admin"), "-p", fmt.Sprint(port), "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", glUser+"@127.0.0.1", "info")
		if out, err := c.CombinedOutput(); err == nil && strings.Contains(string(out), "running gitolite3") {
			break
		} else if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(top, "sshd.log"))
			t.Fatalf("gitolite behind sshd does not answer: %v\n%s\n%s", err, out, b)
		}
	}

	// The repository, fenced by gitolite config lines (local mode).
	admin := filepath.Join(work, "gitolite-admin")
	run(work, true, "git", "clone", "-q", glUser+"@127.0.0.1:gitolite-admin", admin)
	conf := filepath.Join(admin, "conf", "gitolite.conf")
	b, _ := os.ReadFile(conf)
	b = append(b, []byte("\nrepo app\n    RW+ = admin\n    config receive.advertisePushOptions = true\n    config wt.fence.local = true\n    config wt.fence.keyspace = app\n    config wt.fence.branchprefix = wt/\n")...)
	os.WriteFile(conf, b, 0o644)
	run(admin, true, "git", "commit", "-q", "-am", "app, fenced by wt")
	run(admin, true, "git", "push", "-q", "origin", "master")

	repo, w := filepath.Join(work, "repo"), filepath.Join(work, "w1")
	run(work, true, "git", "init", "-q", "-b", "main", repo)
	run(repo, true, "git", "commit", "-q", "--allow-empty", "-m", "init")
	run(repo, true, "git", "remote", "add", "origin", glUser+"@127.0.0.1:app")
	run(repo, true, "git", "push", "-q", "origin", "main")
	run(repo, true, "wt-admin", "init")
	run(repo, true, "wt-admin", "policy", "--fleet-server-fence", "on")
	run(repo, true, "wt-admin", "allocate", "--task", "T-1", "--owner", "alice", w)

	rogue := func(msg string) {
		t.Helper()
		run(w, true, "git", "-c", "core.hooksPath=/dev/null", "commit", "-q", "--allow-empty", "-m", msg)
		if out := run(w, false, "git", "-c", "core.hooksPath=/dev/null", "push", "origin", "HEAD:refs/heads/wt/T-1"); !strings.Contains(out, "FLEET_FENCED") {
			t.Fatalf("%s: a task branch push without the token:\n%s", msg, out)
		}
	}
	rogue("rogue")
	run(w, true, "wt-exec", "--", "sh", "-c", "git commit -q --allow-empty -m held && git push -q origin HEAD:refs/heads/wt/T-1")
	run(w, true, "wt-exec", "--", "wt-exec", "--", "sh", "-c", "git commit -q --allow-empty -m nested && git push -q origin HEAD:refs/heads/wt/T-1")
	if got := strings.TrimSpace(as(true, "git --git-dir repositories/app.git log -1 --format=%s wt/T-1")); got != "nested" {
		t.Fatalf("wt/T-1 on gitolite is at %q, not the nested run's commit", got)
	}
	// gitolite's full setup rewrites the hooks: the fence stays.
	as(true, "gitolite setup")
	rogue("rogue after gitolite setup")
	// A hook written straight into a repository gitolite manages: refused.
	if out := as(false, "cd repositories/app.git && "+bin+"/wt-hook install --server"); !strings.Contains(out, "HOOK_CONFLICT: gitolite manages the hooks") {
		t.Fatalf("install --server in a gitolite repository:\n%s", out)
	}
}
