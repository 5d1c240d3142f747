package decision

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// keyed are the functions that take a form's key and its values: the
// table's own (Say, SayWrap, Words, Within) and the few helpers that raise
// one code with a context of their own (each passes the key on to Say).
var keyed = map[string]struct {
	code  string // the code a helper raises ("": the call's first argument)
	first int    // the index of the key among the call's arguments
}{
	"Say": {"", 1}, "SayWrap": {"", 2}, "Words": {"", 1}, "Within": {"", 1},
	"UsageErr": {Usage, 0}, "usageErr": {Usage, 0},
	"untrusted": {GitMetadataUntrusted, 0}, "drift": {GCPlanDrift, 0},
}

// relayed are the files that may raise a code with words not from the
// table (Relay): each passes on words said elsewhere, by another process
// of wt's, an unexpected error's own text, or a summary of an outcome.
var relayed = []string{
	"cmd/internal/textout/textout.go", // an error with no code: Go's own text, as INTERNAL_ERROR
	"core/fleet/helper.go",            // wt-fleet's answer, worded by wt-fleet through this table
	"core/land/land.go",               // a sandboxed test's wt-exec refusal, read back from its JSON
	"cmd/internal/cli/admin_land.go",  // land's summary line (which tasks landed), under the run's code
	"core/lease/occupant.go",          // RUNTIME_OCCUPIED in Describe's words, which are the table's
}

// layout are the words a line around a code's words may have: the
// program's name and the line's kind ("wt-exec: warning: CODE: ...").
var layout = []string{"wt", "exec", "admin", "hook", "warning", "hint", "next"}

// word is a word of a message, beside the verbs and the separators.
var word = regexp.MustCompile(`[A-Za-z]{2,}`)

var verb = regexp.MustCompile(`%[-+# 0]*[0-9]*(\.[0-9]+)?[a-zA-Z%]`)

// verbs is how many values format takes.
func verbs(format string) int {
	n := 0
	for _, v := range verb.FindAllString(format, -1) {
		if v != "%%" {
			n++
		}
	}
	return n
}

// TestWordsInOnePlace: every message of a code is a form of the table.
// A package raises a code through Say, SayWrap, Words or Within with a
// key the table has for that code and as many values as its words take;
// no package writes a code's words itself (a decision.Error or a finding
// with a Message of its own words), and Relay is used only where the words
// were said elsewhere. Every form of the table is used, so none is said
// twice or left behind.
func TestWordsInOnePlace(t *testing.T) {
	forms := map[string]map[string]string{}
	names := map[string]string{} // constant name -> code
	for _, sec := range Table {
		for _, s := range sec.Codes {
			forms[s.Code] = map[string]string{}
			for _, f := range s.Words {
				if _, dup := forms[s.Code][f.Key]; dup {
					t.Errorf("%s has two forms keyed %q", s.Code, f.Key)
				}
				forms[s.Code][f.Key] = f.Words
			}
		}
	}
	shared := map[string]string{}
	for _, f := range Shared {
		shared[f.Key] = f.Words
		for c, fs := range forms {
			if _, dup := fs[f.Key]; dup {
				t.Errorf("%s has a form keyed %q, which is a shared form's key", c, f.Key)
			}
		}
	}
	contexts := map[string]string{}
	for _, f := range Contexts {
		contexts[f.Key] = f.Words
	}
	maps.Copy(names, codeConstants(t))
	used := map[string]bool{}
	calls := 0
	checked := eachSource(t, func(rel string, fset *token.FileSet, file *ast.File) {
		inDecision := filepath.Dir(rel) == "core/decision"
		codeOf := func(e ast.Expr) (string, bool) {
			switch x := e.(type) {
			case *ast.SelectorExpr:
				if isIdent(x.X, "decision") {
					c, ok := names[x.Sel.Name]
					return c, ok
				}
			case *ast.Ident:
				if inDecision {
					c, ok := names[x.Name]
					return c, ok
				}
			}
			return "", false
		}
		// The bodies of the functions that take a parameter named key.
		var passing [][2]token.Pos
		ast.Inspect(file, func(n ast.Node) bool {
			var ft *ast.FuncType
			var body *ast.BlockStmt
			switch f := n.(type) {
			case *ast.FuncDecl:
				ft, body = f.Type, f.Body
			case *ast.FuncLit:
				ft, body = f.Type, f.Body
			}
			if ft != nil && body != nil {
				for _, p := range ft.Params.List {
					if slices.ContainsFunc(p.Names, func(id *ast.Ident) bool { return id.Name == "key" }) {
						passing = append(passing, [2]token.Pos{body.Pos(), body.End()})
					}
				}
			}
			return true
		})
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if fn, ok := n.Fun.(*ast.SelectorExpr); ok && isIdent(fn.X, "fmt") && len(n.Args) > 0 {
					// fmt.Sprintf("%s: words", decision.CODE, ...): a code's
					// words written in place.
					for _, a := range n.Args {
						if _, ok := codeOf(a); ok && slices.ContainsFunc(n.Args, func(e ast.Expr) bool {
							lit, ok := e.(*ast.BasicLit)
							if !ok || lit.Kind != token.STRING {
								return false
							}
							v, _ := strconv.Unquote(lit.Value)
							n := 0
							for _, w := range word.FindAllString(verb.ReplaceAllString(v, ""), -1) {
								if !slices.Contains(layout, w) {
									n++
								}
							}
							return n > 1
						}) {
							t.Errorf("%s: fmt.%s words decision code %s in place: use decision.Words and a form of core/decision/table.go", fset.Position(n.Pos()), fn.Sel.Name, fmt.Sprint(codeName(a)))
							break
						}
					}
				}
				var name string
				switch fn := n.Fun.(type) {
				case *ast.SelectorExpr:
					if !isIdent(fn.X, "decision") && !isIdent(fn.X, "clikit") {
						return true
					}
					name = fn.Sel.Name
				case *ast.Ident:
					name = fn.Name
				}
				if name == "Relay" && !slices.Contains(relayed, rel) {
					t.Errorf("%s: Relay outside the files that pass on words said elsewhere: raise the code with Say and a form of core/decision/table.go", fset.Position(n.Pos()))
				}
				k, ok := keyed[name]
				if !ok || inDecision && rel == "core/decision/say.go" || len(n.Args) <= k.first {
					return true
				}
				calls++
				at := fset.Position(n.Pos())
				if isIdent(n.Args[k.first], "key") && slices.ContainsFunc(passing, func(r [2]token.Pos) bool { return r[0] <= n.Pos() && n.End() <= r[1] }) {
					return true // a helper passing its parameter key on: its callers are checked
				}
				lit, ok := n.Args[k.first].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Errorf("%s: %s's key is not a literal: name the form", at, name)
					return true
				}
				key, _ := strconv.Unquote(lit.Value)
				values := len(n.Args) - k.first - 1
				if n.Ellipsis.IsValid() {
					values = -1 // spread: counted where it is built
				}
				if name == "Within" {
					w, ok := contexts[key]
					if !ok {
						t.Errorf("%s: no context %q in Contexts", at, key)
					}
					used["\x00"+key] = true
					if values >= 0 && values+1 != verbs(w) {
						t.Errorf("%s: context %q takes %d values and the refusal's words, given %d", at, key, verbs(w)-1, values)
					}
					return true
				}
				codes := []string{k.code}
				if k.code == "" {
					c, ok := codeOf(n.Args[0])
					if ok {
						codes = []string{c}
					} else {
						// A code chosen at run time: every code that has
						// the key may be it, and it must have words.
						codes = nil
						for c, fs := range forms {
							if _, ok := fs[key]; ok {
								codes = append(codes, c)
							}
						}
						if _, ok := shared[key]; ok {
							codes = append(codes, "")
						}
						if len(codes) == 0 {
							t.Errorf("%s: no code has words %q", at, key)
						}
					}
				}
				for _, c := range codes {
					w, ok := forms[c][key]
					if !ok {
						if w, ok = shared[key]; ok {
							c = ""
						}
					}
					if !ok {
						t.Errorf("%s: %s has no words %q in core/decision/table.go", at, c, key)
						continue
					}
					used[c+"\x00"+key] = true
					if values >= 0 && values != verbs(w) {
						t.Errorf("%s: %s's words %q take %d values, given %d", at, cmp.Or(c, "shared"), key, verbs(w), values)
					}
				}
			case *ast.CompositeLit:
				var code bool
				var msg ast.Expr
				if sel, ok := n.Type.(*ast.SelectorExpr); ok && isIdent(sel.X, "decision") && sel.Sel.Name == "Error" {
					code = true
				}
				for _, e := range n.Elts {
					kv, ok := e.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					switch {
					case isIdent(kv.Key, "Code"):
						if _, ok := codeOf(kv.Value); ok {
							code = true
						}
					case isIdent(kv.Key, "Message"):
						msg = kv.Value
					}
				}
				if code && msg != nil && wordsOf(msg) {
					t.Errorf("%s: a code's message in words of its own: use decision.Words and a form of core/decision/table.go", fset.Position(msg.Pos()))
				}
			}
			return true
		})
	})
	if checked < 100 || calls < 500 {
		t.Fatalf("read %d Go files and %d calls: the walk is broken", checked, calls)
	}
	for c, fs := range forms {
		for k := range fs {
			if !used[c+"\x00"+k] {
				t.Errorf("%s's words %q are raised nowhere: remove them from core/decision/table.go", c, k)
			}
		}
	}
	for k := range shared {
		if !used["\x00"+k] {
			t.Errorf("shared words %q are raised nowhere", k)
		}
	}
	for k := range contexts {
		if !used["\x00"+k] {
			t.Errorf("context %q is used nowhere", k)
		}
	}
}

// wordsOf reports whether e writes words of its own: a string literal
// outside a call of the table's (decision.Words).
func wordsOf(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if fn, ok := c.Fun.(*ast.SelectorExpr); ok && isIdent(fn.X, "decision") {
				return false
			}
		}
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			found = true
		}
		return !found
	})
	return found
}

// codeName is the constant's name of a code expression.
func codeName(e ast.Expr) string {
	if sel, ok := e.(*ast.SelectorExpr); ok {
		return sel.Sel.Name
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return "?"
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// TestWordsTakeTheirValues: Words fills a form's verbs, and a key the
// table lacks is said as such, never dropped.
func TestWordsTakeTheirValues(t *testing.T) {
	if got := Words(WriterLeaseHeld, "grant-changed", "/w"); got != "the grant of /w changed while the store's lock was free (someone ended or took it)" {
		t.Errorf("Words: %q", got)
	}
	if got := Words(WriterLeaseHeld, "no-such-key", 1); !strings.Contains(got, "no words \"no-such-key\"") || !strings.Contains(got, "1") {
		t.Errorf("an unknown key: %q", got)
	}
	d := SayWrap(GitFailed, fmt.Errorf("exit status 128"), "is-in", "x", "y")
	if d.Code != GitFailed || !strings.HasSuffix(d.Message, ": exit status 128") || d.Err == nil {
		t.Errorf("SayWrap: %+v", d)
	}
	w := Within(Say(WriterLeaseHeld, "grant-changed", "/w").WithHint("wait"), "transaction-moves", "refs/heads/x")
	if w.Code != WriterLeaseHeld || w.Hint != "wait" || !strings.HasPrefix(w.Message, "this transaction moves refs/heads/x: the grant of /w") {
		t.Errorf("Within: %+v", w)
	}
}

// hintForms are the hints raised with each code, as written where they
// are raised (a literal WithHint on a Say or SayWrap of the code), each
// once, in the order the walk meets them: the page lists them.
func hintForms(t *testing.T) map[string][]string {
	t.Helper()
	byName := codeConstants(t)
	out := map[string][]string{}
	eachSource(t, func(_ string, _ *token.FileSet, file *ast.File) {
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || fn.Sel.Name != "WithHint" || len(call.Args) == 0 {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			// Down the chain (.WithFact(...).WithHint(...)) to the Say.
			x := fn.X
			for {
				c, ok := x.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := c.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if isIdent(sel.X, "decision") && strings.HasPrefix(sel.Sel.Name, "Held") {
					// words.go's forms of WRITER_LEASE_HELD.
					h, _ := strconv.Unquote(lit.Value)
					if !slices.Contains(out[WriterLeaseHeld], h) {
						out[WriterLeaseHeld] = append(out[WriterLeaseHeld], h)
					}
					return true
				}
				if isIdent(sel.X, "decision") && (sel.Sel.Name == "Say" || sel.Sel.Name == "SayWrap") && len(c.Args) > 0 {
					if cs, ok := c.Args[0].(*ast.SelectorExpr); ok && isIdent(cs.X, "decision") {
						if code, ok := byName[cs.Sel.Name]; ok {
							h, _ := strconv.Unquote(lit.Value)
							if !slices.Contains(out[code], h) {
								out[code] = append(out[code], h)
							}
						}
					}
					return true
				}
				x = sel.X
			}
		})
	})
	for c := range out {
		slices.Sort(out[c])
	}
	return out
}

// codeConstants maps each code constant's name in codes.go to its code.
func codeConstants(t *testing.T) map[string]string {
	t.Helper()
	cf, err := parser.ParseFile(token.NewFileSet(), "codes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	ast.Inspect(cf, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Values) == len(vs.Names) {
			for i, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					names[vs.Names[i].Name], _ = strconv.Unquote(lit.Value)
				}
			}
		}
		return true
	})
	return names
}

// eachSource calls fn with every Go source file of the module, parsed,
// and its path from the module's root (tests, testdata, bin and hidden
// dirs aside), and says how many it read.
func eachSource(t *testing.T, fn func(rel string, fset *token.FileSet, file *ast.File)) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bin" || d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && path != "../..") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return nil // not Go this build parses
		}
		rel, _ := filepath.Rel("../..", path)
		n++
		fn(rel, fset, file)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
