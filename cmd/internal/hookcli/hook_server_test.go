package hookcli

import (
	"testing"

	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/hooks"
)

// TestKeySpaceUnderForge: a repository fenced without a key space of its
// own (a --server-root template, or gitolite's config lines for @all)
// takes its key space from the name the forge gives its hooks, the name
// clients put after the forge's URL, before its path on disk.
func TestKeySpaceUnderForge(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	ssh := hooks.ServerFence{URLBase: "git@git.example.com:"}
	https := hooks.ServerFence{URLBase: "https://git.example.com", Root: "/srv/gitea/repos"}
	for _, c := range []struct {
		name   string
		f      hooks.ServerFence
		gitDir string
		env    func(string) string
		client string // the URL a client names the remote by; "" for no key space
	}{
		{"gitolite's GL_REPO", ssh, "/home/git/repositories/team/app.git", env("GL_REPO", "team/app"), "git@git.example.com:team/app.git"},
		{"Gitea's owner and name, any case", https, "/srv/gitea/repos/team/app.git", env("GITEA_REPO_USER_NAME", "Team", "GITEA_REPO_NAME", "App"), "https://git.example.com/team/app"},
		{"Gitea's name before its path", https, "/srv/gitea/repos/old/app.git", env("GITEA_REPO_USER_NAME", "new", "GITEA_REPO_NAME", "app"), "https://git.example.com/new/app.git"},
		{"the path under the root, outside a forge", https, "/srv/gitea/repos/team/app.git", env(), "https://git.example.com/Team/App.git"},
		{"no name: no root, no forge", ssh, "/home/git/repositories/app.git", env(), ""},
		{"no URL base", hooks.ServerFence{Root: "/srv"}, "/srv/app.git", env("GL_REPO", "app"), ""},
	} {
		got := keySpaceUnder(c.f, c.gitDir, c.env)
		want := ""
		if c.client != "" {
			want = fleet.RemoteID(c.client)
		}
		if got != want {
			t.Errorf("%s: key space %q, want %q (the client's, from %q)", c.name, got, want, c.client)
		}
	}
}
