package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/fleet/etcdtest"
)

// TestFleetTLSAndUsers: fleet mode against an etcd that requires TLS
// client certificates and authentication, end to end. wt-exec takes the
// task's fleet lease with the policy's certificate, CA, user and password
// file; the remote's fence checks the token with its own; a push with
// the token lands, one without is refused. Without the user, etcd
// refuses the lease and wt-exec says so (FLEET_UNREACHABLE, fail closed).
// No credential's contents reach the store.
func TestFleetTLSAndUsers(t *testing.T) {
	ep, files := etcdtest.StartTLS(t)
	pw := files.EnableAuth(t, "wt/")
	top, repo, wts := governed(t, 1)
	remote := filepath.Join(top, "remote.git")
	git(t, top, "init", "-q", "--bare", "-b", "main", remote)
	git(t, repo, "remote", "add", "origin", remote)
	git(t, repo, "push", "-q", "origin", "main")

	creds := []string{"--etcd-cert", files.ClientCert, "--etcd-key", files.ClientKey, "--etcd-cacert", files.CA, "--etcd-user", "agent", "--etcd-password-file", pw}
	out := run(t, remote, "wt-hook", append([]string{"install", "--server", "--etcd-endpoints", ep, "--remote-url", remote}, creds...)...).ok(t)
	if !strings.Contains(out.stdout, "user agent (password in "+pw+")") {
		t.Fatalf("install --server does not say how it proves itself to etcd:\n%s", out.stdout)
	}
	run(t, repo, "wt-admin", append([]string{"policy", "--coordinator", "etcd", "--etcd-endpoints", ep, "--fleet-server-fence", "on"}, creds...)...).ok(t)
	pol := run(t, repo, "wt-admin", "policy").ok(t)
	if !strings.Contains(pol.stdout, "etcd_auth") || !strings.Contains(pol.stdout, "user agent") {
		t.Fatalf("policy does not show the credentials it names:\n%s", pol.stdout)
	}

	const ident = "export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@wt.invalid GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@wt.invalid; "
	run(t, wts[0], "wt-exec", "--", "sh", "-c", ident+"git commit -q --allow-empty -m w0 && git push -q --no-verify origin HEAD:refs/heads/wt/T-0").ok(t)
	if got := git(t, remote, "log", "-1", "--format=%s", "wt/T-0"); strings.TrimSpace(got) != "w0" {
		t.Fatalf("the holder's push did not land: %q", got)
	}
	git(t, wts[0], "-c", "core.hooksPath=/dev/null", "commit", "-q", "--allow-empty", "-m", "rogue")
	r := run(t, wts[0], "git", "-c", "core.hooksPath=/dev/null", "push", "--no-verify", "origin", "HEAD:refs/heads/wt/T-0")
	if r.code == 0 || !strings.Contains(r.stderr, "FLEET_FENCED") {
		t.Fatalf("a push without the token: exit %d\n%s", r.code, r.stderr)
	}

	// The certificate alone: etcd takes its common name as the user,
	// which has no role.
	run(t, repo, "wt-admin", "policy", "--etcd-user", "", "--etcd-password-file", "").ok(t)
	r = run(t, wts[0], "wt-exec", "--", "true").refused(t, "FLEET_UNREACHABLE")
	if !strings.Contains(r.stderr, "permission denied") {
		t.Fatalf("the refusal does not say etcd denied the key:\n%s", r.stderr)
	}
	filepath.WalkDir(filepath.Join(repo, ".git", "wt"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, secret := range []string{"agent-secret", "PRIVATE KEY"} {
			if strings.Contains(string(b), secret) {
				t.Errorf("%q is in the store, in %s", secret, p)
			}
		}
		return nil
	})
}
