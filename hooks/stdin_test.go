package hooks

import (
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
)

func TestParseRefUpdates(t *testing.T) {
	z := strings.Repeat("0", 40)
	a := strings.Repeat("a", 40)
	got, err := ParseRefUpdates(strings.NewReader(z + " " + a + " refs/heads/x\n" + a + " ref:refs/heads/y HEAD\n"))
	if err != nil || len(got) != 2 || got[0] != (RefUpdate{z, a, "refs/heads/x"}) || got[1].Ref != "HEAD" {
		t.Fatalf("%+v %v", got, err)
	}
	if got, err := ParseRefUpdates(strings.NewReader("")); err != nil || len(got) != 0 {
		t.Fatalf("empty input: %+v %v", got, err)
	}
	for _, bad := range []string{"a b\n", "a b c d\n", " a b\n", "a  b c\n", "\n"} {
		if _, err := ParseRefUpdates(strings.NewReader(bad)); decision.CodeOf(err) != decision.InvalidHookInput {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestParsePushUpdates(t *testing.T) {
	z := strings.Repeat("0", 40)
	a := strings.Repeat("a", 40)
	s := strings.Repeat("b", 64)
	got, err := ParsePushUpdates(strings.NewReader("refs/heads/x " + a + " refs/heads/x " + z + "\n(delete) " + z + " refs/heads/y " + s + "\n"))
	if err != nil || len(got) != 2 || got[0].LocalRef != "refs/heads/x" || !got[1].Deletes() || got[0].Deletes() {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range []string{
		"refs/heads/x " + a + " refs/heads/x\n",
		"refs/heads/x notanoid refs/heads/x " + z + "\n",
		"refs/heads/x " + strings.ToUpper(a) + " refs/heads/x " + z + "\n",
		"refs/heads/x " + a[:39] + " refs/heads/x " + z + "\n",
	} {
		if _, err := ParsePushUpdates(strings.NewReader(bad)); decision.CodeOf(err) != decision.InvalidHookInput {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// FuzzHookStdin: the reference-transaction and pre-push parsers never
// panic, and every line they accept has the fields the protocol says.
func FuzzHookStdin(f *testing.F) {
	f.Add("0000000000000000000000000000000000000000 1111111111111111111111111111111111111111 refs/heads/x\n")
	f.Add("ref:refs/heads/a ref:refs/heads/b HEAD\n")
	f.Add("refs/heads/x 1111111111111111111111111111111111111111 refs/heads/x 0000000000000000000000000000000000000000\n")
	f.Add("(delete) 0000000000000000000000000000000000000000 refs/heads/x 1111111111111111111111111111111111111111")
	f.Fuzz(func(t *testing.T, in string) {
		if us, err := ParseRefUpdates(strings.NewReader(in)); err == nil {
			for _, u := range us {
				if u.Old == "" || u.New == "" || u.Ref == "" || strings.ContainsAny(u.Ref, " \n") {
					t.Fatalf("accepted %+v from %q", u, in)
				}
			}
		}
		if ps, err := ParsePushUpdates(strings.NewReader(in)); err == nil {
			for _, p := range ps {
				if !isOID(p.LocalOID) || !isOID(p.RemoteOID) || p.LocalRef == "" || p.RemoteRef == "" {
					t.Fatalf("accepted %+v from %q", p, in)
				}
			}
		}
	})
}
