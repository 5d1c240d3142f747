package core_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportRules keeps the layering CONTRIBUTING.md's package table
// describes true:
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
		"core/...":   {"github.com/urfave/cli/v2", mod + "cmd/", mod + "wrapper", mod + "hooks", mod + "install"},
		"core/fleet": {"go.etcd.io/"},
		// The policy and the ledger sit below allocation: alloc's own tests
		// set a repository up through core/policy.
		"core/policy":             {mod + "core/alloc", mod + "core/lease", mod + "core/maint"},
		"core/ledger":             {mod + "core/alloc", mod + "core/lease", mod + "core/maint"},
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
	// 3 ms at every start, docs/performance.md, "Start-up costs"); core/fleet itself imports no etcd code.
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
	forbidden["cmd/wt-admin"] = append(forbidden["cmd/wt-admin"], mod+"wrapper", mod+"cmd/internal/execcli", "github.com/creack/pty", "github.com/landlock-lsm/")
	// Why each rule is, printed when it is broken (tailscale's deptest
	// says the same: package => why).
	why := map[string]string{
		"core/...":                "core is the model every binary shares: it knows no command line, no supervisor, no hook and no installer",
		"core/fleet":              "core/fleet is the fleet model; only the wt-fleet helper links etcd's client (3 ms at every start)",
		"core/policy":             "the policy sits below allocation: alloc's own tests set a repository up through it",
		"core/ledger":             "the ledger sits below allocation, as the policy does",
		"cmd/internal/doctor/...": "doctor is read by wt-admin alone and checks the supervisor's and the hooks' work without linking them",
		"wrapper/...":             "the supervisor is wt-exec's and reads its command line itself",
		"hooks/...":               "the gate runs at every commit: it links no command line, supervisor or installer",
		"install/...":             "the installer is wt-hook's and wt-admin's, not wt-exec's supervisor's",
		"cmd/wt-exec":             "wt-exec starts before every agent command: it parses its own command line and links neither etcd nor wt-admin's views and maintenance",
		"cmd/wt-admin":            "wt-admin links neither etcd (the wt-fleet helper's) nor wt-exec's supervisor (the pty and Landlock libraries): the broker's protocol is core/broker, wt-exec's flags cmd/internal/execflags",
		"cmd/wt-hook":             "git starts wt-hook at every commit: it links neither wt-exec's supervisor nor wt-admin's maintenance and doctor",
		"cmd/wt-gate":             "the shims run wt-gate for every commit, push and checkout: it links no command-line library at all",
		"cmd/internal/textout":    "textout is shared by every binary, wt-exec's too, which links no CLI library",
		"cmd/internal/clikit":     "clikit is below the command layers it serves",
	}
	for pattern := range forbidden {
		if why[pattern] == "" {
			t.Errorf("the rule for %s says no why", pattern)
		}
	}
	tags := shippedTags(t)
	for pattern, bad := range forbidden {
		// With the tags the shipped binaries are built with (make's
		// TAGS): a rule is about what ships.
		out, err := exec.Command("go", "list", "-tags", tags, "-deps", "-f", "{{.ImportPath}}", "../"+pattern).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pattern, err, out)
		}
		for _, b := range bad {
			if !namesSomething(t, b) {
				t.Errorf("the rule for %s forbids %s, which names no package or module this build knows: renamed? (the rule is void)", pattern, b)
			}
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, b := range bad {
				if dep == b || strings.HasPrefix(dep, b) && (strings.HasSuffix(b, "/") || strings.HasPrefix(dep, b+"/")) {
					t.Errorf("%s depends on %s (forbidden: %s): %s => %s", pattern, dep, b, pattern, why[pattern])
				}
			}
		}
	}
}

// shippedTags are the build tags make builds the shipped binaries with
// (the Makefile's TAGS), read from the Makefile so that the rules follow
// it.
func shippedTags(t *testing.T) string {
	t.Helper()
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mk), "\n") {
		if v, ok := strings.CutPrefix(line, "TAGS"); ok {
			if _, tags, ok := strings.Cut(v, "="); ok && strings.TrimSpace(tags) != "" {
				return strings.TrimSpace(tags)
			}
		}
	}
	t.Fatal("the Makefile sets no TAGS: the shipped build's tags are unknown")
	return ""
}

// namesSomething reports whether a forbidden import path (or path prefix,
// ending in "/") names a package of the standard library or this module,
// or a module go.mod requires: a rule about a path that names nothing
// forbids nothing (tailscale's deptest checks the same).
func namesSomething(t *testing.T, path string) bool {
	t.Helper()
	const mod = "github.com/wt-tool/wt/"
	if rest, ok := strings.CutPrefix(path, mod); ok {
		fi, err := os.Stat("../" + strings.TrimSuffix(rest, "/"))
		return err == nil && fi.IsDir()
	}
	if !strings.Contains(strings.SplitN(path, "/", 2)[0], ".") {
		return exec.Command("go", "list", path).Run() == nil // the standard library
	}
	out, err := exec.Command("go", "list", "-m", "all").Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	for _, m := range strings.Fields(string(out)) {
		if m == strings.TrimSuffix(path, "/") || strings.HasPrefix(m, path) || strings.HasPrefix(path, m+"/") {
			return true
		}
	}
	return false
}

// TestImportRulesControl: a rule about a renamed package is caught, a real
// one is not.
func TestImportRulesControl(t *testing.T) {
	for path, want := range map[string]bool{
		"github.com/wt-tool/wt/core/maint":   true,
		"github.com/wt-tool/wt/core/mainten": false,
		"github.com/wt-tool/wt/cmd/":         true,
		"regexp":                             true,
		"regexpp":                            false,
		"go.etcd.io/":                        true,
		"github.com/creack/pty":              true,
		"github.com/creack/ptyy":             false,
	} {
		if got := namesSomething(t, path); got != want {
			t.Errorf("namesSomething(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestCoreDoesNotPrint keeps output in one place: core returns values and
// errors, and never writes to stdout or stderr or exits the process. It
// reads the syntax of every file of core (a grep missed unix.Write(2, …)
// and os.NewFile(2, …)).
func TestCoreDoesNotPrint(t *testing.T) {
	var found []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		found = append(found, printsIn(t, path, src)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Fatalf("core writes output or exits:\n%s", strings.Join(found, "\n"))
	}
	// Positive controls: each way of printing is found where it is.
	control := `package x
import ("fmt"; "log"; "os"; "syscall"; "golang.org/x/sys/unix")
func f() {
	fmt.Println("a"); log.Printf("b"); os.Exit(1); _ = os.Stderr
	unix.Write(2, nil); syscall.Write(1, nil); os.NewFile(2, "stderr"); println("c")
}`
	if got := printsIn(t, "control.go", []byte(control)); len(got) != 8 {
		t.Fatalf("the check finds %d of the 8 ways of printing in its control:\n%s", len(got), strings.Join(got, "\n"))
	}
}

// printsIn lists where the Go source src prints or exits: fmt's and log's
// printers, os.Stdout, os.Stderr and os.Exit, a write(2) or os.NewFile on
// descriptor 1 or 2, and the print builtins.
func printsIn(t *testing.T, path string, src []byte) []string {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			pkg, ok := n.X.(*ast.Ident)
			if !ok {
				return true
			}
			name := pkg.Name + "." + n.Sel.Name
			switch {
			case name == "os.Stdout", name == "os.Stderr", name == "os.Exit",
				pkg.Name == "fmt" && strings.HasPrefix(n.Sel.Name, "Print"),
				pkg.Name == "log" && (strings.HasPrefix(n.Sel.Name, "Print") || strings.HasPrefix(n.Sel.Name, "Fatal") || strings.HasPrefix(n.Sel.Name, "Panic")):
				out = append(out, fset.Position(n.Pos()).String()+": "+name)
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "print" || id.Name == "println") {
				out = append(out, fset.Position(n.Pos()).String()+": "+id.Name)
			}
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || len(n.Args) == 0 {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			lit, isLit := n.Args[0].(*ast.BasicLit)
			if !ok || !isLit || (lit.Value != "1" && lit.Value != "2") {
				return true
			}
			name := pkg.Name + "." + sel.Sel.Name
			if name == "unix.Write" || name == "syscall.Write" || name == "os.NewFile" {
				out = append(out, fset.Position(n.Pos()).String()+": "+name+"("+lit.Value+", …)")
			}
		}
		return true
	})
	return out
}
