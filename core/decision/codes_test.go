package decision

import (
	"os"
	"regexp"
	"slices"
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
