package strictjson

import (
	"encoding/json"
	"strings"
	"testing"
)

type inner struct {
	A int     `json:"a"`
	B *string `json:"b"`
}

type rec struct {
	ID     string          `json:"id"`
	In     inner           `json:"in"`
	List   []inner         `json:"list"`
	Detail map[string]any  `json:"detail"`
	Raw    json.RawMessage `json:"raw"`
	Opt    string          `json:"opt,omitempty"`
}

// TestDecode: what the one strict reader refuses, at every depth.
func TestDecode(t *testing.T) {
	good := `{"id":"x","in":{"a":1,"b":null},"list":[{"a":2,"b":"s"}],"detail":{"k":[1,{"z":2}]},"raw":{"q":1}}`
	var r rec
	if err := Decode([]byte(good), &r); err != nil || r.ID != "x" || r.List[0].A != 2 {
		t.Fatalf("good: %v %+v", err, r)
	}
	// Strings that hold what delimits structure, escapes, and white space
	// everywhere JSON allows it.
	tricky := " {\n\t\"id\" : \"a\\\"}{],[\\\\\" , \"in\":{ \"a\":-15 ,\"b\":\"\\u0041\"} ,\"list\":[ ],\"detail\":{\"k\":[true,false,null,\"]\"]},\"raw\":\"x\",\"opt\":\"\"}\r\n"
	var tr rec
	if err := Decode([]byte(tricky), &tr); err != nil || tr.ID != `a"}{],[\` {
		t.Fatalf("tricky: %v %+v", err, tr)
	}
	for _, c := range []struct{ doc, says string }{
		{`{"ID":"evil","id":"x","in":{"a":1,"b":null},"list":[],"detail":{},"raw":1}`, `unknown key "ID"`},
		{`{"id":"x","id":"y","in":{"a":1,"b":null},"list":[],"detail":{},"raw":1}`, `key "id" appears twice`},
		{`{"id":"x","in":{"a":1,"A":2,"b":null},"list":[],"detail":{},"raw":1}`, `in: unknown key "A"`},
		{`{"id":"x","in":{"a":1},"list":[],"detail":{},"raw":1}`, `in: missing field "b"`},
		{`{"id":"x","in":{"a":1,"b":null},"list":[{"a":1,"b":null,"b":null}],"detail":{},"raw":1}`, `list[0]: key "b" appears twice`},
		{`{"id":"x","in":{"a":1,"b":null},"list":[],"detail":{"k":{"z":1,"z":2}},"raw":1}`, `detail.k: key "z" appears twice`},
		{`{"id":"x","in":{"a":1,"b":null},"list":[],"detail":{},"raw":{"q":1,"q":1}}`, `raw: key "q" appears twice`},
		{`{"id":"x","in":{"a":1,"b":null},"list":[],"detail":{},"raw":1} {}`, `trailing data`},
		{`{"id":"x","in":[],"list":[],"detail":{},"raw":1}`, `in: want an object`},
		{`[]`, `want an object`},
		// An escaped key is the key it spells.
		{`{"id":"x","\u0069d":"y","in":{"a":1,"b":null},"list":[],"detail":{},"raw":1}`, `key "id" appears twice`},
		{`{"id":"x","in":{"a":1,"b":null},"list":[],"detail":{},"raw":1,"\u004fpt":""}`, `unknown key "Opt"`},
		{`{"id":"x","in":{"a":1,"b":null},"list":[],"detail":{},"raw":1`, `unexpected EOF`},
		{``, `no JSON value`},
	} {
		var r rec
		err := Decode([]byte(c.doc), &r)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: got %v, want %q", c.doc, err, c.says)
		}
	}
}

// FuzzDecode: no input panics, and whatever is accepted re-encodes to a
// document that is accepted again.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"id":"x","in":{"a":1,"b":null},"list":[],"detail":{},"raw":1}`))
	f.Add([]byte(`{"id":"x","id":"y"}`))
	f.Add([]byte(`{"ID":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r rec
		if Decode(data, &r) != nil {
			return
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var again rec
		if err := Decode(b, &again); err != nil {
			t.Fatalf("%s re-encoded as %s, refused: %v", data, b, err)
		}
	})
}

// BenchmarkDecode: one record of the size of the store's (an allocation).
func BenchmarkDecode(b *testing.B) {
	doc := []byte(`{"id":"0b5cc2e4-5a8c-4f0e-9d8b-1d2f4c7a9e10","in":{"a":1,"b":"refs/heads/wt/T-1"},` +
		`"list":[{"a":2,"b":null},{"a":3,"b":"/home/alice/src/app/worktrees/T-1"}],` +
		`"detail":{"owner":"alice","lifecycle":"ACTIVE","role":"feature","bindings":["{\"v\":1}"]},"raw":{"q":[1,2,3]}}`)
	for b.Loop() {
		var r rec
		if err := Decode(doc, &r); err != nil {
			b.Fatal(err)
		}
	}
}
