package core_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocCitations resolves every citation of a page of docs/: in Go
// comments (`docs/design.md, "Writer leases"`: a heading of that page that
// begins with the quoted name) and in the Markdown pages (`](design.md#anchor)`:
// the page exists and has a heading with that anchor). A section renamed
// leaves no comment or link pointing at nothing.
func TestDocCitations(t *testing.T) {
	root := ".."
	headings := map[string][]string{} // page (docs/x.md) -> its headings
	pageHeadings := func(page string) ([]string, bool) {
		if h, ok := headings[page]; ok {
			return h, true
		}
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			return nil, false
		}
		var hs []string
		inFence := false
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "```") {
				inFence = !inFence
			}
			if !inFence && strings.HasPrefix(line, "#") {
				hs = append(hs, strings.TrimSpace(strings.TrimLeft(line, "#")))
			}
		}
		headings[page] = hs
		return hs, true
	}
	checked := 0
	// Go comments: docs/PAGE.md, "Section" (the quote may wrap lines).
	cite := regexp.MustCompile(`docs/([a-z-]+\.md), "([^"]+)"`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bin" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
		if err != nil {
			return nil // not Go this build parses (a generator's template): nothing cited there
		}
		for _, g := range f.Comments {
			text := strings.Join(strings.Fields(g.Text()), " ")
			for _, m := range cite.FindAllStringSubmatch(text, -1) {
				checked++
				hs, ok := pageHeadings("docs/" + m[1])
				if !ok {
					t.Errorf("%s cites docs/%s, which does not exist", path, m[1])
					continue
				}
				if !hasHeading(hs, m[2]) {
					t.Errorf("%s cites docs/%s, %q: no heading of that page begins so", path, m[1], m[2])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Markdown links with an anchor, between the pages.
	link := regexp.MustCompile(`\]\(((?:docs/)?[a-z-]+\.md)?#([a-z0-9-]+)\)`)
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	pages = append(pages, filepath.Join(root, "README.md"), filepath.Join(root, "CONTRIBUTING.md"))
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			checked++
			target := rel
			if m[1] != "" {
				target = m[1]
				if !strings.HasPrefix(target, "docs/") && strings.HasPrefix(rel, "docs/") {
					target = "docs/" + target
				}
			}
			hs, ok := pageHeadings(target)
			if !ok {
				t.Errorf("%s links to %s, which does not exist", rel, target)
				continue
			}
			found := false
			for _, h := range hs {
				found = found || anchorOf(h) == m[2]
			}
			if !found {
				t.Errorf("%s links to %s#%s: no heading has that anchor", rel, target, m[2])
			}
		}
	}
	if checked < 60 {
		t.Fatalf("found only %d citations: the reading is broken", checked)
	}
	// Controls: a renamed section and a wrong anchor are caught.
	if hasHeading([]string{"Writer leases"}, "Writer lessees") || anchorOf("The remote's fence (wt-hook install --server)") != "the-remotes-fence-wt-hook-install---server" {
		t.Fatal("the controls fail: the check cannot tell")
	}
}

// hasHeading reports whether a heading begins with name (a citation may
// leave a heading's parenthesis out: "Hooks" for "Hooks (wt-hook)").
func hasHeading(hs []string, name string) bool {
	for _, h := range hs {
		if h == name || strings.HasPrefix(h, name+" ") || strings.HasPrefix(h, name+":") || strings.HasPrefix(h, name+",") {
			return true
		}
	}
	return false
}

// anchorOf is the anchor GitHub gives a heading: lower case, punctuation
// but hyphens dropped, spaces made hyphens.
func anchorOf(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestCoverageTableWhole: CONTRIBUTING.md's coverage table has a row for
// every package of the module (but cmd/internal/e2e, which holds tests
// alone) and none for a package that is gone: no chosen rows.
func TestCoverageTableWhole(t *testing.T) {
	b, err := os.ReadFile("../CONTRIBUTING.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Coverage\n")
	if !ok {
		t.Fatal("CONTRIBUTING.md has no Coverage section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\| [^|]+ \\|$").FindAllStringSubmatch(sec, -1) {
		rows[m[1]] = true
	}
	out, err := exec.Command("go", "list", "../...").Output()
	if err != nil {
		t.Fatal(err)
	}
	const mod = "github.com/wt-tool/wt"
	want := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, mod), "/")
		if rel == "cmd/internal/e2e" {
			continue
		}
		if rel == "" {
			rel = "."
		}
		want[rel] = true
		if !rows[rel] {
			t.Errorf("CONTRIBUTING.md's coverage table has no row for %s: run make cover and put its table there", rel)
		}
	}
	if len(want) < 20 {
		t.Fatalf("go list found %d packages: the listing is broken", len(want))
	}
	for r := range rows {
		if !want[r] {
			t.Errorf("CONTRIBUTING.md's coverage table has a row for %s, which is no package of the module", r)
		}
	}
}
