package fleet

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNormalizeURL: every form of one remote gives one key space; another
// remote another.
func TestNormalizeURL(t *testing.T) {
	same := []string{
		"https://github.com/acme/app.git",
		"https://GitHub.com/acme/app/",
		"ssh://git@github.com:22/acme/app.git",
		"git@github.com:acme/app.git",
		"github.com:acme/app",
		"https://github.com/Acme/App.git",
		"git@GitHub.com:ACME/app",
	}
	for _, u := range same {
		if got := NormalizeURL(u); got != "github.com/acme/app" {
			t.Errorf("NormalizeURL(%q) = %q", u, got)
		}
		if RemoteID(u) != RemoteID(same[0]) {
			t.Errorf("RemoteID(%q) differs", u)
		}
	}
	if RemoteID("https://github.com/acme/other") == RemoteID(same[0]) {
		t.Error("two remotes share a key space")
	}
	for _, p := range []string{"/srv/git/app.git", "/srv/git/app/", "file:///srv/git/app.git", "/srv/git/./app.git"} {
		if got := NormalizeURL(p); got != "/srv/git/app" {
			t.Errorf("NormalizeURL(%q) = %q", p, got)
		}
	}
	if len(RemoteID("x")) != 16 || Key("abc", "T-1") != "wt/abc/tasks/T-1" {
		t.Errorf("key space: %q %q", RemoteID("x"), Key("abc", "T-1"))
	}
}

// TestRemoteIDIn: a local remote named through a symlink, by a path
// relative to the repository, or with and without its .git, is one key
// space; a relative path is resolved against the repository, not the
// working directory.
func TestRemoteIDIn(t *testing.T) {
	dir := t.TempDir()
	remote := filepath.Join(dir, "srv", "remote.git")
	repo := filepath.Join(dir, "work", "repo")
	for _, d := range []string{remote, repo} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(remote, filepath.Join(dir, "link.git")); err != nil {
		t.Fatal(err)
	}
	want := RemoteIDIn(remote, repo)
	for _, u := range []string{"../../srv/remote.git", "../../srv/remote", filepath.Join(dir, "link.git"), filepath.Join(dir, "link"), "file://" + remote, remote + "/"} {
		if got := RemoteIDIn(u, repo); got != want {
			t.Errorf("RemoteIDIn(%q) = %s (%s), want %s (%s)", u, got, NormalizeURLIn(u, repo), want, NormalizeURLIn(remote, repo))
		}
	}
	if RemoteIDIn("../other.git", repo) == want {
		t.Error("another remote shares the key space")
	}
	if RemoteIDIn(strings.ToUpper(remote), repo) == want {
		t.Error("a local path's case was folded")
	}
}

// TestSpellingCase: a self-hosted forge's URL spelled in another case is
// one key space (every forge folds its paths), unless the server's paths
// are case sensitive.
func TestSpellingCase(t *testing.T) {
	for _, pair := range [][2]string{
		{"https://git.example.com/Team/App.git", "https://git.example.com/team/app"},
		{"git@gitea.internal:Team/App.git", "ssh://git@gitea.internal:2222/team/app"},
	} {
		if RemoteID(pair[0]) != RemoteID(pair[1]) {
			t.Errorf("%s and %s are two key spaces", pair[0], pair[1])
		}
		sensitive := Spelling{CaseSensitive: true}
		if sensitive.RemoteIDIn(pair[0], "") == sensitive.RemoteIDIn(pair[1], "") {
			t.Errorf("case sensitive: %s and %s are one key space", pair[0], pair[1])
		}
	}
}

// TestSpellingSSHAlias: an ssh host alias (~/.ssh/config's Host with a
// HostName) is the host it connects to, as git's ssh command resolves it.
func TestSpellingSSHAlias(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no ssh here")
	}
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, []byte("Host work\n  HostName git.example.com\n  User git\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sp := Spelling{ResolveHost: SSHResolver(context.Background(), "ssh -F "+cfg)}
	want := sp.RemoteIDIn("git@git.example.com:team/app.git", "")
	for _, u := range []string{"work:team/app.git", "ssh://work/team/app", "git@work:Team/App"} {
		if got := sp.RemoteIDIn(u, ""); got != want {
			t.Errorf("%s: key space %s (%s), want %s", u, got, sp.NormalizeURLIn(u, ""), want)
		}
	}
	if sp.RemoteIDIn("https://work/team/app", "") == want {
		t.Error("an https host was resolved as an ssh alias")
	}
	if (Spelling{}).RemoteIDIn("work:team/app.git", "") == want {
		t.Error("without the resolver the alias is its own key space: the test shows nothing")
	}
}
