package decision

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// TestCodesDocumented keeps docs/decision-codes.md and the codes this build
// knows the same list: a code without a line there fails, and so does a
// line naming a code the binary does not know.
func TestCodesDocumented(t *testing.T) {
	page, err := os.ReadFile("../../docs/decision-codes.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\|").FindAllStringSubmatch(string(page), -1) {
		documented = append(documented, m[1])
	}
	if len(documented) < 50 {
		t.Fatalf("found only %d codes in docs/decision-codes.md: the table format changed?", len(documented))
	}
	for _, c := range Codes() {
		if !slices.Contains(documented, c) {
			t.Errorf("%s has no line in docs/decision-codes.md", c)
		}
	}
	for _, c := range documented {
		if !slices.Contains(Codes(), c) {
			t.Errorf("docs/decision-codes.md documents %s, which this build does not know", c)
		}
	}
}

// TestCodesListed: every code constant of codes.go is in Codes's list, once.
func TestCodesListed(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "codes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, s := range g.Specs {
				for _, v := range s.(*ast.ValueSpec).Values {
					if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						c, _ := strconv.Unquote(lit.Value)
						declared = append(declared, c)
					}
				}
			}
		}
	}
	slices.Sort(declared)
	if len(declared) < 100 || !slices.Equal(declared, Codes()) {
		t.Fatalf("codes.go declares %d codes, Codes lists %d: add the new ones to the list at its end\ndeclared %v\nlisted %v",
			len(declared), len(Codes()), declared, Codes())
	}
}

var update = flag.Bool("update", false, "write docs/decision-codes.md from the table")

// TestDecisionCodesPage: docs/decision-codes.md is what Page makes of the
// table (-update writes it), and the table holds every code once.
func TestDecisionCodesPage(t *testing.T) {
	var listed []string
	for _, d := range Describe() {
		listed = append(listed, d.Code)
	}
	slices.Sort(listed)
	if !slices.Equal(listed, Codes()) {
		t.Fatalf("the table lists %d codes, codes.go declares %d: each code is in the table once", len(listed), len(Codes()))
	}
	const path = "../../docs/decision-codes.md"
	if *update {
		if err := os.WriteFile(path, []byte(Page(hintForms(t))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(page) != Page(hintForms(t)) {
		t.Fatalf("%s is not the table's page: go test ./core/decision -run TestDecisionCodesPage -update", path)
	}
}

// TestExits: the exit a code gives is the one the commands give it.
func TestExits(t *testing.T) {
	for _, d := range Describe() {
		switch {
		case d.Code == Usage && (d.Exit != 2 || d.ExecExit != 125),
			d.Code == DoctorFindings && d.Exit != 1,
			d.Code == CommandNotFound && d.ExecExit != 127,
			d.Kind == "outcome" && d.Code != DoctorFindings && (d.Exit != 0 || d.ExecExit != -1),
			d.Kind == "refusal" && d.Exit != 1,
			(d.Kind == "notice" || d.Kind == "finding") && d.Exit != -1:
			t.Errorf("%s (%s): exit %d, wt-exec %d", d.Code, d.Kind, d.Exit, d.ExecExit)
		}
	}
}

// raisedOtherwise are the refusals TestKindsAsRaised does not see raised
// by a Say, SayWrap or Relay naming them, and why.
var raisedOtherwise = map[string]string{
	WriterLeaseHeld:          "raised by words.go's forms (HeldBy, ...)",
	AbandonProofInsufficient: "raised with OPERATOR_REQUIRED through a code chosen at run time (core/lease)",
	HooksDirInWorktree:       "no longer produced; kept as API",
}

// TestKindsAsRaised: a code the sources raise as an error (Say, SayWrap,
// Relay) is a refusal, a usage error or a notice (or DOCTOR_FINDINGS, an
// outcome that exits 1); a refusal is raised somewhere. A finding or an
// outcome raised as an error, or a refusal nothing raises, has the wrong
// kind in the table, and the exit the page says is wrong with it.
func TestKindsAsRaised(t *testing.T) {
	names := codeConstants(t)
	raised := map[string]bool{}
	eachSource(t, func(_ string, _ *token.FileSet, file *ast.File) {
		ast.Inspect(file, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok || len(c.Args) == 0 {
				return true
			}
			sel, ok := c.Fun.(*ast.SelectorExpr)
			if !ok || !isIdent(sel.X, "decision") || !slices.Contains([]string{"Say", "SayWrap", "Relay"}, sel.Sel.Name) {
				return true
			}
			if cs, ok := c.Args[0].(*ast.SelectorExpr); ok && isIdent(cs.X, "decision") {
				raised[names[cs.Sel.Name]] = true
			}
			return true
		})
	})
	for _, d := range Describe() {
		switch {
		case raised[d.Code] && (d.Kind == "finding" || d.Kind == "outcome" && d.Code != DoctorFindings):
			t.Errorf("%s is raised as an error, but the table has it a %s", d.Code, d.Kind)
		case !raised[d.Code] && d.Kind == "refusal" && raisedOtherwise[d.Code] == "":
			t.Errorf("%s is a refusal in the table, but nothing raises it: a finding, a notice?", d.Code)
		}
	}
}
