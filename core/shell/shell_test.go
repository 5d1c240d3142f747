package shell

import (
	"os/exec"
	"testing"
)

// TestRoundTrip: every value comes back exactly from a real sh, as one
// word, whatever it holds; Unquote inverts Quote and nothing else.
func TestRoundTrip(t *testing.T) {
	for _, s := range []string{"/usr/bin/wt-hook", "../my w1", "bob; touch PWNED", "it's", "$HOME`x`\\n\"q\"", "", "a\nb", "-x", "''"} {
		out, err := exec.Command("sh", "-c", `printf '%s|' `+Word(s)+` `+Quote(s)).Output()
		if err != nil || string(out) != s+"|"+s+"|" {
			t.Errorf("%q: sh printed %q (%v)", s, out, err)
		}
		if back, ok := Unquote(Quote(s)); !ok || back != s {
			t.Errorf("Unquote(Quote(%q)) = %q %v", s, back, ok)
		}
	}
	for _, bad := range []string{"", "'", "abc", "'a'b'", "'a'\\''"} {
		if _, ok := Unquote(bad); ok {
			t.Errorf("Unquote(%q) accepted", bad)
		}
	}
	if got := Words("wt-admin", "resume", "../my w1", "--owner", "bob; x"); got != `wt-admin resume '../my w1' --owner 'bob; x'` {
		t.Errorf("Words: %s", got)
	}
}
