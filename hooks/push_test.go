package hooks

import (
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
)

// TestLocalURL: the remotes a confined command may not push to are those
// git reaches by a path on this machine.
func TestLocalURL(t *testing.T) {
	for url, local := range map[string]bool{
		"/srv/git/repo.git": true, "./up.git": true, "../up": true, "file:///srv/repo": true, "repo.git": true,
		"git@github.com:o/r.git": false, "ssh://host/r": false, "https://host/r": false, "host:path/r": false, "sub/dir:x": true,
	} {
		if got := localURL(url); got != local {
			t.Errorf("localURL(%q) = %v, want %v", url, got, local)
		}
	}
	t.Setenv(confinedEnv, "")
	if d := ConfinedLocalPush(".", "origin", "/srv/r"); d != nil {
		t.Errorf("an unconfined push was refused: %v", d)
	}
	t.Setenv(confinedEnv, "1")
	if d := ConfinedLocalPush(".", "origin", "https://host/r"); d != nil {
		t.Errorf("a confined push to the network was refused: %v", d)
	}
	d := ConfinedLocalPush(t.TempDir(), "origin", "/srv/r")
	if d == nil || d.Code != decision.PushLocalRemoteConfined || !strings.Contains(d.Hint, "--no-confine -- git push origin BRANCH") {
		t.Errorf("a confined push to a local path: %v", d)
	}
}
