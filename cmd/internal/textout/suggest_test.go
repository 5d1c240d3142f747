package textout

import "testing"

func TestDidYouMean(t *testing.T) {
	names := []string{"install", "uninstall", "status", "task", "owner"}
	for _, tc := range []struct{ typed, want string }{
		{"instal", " (did you mean install?)"},
		{"tsk", " (did you mean task?)"},
		{"stat", " (did you mean status?)"},
		{"x", ""},
		{"completely-else", ""},
	} {
		if got := DidYouMean(tc.typed, names, ""); got != tc.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", tc.typed, got, tc.want)
		}
	}
	if d := distance("kitten", "sitting"); d != 3 {
		t.Errorf("distance = %d", d)
	}
}
