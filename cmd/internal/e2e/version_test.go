package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
)

// TestVersionStamped builds wt-admin as the Makefile does, with a stamped
// version, and as a plain go build: --version and version --json report
// the stamp, and without one they still report something (never empty).
func TestVersionStamped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	t.Parallel()
	dir := t.TempDir()
	stampedBin, plainBin := filepath.Join(dir, "stamped"), filepath.Join(dir, "plain")
	for _, b := range []struct {
		out   string
		flags []string
	}{
		{stampedBin, []string{"-ldflags", "-X github.com/wt-tool/wt/cmd/internal/textout.stamped=v9.8.7-test"}},
		{plainBin, nil},
	} {
		args := append(append([]string{"build"}, b.flags...), "-o", b.out, "github.com/wt-tool/wt/cmd/wt-admin")
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, out)
		}
	}
	out, err := exec.Command(stampedBin, "--version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "wt-admin version v9.8.7-test" {
		t.Errorf("--version: %v %q", err, out)
	}
	out, _ = exec.Command(stampedBin, "version", "--json").CombinedOutput()
	if !strings.Contains(string(out), `"tool_version": "v9.8.7-test"`) {
		t.Errorf("version --json: %s", out)
	}
	// The decision table, each code with its exit and its words.
	var v struct {
		Decision struct {
			Codes []string             `json:"decision_codes"`
			Table []decision.Described `json:"decision_table"`
		} `json:"decision"`
	}
	if err := json.Unmarshal(out, &v); err != nil || len(v.Decision.Table) != len(decision.Codes()) || len(v.Decision.Codes) != len(v.Decision.Table) {
		t.Errorf("version --json's decision table: %v, %d codes, %d in the table", err, len(v.Decision.Codes), len(v.Decision.Table))
	}
	for _, d := range v.Decision.Table {
		if d.Code == decision.WriterLeaseHeld && (d.Exit != 1 || d.ExecExit != 125 || len(d.Words) < 5 || d.Meaning == "") {
			t.Errorf("version --json: %+v", d)
		}
	}
	out, err = exec.Command(plainBin, "--version").CombinedOutput()
	if v := strings.TrimPrefix(strings.TrimSpace(string(out)), "wt-admin version "); err != nil || v == "" || strings.Contains(v, " ") {
		t.Errorf("--version of a plain build: %v %q", err, out)
	}
}
