//go:build wt_network

package interop_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
// after gitolite's full setup (its rebuild) the fence still refuses; a
// rewind of main stays refused by gitolite's own rule and a confined
// agent's push lands. In a repository with a repo-specific hook of its own
// (deny-main), install goes through gitolite's repo-specific hooks: both
// hold, across gitolite's setup.
func TestGitoliteFence(t *testing.T) {
	for _, p := range []string{"gitolite", "/usr/sbin/sshd", "ssh-keygen", "su"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s is not installed (interop/run.sh installs gitolite3 and openssh-server): %v", p, err)
		}
	}
	// A directory the gitolite user can read: the wt binaries its hooks
	// run, and the admin's public key.
	top, bin, sh := serverBins(t, "wt-gitolite-")
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
	edited = strings.Replace(edited, `# 'repo-specific-hooks',`, `'repo-specific-hooks',`, 1)
	if edited == string(rc) || !strings.Contains(edited, "LOCAL_CODE => ") || !strings.Contains(edited, "advertisePushOptions") || !strings.Contains(edited, "\n            'repo-specific-hooks',") {
		t.Fatalf("this gitolite's rc does not read as 3.6's: the recipe's lines were not placed\n%s", rc)
	}
	if err := os.WriteFile(rcPath, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	// A repository's own repo-specific hook (gitolite's way of giving one
	// repository a pre-receive): main takes no pushes.
	as(true, `mkdir -p local/hooks/repo-specific &&
printf '#!/bin/sh\nwhile read o n r; do [ "$r" = refs/heads/main ] && { echo "deny-main: main is protected" >&2; exit 1; }; done; exit 0\n' > local/hooks/repo-specific/deny-main &&
chmod 755 local/hooks/repo-specific/deny-main`)
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
	run := clientRunner(t, sh, bin, work, "GIT_SSH_COMMAND=ssh -i "+filepath.Join(top, "admin")+fmt.Sprintf(" -p %d", port)+" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR")
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
	// main may not be rewound (gitolite's own rule), task branches may.
	b = append(b, []byte("\nrepo app\n    RW main = admin\n    RW+ wt/ = admin\n    config receive.advertisePushOptions = true\n    config wt.fence.local = true\n    config wt.fence.keyspace = app\n    config wt.fence.branchprefix = wt/\n")...)
	b = append(b, []byte("\nrepo spec\n    RW+ = admin\n    option hook.pre-receive = deny-main\n")...)
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

	// rogueIn commits in worktree w with hooks off and pushes to its task
	// branch without the token: refused.
	rogueIn := func(w, task, msg string) {
		t.Helper()
		run(w, true, "git", "-c", "core.hooksPath=/dev/null", "commit", "-q", "--allow-empty", "-m", msg)
		if out := run(w, false, "git", "-c", "core.hooksPath=/dev/null", "push", "origin", "HEAD:refs/heads/wt/"+task); !strings.Contains(out, "FLEET_FENCED") {
			t.Fatalf("%s: a push to wt/%s without the token:\n%s", msg, task, out)
		}
	}
	rogue := func(msg string) { t.Helper(); rogueIn(w, "T-1", msg) }
	// gitolite's own rule holds: main is not rewound.
	run(repo, true, "git", "commit", "-q", "--allow-empty", "-m", "second")
	run(repo, true, "git", "-c", "core.hooksPath=/dev/null", "push", "-q", "origin", "main")
	if out := run(repo, false, "git", "-c", "core.hooksPath=/dev/null", "push", "--force", "origin", "HEAD~1:refs/heads/main"); !strings.Contains(out, "DENIED") {
		t.Fatalf("a rewind of main was not refused by gitolite:\n%s", out)
	}
	rogue("rogue")
	run(w, true, "wt-exec", "--", "sh", "-c", "git commit -q --allow-empty -m held && git push -q origin HEAD:refs/heads/wt/T-1")
	run(w, true, "wt-exec", "--", "wt-exec", "--", "sh", "-c", "git commit -q --allow-empty -m nested && git push -q origin HEAD:refs/heads/wt/T-1")
	if got := strings.TrimSpace(as(true, "git --git-dir repositories/app.git log -1 --format=%s wt/T-1")); got != "nested" {
		t.Fatalf("wt/T-1 on gitolite is at %q, not the nested run's commit", got)
	}
	run(w, true, "wt-exec", "--confine", "--", "sh", "-c", "git commit -q --allow-empty -m confined && git push -q origin HEAD:refs/heads/wt/T-1")
	if got := strings.TrimSpace(as(true, "git --git-dir repositories/app.git log -1 --format=%s wt/T-1")); got != "confined" {
		t.Fatalf("wt/T-1 on gitolite is at %q, not the confined run's commit", got)
	}
	// gitolite's full setup rewrites the hooks: the fence stays.
	as(true, "gitolite setup")
	rogue("rogue after gitolite setup")
	// (Where the rc does not enable repo-specific hooks, install in a
	// repository gitolite manages refuses: server-gitolite.txtar.)

	// A repository with a repo-specific hook of its own: install goes
	// through gitolite's repo-specific hooks and prints the conf lines;
	// with them pushed, gitolite runs both, and keeps both across setup.
	out := as(true, "cd repositories/spec.git && "+bin+"/wt-hook install --server --binary "+bin+"/wt-hook")
	for _, want := range []string{"repo spec", "option hook.pre-receive = wt-fence-pre-receive deny-main", "option hook.post-receive = wt-fence-post-receive"} {
		if !strings.Contains(out, want) {
			t.Fatalf("install --server in a repository with repo-specific hooks does not print %q:\n%s", want, out)
		}
	}
	b, _ = os.ReadFile(conf)
	b = []byte(strings.Replace(string(b), "    option hook.pre-receive = deny-main\n", "    option hook.pre-receive = wt-fence-pre-receive deny-main\n    option hook.post-receive = wt-fence-post-receive\n", 1))
	os.WriteFile(conf, b, 0o644)
	run(admin, true, "git", "commit", "-q", "-am", "spec, fenced through repo-specific hooks")
	run(admin, true, "git", "push", "-q", "origin", "master")
	if st := as(true, "cd repositories/spec.git && "+bin+"/wt-hook status --server"); !regexp.MustCompile(`(?m)^pre-receive +gitolite-repo-specific +wt shim`).MatchString(st) ||
		!regexp.MustCompile(`(?m)^post-receive +gitolite-repo-specific +wt shim`).MatchString(st) {
		t.Fatalf("status --server after gitolite linked the shims:\n%s", st)
	}
	spec, ws := filepath.Join(work, "spec"), filepath.Join(work, "ws")
	run(work, true, "git", "init", "-q", "-b", "main", spec)
	run(spec, true, "git", "commit", "-q", "--allow-empty", "-m", "init")
	run(spec, true, "git", "remote", "add", "origin", glUser+"@127.0.0.1:spec")
	if out := run(spec, false, "git", "-c", "core.hooksPath=/dev/null", "push", "origin", "main"); !strings.Contains(out, "deny-main: main is protected") {
		t.Fatalf("the repository's own deny-main did not refuse main:\n%s", out)
	}
	run(spec, true, "wt-admin", "init")
	run(spec, true, "wt-admin", "policy", "--fleet-server-fence", "on")
	run(spec, true, "wt-admin", "allocate", "--task", "T-2", "--owner", "alice", ws)
	rogueIn(ws, "T-2", "rogue")
	run(ws, true, "wt-exec", "--", "sh", "-c", "git commit -q --allow-empty -m held && git push -q origin HEAD:refs/heads/wt/T-2")
	if got := strings.TrimSpace(as(true, "git --git-dir repositories/spec.git log -1 --format=%s wt/T-2")); got != "held" {
		t.Fatalf("wt/T-2 on gitolite is at %q, not the holder's commit", got)
	}
	as(true, "gitolite setup")
	rogueIn(ws, "T-2", "rogue after gitolite setup")
}
