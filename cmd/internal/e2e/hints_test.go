package e2e

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/wt-tool/wt/cmd/internal/cli"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/cmd/internal/execcli"
	"github.com/wt-tool/wt/cmd/internal/hookcli"
	"github.com/wt-tool/wt/cmd/internal/textout"
)

// TestHintsParse reads every string literal of wt's sources (not tests)
// that holds a wt-admin, wt-exec or wt-hook command line (hints, fixes,
// next steps, notices), and parses each through the real command line:
// the commands and flags it names exist and take what it gives them. A
// format's verbs and the placeholders (PATH, NAME, …) stand for values.
func TestHintsParse(t *testing.T) {
	var lines []hintLine
	for _, root := range []string{"../../../core", "../../../hooks", "../../../install", "../../../wrapper", "../doctor", "../cli", "../execcli", "../hookcli", "../fleetcli"} {
		lines = append(lines, hintsIn(t, root)...)
	}
	if len(lines) < 80 {
		t.Fatalf("found only %d command lines in hints: the reading is broken", len(lines))
	}
	apps := map[string]func(*clikit.Env) *ucli.App{"wt-admin": cli.AdminApp, "wt-hook": hookcli.App}
	checked := 0
	for _, h := range lines {
		// What a person is shown: the line anchored where the command
		// acted (textout.Anchor), as every binary prints its hints.
		line := textout.Anchor(h.line, "/srv/the repo")
		args := strings.Fields(strings.ReplaceAll(line, "'/srv/the repo'", "/srv/the-repo"))
		bin, args := args[0], args[1:]
		if len(args) == 0 || !strings.HasPrefix(args[0], "-") && bin != "wt-exec" && !isCommand(apps[bin], args[0]) {
			continue // prose that names the program ("wt-admin pid 12 still runs it")
		}
		checked++
		if !anywhere(bin, args) && (line != h.line || bin != "wt-exec") {
			t.Errorf("%s: %q: names no repository (-C or --repo): pasted from another directory it fails NOT_A_GIT_REPOSITORY", h.where, h.line)
		}
		if bin == "wt-exec" {
			if _, err := execcli.Parse(args); err != nil {
				t.Errorf("%s: %q: %v", h.where, h.line, err)
			}
			continue
		}
		var stderr strings.Builder
		code := clikit.Run(bin, parseOnly(apps[bin]), args, io.Discard, &stderr)
		if code != 0 {
			t.Errorf("%s: %q: exit %d: %s", h.where, h.line, code, stderr.String())
		}
	}
	// A positive control: a wrong hint is caught.
	var stderr strings.Builder
	if clikit.Run("wt-admin", parseOnly(cli.AdminApp), []string{"lease", "relase", "P"}, io.Discard, &stderr) == 0 {
		t.Fatal("a hint with a misspelt command parses")
	}
	if checked < 80 {
		t.Fatalf("only %d of %d lines were command lines: the reading is broken", checked, len(lines))
	}
	t.Logf("%d command lines checked", checked)
}

type hintLine struct{ where, line string }

// anywhere reports whether a hint's command line runs from any directory:
// it names its repository or worktree (-C DIR, --repo DIR, or wt-admin's
// forms of them), or is a command that needs none.
func anywhere(bin string, args []string) bool {
	for i, a := range args {
		switch {
		case a == "--":
			return false // what follows is the command wt-exec runs
		case (a == "-C" || a == "--repo" || a == "-repo" || a == "--C") && i+1 < len(args) && args[i+1] != ".":
			return true
		case strings.HasPrefix(a, "--repo=") || strings.HasPrefix(a, "-C="):
			return true
		}
	}
	// Commands that need no repository.
	for _, a := range args {
		switch {
		case bin == "wt-admin" && (a == "version" || a == "--version" || a == "help"),
			bin == "wt-hook" && (a == "--server" || a == "version" || a == "--version"),
			bin == "wt-exec" && (a == "--version" || a == "--help"):
			return true
		}
	}
	return false
}

// isCommand reports whether name is one of the app's commands.
func isCommand(build func(*clikit.Env) *ucli.App, name string) bool {
	for _, c := range build(&clikit.Env{Stdout: io.Discard, Stderr: io.Discard}).Commands {
		if c.HasName(name) {
			return true
		}
	}
	return false
}

// parseOnly is build with every command's action replaced by one that
// does nothing: what is left is the parsing of the command line.
func parseOnly(build func(*clikit.Env) *ucli.App) func(*clikit.Env) *ucli.App {
	return func(e *clikit.Env) *ucli.App {
		app := build(e)
		noop := func(*ucli.Context) error { return nil }
		var walk func([]*ucli.Command)
		walk = func(cmds []*ucli.Command) {
			for _, c := range cmds {
				c.Before, c.After = nil, nil
				if c.Action != nil {
					c.Action = noop
				}
				walk(c.Subcommands)
			}
		}
		walk(app.Commands)
		app.Before, app.After = nil, nil
		if app.Action != nil {
			app.Action = noop
		}
		return app
	}
}

var (
	binStart = regexp.MustCompile(`\bwt-(admin|exec|hook) `)
	verb     = regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z]`)
	subshell = regexp.MustCompile(`"\$\([^)]*\)"`)
	// Placeholders that stand for a duration or a number.
	placeholders = strings.NewReplacer(" DURATION", " 10m", " D ", " 10m ", " N ", " 1 ", " PID", " 1")
)

// hintsIn finds the command lines in the string literals of the Go files
// under root (not tests, not generated code).
func hintsIn(t *testing.T, root string) []hintLine {
	var out []hintLine
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || filepath.Base(path) == "internal" && root == "../../../core") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "_gen.go") {
			return nil
		}
		if rel, _ := filepath.Rel(root, path); root == "../cli" && strings.Contains(rel, string(filepath.Separator)) {
			return nil // cmd/internal/cli itself only, not its subdirectories
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if kv, ok := n.(*ast.KeyValueExpr); ok {
				if k, ok := kv.Key.(*ast.Ident); ok && (k.Name == "Usage" || k.Name == "UsageText" || k.Name == "ArgsUsage" || k.Name == "Description") {
					return false // a flag's or command's description, not a command line
				}
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, line := range commandLines(s) {
				out = append(out, hintLine{fset.Position(lit.Pos()).String(), line})
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// commandLines cuts the command lines out of a literal: each from its
// binary's name to where the prose goes on (";", " (", ", or ", ", then ",
// a line's end), a format's verbs made values, and for wt-exec what follows
// "--" (the command it runs) left out.
func commandLines(s string) []string {
	var out []string
	for _, loc := range binStart.FindAllStringIndex(s, -1) {
		if loc[0] > 0 && strings.ContainsAny(s[loc[0]-1:loc[0]], "/-_.") {
			continue // a path or a longer name (bin/wt-admin, wt-admin-x)
		}
		line := subshell.ReplaceAllString(s[loc[0]:], "X")
		for _, stop := range []string{"\n", ";", " (", ")", ", ", " and ", " or ", "`", "\"", " to ", " instead", " first", " again", ": "} {
			if i := strings.Index(line, stop); i > 0 {
				line = line[:i]
			}
		}
		line = strings.TrimRight(line, ".,:) ")
		if strings.HasPrefix(line, "wt-exec ") {
			if i := strings.Index(line+" ", " -- "); i >= 0 {
				line = line[:i]
			}
		}
		line = verb.ReplaceAllString(line, "X")
		line = strings.TrimSpace(placeholders.Replace(line + " "))
		if !strings.Contains(line, "--X") && !strings.Contains(line, "[") && !strings.Contains(line, "|") && !strings.Contains(line, "...") && !strings.Contains(line, "…") {
			out = append(out, line)
		}
	}
	return out
}

// TestAnchorCommands: the command names textout.Anchor tells command
// lines from prose by are the apps' own.
func TestAnchorCommands(t *testing.T) {
	for bin, c := range map[string]struct {
		app  func(*clikit.Env) *ucli.App
		want []string
	}{"wt-admin": {cli.AdminApp, textout.AdminCommands}, "wt-hook": {hookcli.App, textout.HookCommands}} {
		var names []string
		for _, cmd := range c.app(&clikit.Env{Stdout: io.Discard, Stderr: io.Discard}).Commands {
			names = append(names, cmd.Names()...)
		}
		if strings.Join(names, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s's commands are %q; textout knows %q", bin, names, c.want)
		}
	}
}
