package decision

import "testing"

// TestPlural: a count with the noun for it.
func TestPlural(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Plural(0, "change", "changes"), "0 changes"},
		{Plural(1, "change", "changes"), "1 change"},
		{Plural(2, "active allocation", "active allocations"), "2 active allocations"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
