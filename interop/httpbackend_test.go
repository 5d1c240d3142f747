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

// TestHTTPBackendTwoUsers runs wt's local fence behind git http-backend
// served by a real lighttpd that runs it as www-data, on a repository
// that a second server user (wt-interop-a, as over ssh) pushes too,
// shared through a group as docs/forges.md says. The repository's own
// pre-receive (main takes no pushes) keeps refusing; a task branch push
// without the token is refused; the holder's push, its nested wt-exec's
// and a confined agent's land over HTTP; the other user's push of another
// task lands; and the next HTTP push still lands in the record both users
// wrote. Every client push here runs with its hooks off.
func TestHTTPBackendTwoUsers(t *testing.T) {
	lighttpd, err := exec.LookPath("lighttpd")
	if err != nil {
		t.Fatalf("lighttpd is not installed (interop/run.sh installs it): %v", err)
	}
	backend := "/usr/lib/git-core/git-http-backend"
	if out, err := exec.Command("git", "--exec-path").Output(); err == nil {
		backend = filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	}
	top, bin, sh := serverBins(t, "wt-http-")
	// The two server users, sharing the repository through a group.
	const group, other = "wt-interop-share", "wt-interop-a"
	sharingGroup(sh, group, other, "www-data")
	srv := filepath.Join(top, "srv")
	remote := filepath.Join(srv, "app.git")
	sh(top, true, nil, "git", "init", "-q", "--bare", "--shared=group", "-b", "main", remote)
	sh(top, true, nil, "git", "--git-dir", remote, "config", "http.receivepack", "true")
	// The server's own rule, there before wt: main takes no pushes.
	os.WriteFile(filepath.Join(remote, "hooks", "pre-receive"), []byte("#!/bin/sh\nwhile read o n r; do [ \"$r\" = refs/heads/main ] && { echo \"main is protected here\" >&2; exit 1; }; done; exit 0\n"), 0o755)
	sh(top, true, nil, "chown", "-R", "www-data:"+group, srv)
	sh(top, true, nil, "chmod", "g+ws", srv)
	// Installed as the user the web server runs git as.
	if out := sh("/", true, nil, "su", "-s", "/bin/sh", "www-data", "-c", "cd "+remote+" && "+bin+"/wt-hook install --server"); !strings.Contains(out, "pre-receive.wt-chained") {
		t.Fatalf("install --server did not keep the server's pre-receive:\n%s", out)
	}

	// lighttpd, as git's documentation configures it for http-backend.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	conf := filepath.Join(top, "lighttpd.conf")
	os.WriteFile(conf, []byte(fmt.Sprintf(`server.document-root = %[1]q
server.port = %[2]d
server.bind = "127.0.0.1"
server.username = "www-data"
server.groupname = %[3]q
server.modules = ("mod_alias", "mod_cgi", "mod_setenv")
server.errorlog = %[4]q
alias.url = ("/git" => %[5]q)
$HTTP["url"] =~ "^/git" {
	cgi.assign = ("" => "")
	setenv.add-environment = ("GIT_PROJECT_ROOT" => %[1]q, "GIT_HTTP_EXPORT_ALL" => "")
}
`, srv, port, group, filepath.Join(top, "lighttpd.log"), backend)), 0o644)
	// lighttpd opens its log as www-data.
	os.WriteFile(filepath.Join(top, "lighttpd.log"), nil, 0o644)
	sh(top, true, nil, "chown", "www-data", filepath.Join(top, "lighttpd.log"))
	web := exec.Command(lighttpd, "-D", "-f", conf)
	webOut, _ := os.Create(filepath.Join(top, "lighttpd.out"))
	web.Stdout, web.Stderr = webOut, webOut
	if err := web.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Process.Kill(); web.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d/git/app.git", port)

	work := t.TempDir()
	run := clientRunner(t, sh, bin, work)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c := exec.Command("git", "ls-remote", url)
		if out, err := c.CombinedOutput(); err == nil {
			break
		} else if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(top, "lighttpd.log"))
			o, _ := os.ReadFile(filepath.Join(top, "lighttpd.out"))
			t.Fatalf("git http-backend behind lighttpd does not answer: %v\n%s\n%s\n%s", err, out, b, o)
		}
	}

	repo, w := filepath.Join(work, "repo"), filepath.Join(work, "w1")
	run(work, true, "git", "init", "-q", "-b", "main", repo)
	run(repo, true, "git", "commit", "-q", "--allow-empty", "-m", "init")
	run(repo, true, "git", "remote", "add", "origin", url)
	// The server's own rule holds.
	if out := run(repo, false, "git", "-c", "core.hooksPath=/dev/null", "push", "origin", "main"); !strings.Contains(out, "main is protected here") {
		t.Fatalf("a push to main was not refused by the server's own pre-receive:\n%s", out)
	}
	run(repo, true, "wt-admin", "init")
	run(repo, true, "wt-admin", "policy", "--fleet-server-fence", "on")
	run(repo, true, "wt-admin", "allocate", "--task", "T-1", "--owner", "alice", w)
	// The fence holds.
	run(w, true, "git", "-c", "core.hooksPath=/dev/null", "commit", "-q", "--allow-empty", "-m", "rogue")
	if out := run(w, false, "git", "-c", "core.hooksPath=/dev/null", "push", "origin", "HEAD:refs/heads/wt/T-1"); !strings.Contains(out, "FLEET_FENCED") {
		t.Fatalf("a task branch push without the token:\n%s", out)
	}
	tip := func(branch string) string {
		t.Helper()
		return strings.TrimSpace(sh(top, true, nil, "git", "--git-dir", remote, "log", "-1", "--format=%s", branch))
	}
	// The holder's, its nested wt-exec's and a confined agent's land.
	for _, c := range []struct{ msg, wrap string }{{"held", "wt-exec --"}, {"nested", "wt-exec -- wt-exec --"}, {"confined", "wt-exec --confine --"}} {
		run(w, true, "sh", "-c", c.wrap+" sh -c 'git -c core.hooksPath=/dev/null commit -q --allow-empty -m "+c.msg+" && git -c core.hooksPath=/dev/null push -q origin HEAD:refs/heads/wt/T-1'")
		if got := tip("wt/T-1"); got != c.msg {
			t.Fatalf("wt/T-1 behind http-backend is at %q, not the %s run's commit", got, c.msg)
		}
	}

	// The other server user pushes another task, on this machine.
	script := fmt.Sprintf(`set -e
export PATH=%[1]s:$PATH GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@wt.invalid GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@wt.invalid
git config --global safe.directory '*'
rm -rf c w
git init -q -b main c && git -C c commit -q --allow-empty -m init
wt-admin --repo c init >/dev/null && wt-admin --repo c policy --fleet-server-fence on >/dev/null
wt-admin --repo c allocate --task T-2 --owner a w >/dev/null
wt-exec -C w -- sh -c 'git commit -q --allow-empty -m "from a" && git -c core.hooksPath=/dev/null push -q %[2]s HEAD:refs/heads/wt/T-2'
`, bin, remote)
	if out, err := exec.Command("su", "-", other, "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("%s's push of T-2: %v\n%s", other, err, out)
	}
	if got := tip("wt/T-2"); got != "from a" {
		t.Fatalf("wt/T-2 is at %q, not %s's commit", got, other)
	}
	// And HTTP again, in the record both users have written.
	run(w, true, "wt-exec", "--", "sh", "-c", "git -c core.hooksPath=/dev/null commit -q --allow-empty -m again && git -c core.hooksPath=/dev/null push -q origin HEAD:refs/heads/wt/T-1")
	if got := tip("wt/T-1"); got != "again" {
		t.Fatalf("after %s's push, wt/T-1 behind http-backend is at %q", other, got)
	}
	st, err := os.Stat(filepath.Join(remote, "wt-fence"))
	if err != nil || st.Mode()&0o070 != 0o070 {
		t.Fatalf("the fence record directory is not the group's: %v", err)
	}
}
