package proc

import (
	"regexp"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
)

const goodBinding = `{"holder":{"client_id":"claude-1","pid":4242,"boot_id":"622cc780-73cd-4aa4-90d5-7d980cba5294","start_ticks":777,"session_id":null,"run_id":"r1"},"lease_id":"b55868fa-3441-4f88-94df-dc78deda39f2","kind":"agent"}`

func TestDecodeRuntimeBinding(t *testing.T) {
	b, ok, err := DecodeRuntimeBinding(RuntimeBindingPrefix + goodBinding)
	if err != nil || !ok {
		t.Fatalf("good binding: ok=%v err=%v", ok, err)
	}
	if b.Holder.PID != 4242 || b.Holder.ClientID != "claude-1" || b.Kind != "agent" || b.Holder.SessionID != nil || *b.Holder.RunID != "r1" {
		t.Fatalf("decoded %+v", b)
	}
	enc, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, _, err := DecodeRuntimeBinding(enc)
	if err != nil || !back.Holder.Same(b.Holder) || *back.LeaseID != *b.LeaseID {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	if _, ok, err := DecodeRuntimeBinding("ticket:JIRA-1"); ok || err != nil {
		t.Fatalf("opaque binding: ok=%v err=%v", ok, err)
	}

	bad := map[string]string{
		"duplicate key":        strings.Replace(goodBinding, `"kind":"agent"`, `"kind":"agent","kind":"test"`, 1),
		"duplicate holder key": strings.Replace(goodBinding, `"pid":4242`, `"pid":4242,"pid":1`, 1),
		"extra field":          strings.Replace(goodBinding, `"kind":"agent"`, `"kind":"agent","x":1`, 1),
		"extra holder field":   strings.Replace(goodBinding, `"pid":4242`, `"pid":4242,"pgid":1`, 1),
		"missing field":        strings.Replace(goodBinding, `,"kind":"agent"`, ``, 1),
		"missing session":      strings.Replace(goodBinding, `"session_id":null,`, ``, 1),
		"bad kind":             strings.Replace(goodBinding, `"agent"`, `"daemon"`, 1),
		"zero pid":             strings.Replace(goodBinding, `"pid":4242`, `"pid":0`, 1),
		"negative pid":         strings.Replace(goodBinding, `"pid":4242`, `"pid":-3`, 1),
		"float pid":            strings.Replace(goodBinding, `"pid":4242`, `"pid":4.5`, 1),
		"zero ticks":           strings.Replace(goodBinding, `"start_ticks":777`, `"start_ticks":0`, 1),
		"bad uuid":             strings.Replace(goodBinding, `"b55868fa-3441-4f88-94df-dc78deda39f2"`, `"nope"`, 1),
		"bad boot":             strings.Replace(goodBinding, `622cc780-73cd-4aa4-90d5-7d980cba5294`, `boot`, 1),
		"bad client":           strings.Replace(goodBinding, `"claude-1"`, `"-x"`, 1),
		"empty run":            strings.Replace(goodBinding, `"run_id":"r1"`, `"run_id":""`, 1),
		"trailing data":        goodBinding + `{}`,
		"not an object":        `[1]`,
		"null holder":          strings.Replace(goodBinding, goodBinding[10:strings.Index(goodBinding, `},`)+1], `null`, 1),
	}
	for name, v := range bad {
		t.Run(name, func(t *testing.T) {
			_, ok, err := DecodeRuntimeBinding(RuntimeBindingPrefix + v)
			if !ok || decision.CodeOf(err) != decision.InvalidRuntimeBinding {
				t.Fatalf("%s: ok=%v err=%v, want INVALID_RUNTIME_BINDING", v, ok, err)
			}
		})
	}
}

// FuzzDecodeRuntimeBinding checks that the decoder never panics, that every
// refusal is INVALID_RUNTIME_BINDING, and that anything it accepts survives a
// round trip through Encode unchanged.
func FuzzDecodeRuntimeBinding(f *testing.F) {
	f.Add(RuntimeBindingPrefix + goodBinding)
	f.Add(RuntimeBindingPrefix + `{"holder":{},"lease_id":null,"kind":"test"}`)
	f.Add("ticket:1")
	f.Fuzz(func(t *testing.T, s string) {
		b, ok, err := DecodeRuntimeBinding(s)
		if !ok {
			return
		}
		if err != nil {
			if decision.CodeOf(err) != decision.InvalidRuntimeBinding {
				t.Fatalf("error %v is not INVALID_RUNTIME_BINDING", err)
			}
			return
		}
		enc, err := b.Encode()
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", s, err)
		}
		back, _, err := DecodeRuntimeBinding(enc)
		if err != nil || !back.Holder.Same(b.Holder) || back.Kind != b.Kind {
			t.Fatalf("round trip of %q changed it: %+v / %v", s, back, err)
		}
	})
}

// TestValidClientID checks the hand-written validator against the pattern
// of docs/format.md compiled as a regexp, on fixed cases and on many generated ones.
func TestValidClientID(t *testing.T) {
	re := regexp.MustCompile(ClientIDPattern)
	cases := []string{"", "a", "A9", "agent-7", "a.b_c:d-e", "-a", ".a", "_", "a b", "a/b", "é", "a\x00",
		strings.Repeat("a", 128), strings.Repeat("a", 129), "9" + strings.Repeat(":", 127)}
	alphabet := []byte("aZ09._:- /\x00\xc3")
	for i := 0; i < 20000; i++ {
		n := i % 7
		b := make([]byte, n)
		for j := range b {
			b[j] = alphabet[(i*31+j*17+i/7)%len(alphabet)]
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		if got, want := ValidClientID(c), re.MatchString(c); got != want {
			t.Errorf("ValidClientID(%q) = %v, the pattern says %v", c, got, want)
		}
	}
}
