package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDemo runs `make demo`'s script with the built binaries: it ends 0,
// and the commands it prints keep their quotes (a printed command runs
// when copied).
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo")
	}
	t.Parallel()
	script, err := filepath.Abs("../../../scripts/demo.sh")
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, t.TempDir(), "bash", script).ok(t)
	if !strings.Contains(r.stdout, "--reason 'looks stuck' --operator") {
		t.Fatalf("the demo prints the abandon command without its quotes:\n%s", r.stdout)
	}
}
