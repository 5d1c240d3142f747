package maint

import "testing"

// TestLockPID: the pid a foreign lock's reason names, in the forms agent
// tools write it; words that merely end in "pid" name none.
func TestLockPID(t *testing.T) {
	for reason, want := range map[string]string{
		"claude agent 7c1e2f (pid 4242)": "4242",
		"locked by ccmanager pid=17":     "17",
		"pid:9":                          "9",
		"rapid 12 builds":                "",
		"in use":                         "",
	} {
		got := ""
		if m := lockPID.FindStringSubmatch(reason); m != nil {
			got = m[1]
		}
		if got != want {
			t.Errorf("lockPID(%q) = %q, want %q", reason, got, want)
		}
	}
}
