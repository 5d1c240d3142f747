package alloc

import "testing"

func TestSimilarKeys(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"T-1", "t-1", true},
		{"T-1", "T-01", true},
		{"T-1", "T-001", true},
		{"T-10", "T-010", true},
		{"T-1", "T1", true},
		{"fix-login", "fix-logn", true},
		{"fix-login", "fix-logon", true},
		{"T-1", "T-2", false},
		{"T-1", "T-12", false},
		{"T-10", "T-1", false},
		{"T-1", "T-1", false},
		{"a", "b", false},
		{"api", "ui", false},
		{"T-100", "T-10", false},
		{"R-1", "T-1", false},
		{"I-1", "T-1", false},
		{"T_1", "T-1", true},
		{"team/T-9", "team-t-9", true},
		// Look-alike characters and transpositions, and two letters
		// dropped from a long key.
		{"T-12", "T-l2", true},
		{"T-10", "T-1O", true},
		{"feature-login", "feature-lgoin", true},
		{"feature-login", "featur-logn", true},
		{"fix-login", "fix-lgoin", true},
		// Still different tasks: a digit changed or swapped, short keys
		// one letter apart, long keys two letters replaced.
		{"T-12", "T-21", false},
		{"T-12", "T-13", false},
		{"api-v2", "api-v3", false},
		{"fix-auth-bug", "fix-path-bug", false},
		{"feature-login", "feature-logout", false},
	} {
		if got := SimilarKeys(c.a, c.b); got != c.want {
			t.Errorf("SimilarKeys(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
