package core_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestImportRules keeps the picture of STYLE.md true:
//
//	cmd/*  ->  cmd/internal/{cli,hookcli}  ->  cmd/internal/clikit  ->  cmd/internal/textout
//	cmd/*  ->  cmd/internal/{execcli,gate}  ->  cmd/internal/textout
//	       ->  wrapper  hooks  cmd/internal/doctor -> install  ->  core/...
//
// core never imports the CLI library or the packages above it, and the
// packages in the middle never import each other's command layer.
func TestImportRules(t *testing.T) {
	const mod = "github.com/wt-tool/wt/"
	forbidden := map[string][]string{
		"core/...":                {"github.com/urfave/cli/v2", mod + "cmd/", mod + "wrapper", mod + "hooks", mod + "install"},
		"core/fleet":              {"go.etcd.io/"},
		"cmd/internal/doctor/...": {"github.com/urfave/cli/v2", mod + "cmd/internal/cli", mod + "cmd/internal/hookcli", mod + "wrapper", mod + "hooks"},
		"wrapper/...":             {"github.com/urfave/cli/v2", mod + "cmd/", mod + "hooks", mod + "install"},
		"hooks/...":               {"github.com/urfave/cli/v2", mod + "cmd/", mod + "wrapper", mod + "install"},
		"install/...":             {"github.com/urfave/cli/v2", mod + "cmd/", mod + "wrapper"},
	}
	// A positive control: the command layer does reach the CLI library, so an
	// empty or misparsed listing cannot pass for a clean one.
	out, err := exec.Command("go", "list", "-deps", "../cmd/...").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "github.com/urfave/cli/v2\n") {
		t.Fatalf("go list of cmd/... does not show urfave/cli: %v\n%s", err, out)
	}
	// Fleet mode: only the wt-fleet helper links the etcd client (about
	// 5 ms at every start); core/fleet itself imports no etcd code.
	forbidden["cmd/wt-exec"] = []string{"go.etcd.io/"}
	forbidden["cmd/wt-admin"] = []string{"go.etcd.io/"}
	// Each binary links only what it uses: wt-hook, which git starts at
	// every commit, links neither wt-exec's supervisor (the pty and
	// Landlock libraries) nor wt-admin's maintenance and doctor.
	forbidden["cmd/wt-hook"] = []string{"go.etcd.io/", mod + "cmd/internal/cli", mod + "wrapper", mod + "core/maint",
		mod + "cmd/internal/doctor", "github.com/creack/pty", "github.com/landlock-lsm/"}
	// wt-gate, which the shims run for every commit, push and checkout,
	// links no command-line library at all (cmd/internal/gate).
	forbidden["cmd/wt-gate"] = []string{"github.com/urfave/cli/v2", "text/template", "regexp", "go.etcd.io/",
		mod + "cmd/internal/cli", mod + "cmd/internal/clikit", mod + "cmd/internal/hookcli", mod + "wrapper",
		mod + "install", mod + "core/maint", mod + "cmd/internal/doctor", "github.com/creack/pty", "github.com/landlock-lsm/"}
	// wt-exec, which starts before every agent command, reads its command
	// line itself (cmd/internal/execcli) and links neither the CLI library
	// nor wt-admin's maintenance, status and doctor.
	forbidden["cmd/wt-exec"] = append(forbidden["cmd/wt-exec"], "github.com/urfave/cli/v2", "text/template", "regexp",
		mod+"cmd/internal/cli", mod+"cmd/internal/clikit", mod+"cmd/internal/hookcli", mod+"core/maint", mod+"core/view", mod+"cmd/internal/doctor")
	forbidden["cmd/internal/textout"] = []string{"github.com/urfave/cli/v2"}
	forbidden["cmd/internal/clikit"] = []string{mod + "cmd/internal/cli", mod + "cmd/internal/hookcli", mod + "wrapper", mod + "hooks", mod + "install", mod + "core/maint"}
	for pattern, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "../"+pattern).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pattern, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, b := range bad {
				if dep == b || strings.HasPrefix(dep, b) && (strings.HasSuffix(b, "/") || strings.HasPrefix(dep, b+"/")) {
					t.Errorf("%s depends on %s (forbidden: %s)", pattern, dep, b)
				}
			}
		}
	}
}

// TestCoreDoesNotPrint keeps output in one place: core returns values and
// errors, and never writes to stdout or stderr or exits the process.
func TestCoreDoesNotPrint(t *testing.T) {
	pattern := `os\.(Stdout|Stderr|Exit)\b|fmt\.Print|log\.(Print|Fatal)`
	out, err := exec.Command("grep", "-rnE", pattern, "--include=*.go", "--exclude=*_test.go", ".").CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		t.Fatalf("core writes output or exits:\n%s", out)
	case !errors.As(err, &ee) || ee.ExitCode() != 1:
		// grep exits 1 for "no match" only; anything else is grep failing,
		// which proves nothing.
		t.Fatalf("grep failed: %v\n%s", err, out)
	}
	// A positive control: the same grep finds the pattern where it is.
	if out, err := exec.Command("grep", "-rnE", pattern, "--include=*.go", "../cmd/wt-admin").CombinedOutput(); err != nil || !strings.Contains(string(out), "os.Exit") {
		t.Fatalf("the grep does not find os.Exit in cmd/wt-admin: %v\n%s", err, out)
	}
}
