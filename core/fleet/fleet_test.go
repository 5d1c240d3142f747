package fleet

import (
	"os"
	"path/filepath"
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
	if RemoteIDIn("https://gitlab.example.com/Acme/App", "") == RemoteIDIn("https://gitlab.example.com/acme/app", "") {
		t.Error("a host not known to fold case folded the path")
	}
}
