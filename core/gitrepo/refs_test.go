package gitrepo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadRefValues: loose and packed values are read apart, peeled lines
// and the header are skipped, a ref that is a prefix of another is not
// matched, and absence is not an error.
func TestReadRefValues(t *testing.T) {
	common := t.TempDir()
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	os.MkdirAll(filepath.Join(common, "refs/heads/wt"), 0o755)
	os.WriteFile(filepath.Join(common, "refs/heads/wt/T-1"), []byte(a+"\n"), 0o644)
	os.WriteFile(filepath.Join(common, "packed-refs"), []byte("# pack-refs with: peeled fully-peeled sorted \n"+
		b+" refs/heads/wt/T-1\n"+a+" refs/heads/wt/T-10\n"+b+" refs/tags/v1\n^"+a+"\n"), 0o644)
	for _, c := range []struct {
		ref           string
		loose, packed string
	}{
		{"refs/heads/wt/T-1", a, b},
		{"refs/heads/wt/T-10", "", a},
		{"refs/heads/wt", "", ""}, // a directory, not a ref
		{"refs/heads/wt/T-1/x", "", ""},
		{"refs/heads/none", "", ""},
	} {
		v, err := ReadRefValues(common, c.ref)
		if err != nil && c.ref != "refs/heads/wt" {
			t.Errorf("%s: %v", c.ref, err)
			continue
		}
		if err == nil && (v.Loose != c.loose || v.Packed != c.packed) {
			t.Errorf("%s: %+v, want loose %q packed %q", c.ref, v, c.loose, c.packed)
		}
	}
	if _, err := ReadRefValues(common, "HEAD"); err == nil {
		t.Error("HEAD read as a shared ref")
	}
}
