package fleet

import "testing"

// TestNormalizeURL: every form of one remote gives one key space; another
// remote another.
func TestNormalizeURL(t *testing.T) {
	same := []string{
		"https://github.com/acme/app.git",
		"https://GitHub.com/acme/app/",
		"ssh://git@github.com:22/acme/app.git",
		"git@github.com:acme/app.git",
		"github.com:acme/app",
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
