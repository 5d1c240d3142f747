package e2e

import (
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFenceSmartHTTP: the remote's fence behind git's smart HTTP, for
// real: git http-backend (as a CGI program, as a web server runs it) in
// front of a bare repository with wt-hook install --server (local mode).
// Push options travel over HTTP; a task branch push without the token is
// refused and the refusal reaches the pusher; the holder's push, and its
// nested wt-exec's, land; the post-receive record is made by the server.
func TestFenceSmartHTTP(t *testing.T) {
	backend, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	top, repo, wts := governed(t, 1)
	srv := filepath.Join(top, "srv")
	remote := filepath.Join(srv, "app.git")
	git(t, top, "init", "-q", "--bare", "-b", "main", remote)
	git(t, remote, "config", "http.receivepack", "true")
	run(t, remote, "wt-hook", "install", "--server").ok(t)
	h := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(backend)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + srv, "GIT_HTTP_EXPORT_ALL=1"},
		// The hooks run in the server's environment: wt-hook is found
		// where install recorded it, and git where PATH has it.
		InheritEnv: []string{"PATH", "HOME", "GORACE", "TMPDIR"},
	}
	web := httptest.NewServer(h)
	defer web.Close()
	url := web.URL + "/app.git"
	git(t, repo, "remote", "add", "origin", url)
	git(t, repo, "push", "-q", "origin", "main")
	run(t, repo, "wt-admin", "policy", "--fleet-server-fence", "on").ok(t)

	const ident = "export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@wt.invalid GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@wt.invalid; "
	git(t, wts[0], "-c", "core.hooksPath=/dev/null", "commit", "-q", "--allow-empty", "-m", "rogue")
	r := run(t, wts[0], "git", "-c", "core.hooksPath=/dev/null", "push", "--no-verify", "origin", "HEAD:refs/heads/wt/T-0")
	if r.code == 0 || !strings.Contains(r.stderr, "remote: wt-hook: refused: FLEET_FENCED") {
		t.Fatalf("a push without the token over HTTP: exit %d\n%s", r.code, r.stderr)
	}
	run(t, wts[0], "wt-exec", "--", "sh", "-c", ident+"git commit -q --allow-empty -m held && git push -q origin HEAD:refs/heads/wt/T-0").ok(t)
	run(t, wts[0], "wt-exec", "--", "wt-exec", "--", "sh", "-c", ident+"git commit -q --allow-empty -m nested && git push -q origin HEAD:refs/heads/wt/T-0").ok(t)
	if got := git(t, remote, "log", "-1", "--format=%s", "wt/T-0"); got != "nested" {
		t.Fatalf("wt/T-0 on the server is at %q, not the nested run's commit", got)
	}
	if m, _ := filepath.Glob(filepath.Join(remote, "wt-fence", "*.json")); len(m) != 1 {
		t.Fatalf("the server recorded %d fence records, want 1", len(m))
	}
}
