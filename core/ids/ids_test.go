package ids

import (
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := New()
		if !Valid(id) || id != strings.ToLower(id) {
			t.Fatalf("%q is not a canonical lower-case UUID", id)
		}
		if id[14] != '4' || !strings.ContainsRune("89ab", rune(id[19])) {
			t.Fatalf("%q is not version 4, RFC 9562 variant", id)
		}
		if seen[id] {
			t.Fatalf("%q twice", id)
		}
		seen[id] = true
	}
}

func TestValid(t *testing.T) {
	for s, want := range map[string]bool{
		"0a6ed475-4524-41a3-83fc-9e16166e0c1d":    true,
		"0A6ED475-4524-41A3-83FC-9E16166E0C1D":    true,
		"0a6ed475-4524-41a3-83fc-9e16166e0c1":     false,
		"0a6ed475-4524-41a3-83fc-9e16166e0c1dd":   false,
		"0a6ed475x4524-41a3-83fc-9e16166e0c1d":    false,
		"0a6ed475-4524-41a3-83fc-9e16166e0c1g":    false,
		"{0a6ed475-4524-41a3-83fc-9e16166e0c1d}":  false,
		"0a6ed475452441a383fc9e16166e0c1d":        false,
		"urn:uuid:0a6ed475-4524-41a3-83fc-9e1616": false,
		"": false,
	} {
		if Valid(s) != want {
			t.Errorf("Valid(%q) = %v, want %v", s, !want, want)
		}
	}
}
