package decision

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestWordsInOnePlace: a code of Worded is raised through this package's
// functions (words.go) alone: no package makes one with decision.New or
// decision.Wrap and words of its own.
func TestWordsInOnePlace(t *testing.T) {
	// The constants' names of the worded codes, from codes.go.
	f, err := parser.ParseFile(token.NewFileSet(), "codes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Values) == len(vs.Names) {
			for i, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok {
					if s, err := strconv.Unquote(lit.Value); err == nil && slices.Contains(Worded, s) {
						names[vs.Names[i].Name] = true
					}
				}
			}
		}
		return true
	})
	if len(names) != len(Worded) {
		t.Fatalf("found the constants %v for the worded codes %v", names, Worded)
	}
	checked := 0
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bin" || d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && path != "../..") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == "../../core/decision" {
			return nil
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return nil // not Go this build parses
		}
		checked++
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			fn, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !isIdent(fn.X, "decision") || fn.Sel.Name != "New" && fn.Sel.Name != "Wrap" {
				return true
			}
			if code, ok := call.Args[0].(*ast.SelectorExpr); ok && isIdent(code.X, "decision") && names[code.Sel.Name] {
				t.Errorf("%s: decision.%s(decision.%s, ...) words the code itself: raise it through core/decision/words.go", fset.Position(call.Pos()), fn.Sel.Name, code.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("read only %d Go files: the walk is broken", checked)
	}
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
