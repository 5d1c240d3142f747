package hookspec

import (
	"strings"
	"testing"
)

// TestClient: each hook once, its arguments named as many as git passes,
// and FormOf finds exactly the table's.
func TestClient(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Client {
		if seen[f.Name] {
			t.Errorf("%s is in the table twice", f.Name)
		}
		seen[f.Name] = true
		if n := len(strings.Fields(f.ArgsUsage)); n != f.Args {
			t.Errorf("%s: ArgsUsage %q names %d arguments, git passes %d", f.Name, f.ArgsUsage, n, f.Args)
		}
		if got, ok := FormOf(f.Name); !ok || got != f {
			t.Errorf("FormOf(%s) = %v, %v", f.Name, got, ok)
		}
	}
	if _, ok := FormOf("pre-receive"); ok {
		t.Error("FormOf finds a hook that is not a client hook of wt's")
	}
}
