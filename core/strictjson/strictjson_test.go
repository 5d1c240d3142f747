package strictjson

import (
	"encoding/json"
	"reflect"
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

type wMeta struct {
	V int    `json:"v"`
	R uint64 `json:"r"`
}

type wInner struct {
	A int8    `json:"a"`
	B *string `json:"b"`
	F float64 `json:"f,omitempty"`
}

// wRec has no generated decoder: Decode checks it, then encoding/json
// decodes it.
type wRec struct {
	wMeta
	ID    string   `json:"id"`
	On    bool     `json:"on"`
	In    wInner   `json:"in"`
	P     *wInner  `json:"p"`
	List  []wInner `json:"list"`
	Names []string `json:"names,omitempty"`
	N     *int     `json:"n"`
	U     uint16   `json:"u,omitempty"`
}

var walkSeeds = []string{
	`{"v":1,"r":2,"id":"x","on":true,"in":{"a":1,"b":null},"p":null,"list":[],"n":null}`,
	`{"v":-1,"r":18446744073709551615,"id":"héllo","on":false,"in":{"a":-128,"b":"s","f":1.5e3},"p":{"a":127,"b":"t"},"list":[{"a":0,"b":null}],"names":["a","b"],"n":7,"u":65535}`,
	// What the walk leaves to encoding/json: escapes, bytes that are not
	// UTF-8, numbers that do not fit or are not integers, other kinds.
	`{"v":1,"r":2,"id":"a\"b\u00e9\ud83d\ude00\ud800","on":true,"in":{"a":1,"b":"\n"},"p":null,"list":[],"n":null}`,
	`{"v":1,"r":2,"id":"\ud800\u0041\udc00\ud83d","on":true,"in":{"a":1,"b":"\/\b\f\r\t\\"},"p":null,"list":[],"names":["{\"v\":1}","\u00e9\u4e2d"],"n":null}`,
	"{\"v\":1,\"r\":2,\"id\":\"\xff\xfe\",\"on\":true,\"in\":{\"a\":1,\"b\":null},\"p\":null,\"list\":[],\"n\":null}",
	`{"v":1,"r":2,"id":"x","on":true,"in":{"a":128,"b":null},"p":null,"list":[],"n":null}`,
	`{"v":1.0,"r":2,"id":"x","on":true,"in":{"a":1,"b":null},"p":null,"list":[],"n":null}`,
	`{"v":1,"r":-0,"id":"x","on":true,"in":{"a":1,"b":null},"p":null,"list":[],"n":null}`,
	`{"v":1,"r":2,"id":7,"on":true,"in":{"a":1,"b":null},"p":null,"list":[],"n":null}`,
	`{"v":1,"r":2,"id":"x","on":"true","in":{"a":1,"b":null},"p":null,"list":[],"n":null}`,
	`{"v":"1","r":2,"id":"x","on":true,"in":{"a":1,"b":null},"p":null,"list":[],"n":1e2}`,
	`{"v":1,"r":2,"id":"x","on":true,"in":{"a":1,"b":null,"f":"1"},"p":null,"list":[],"n":null}`,
	`{"v":null,"r":null,"id":null,"on":null,"in":null,"p":null,"list":null,"names":null,"n":null,"u":null}`,
	// Strictness, on the way.
	`{"v":1,"r":2,"id":7,"on":true,"in":{"a":1,"b":null},"p":null,"list":[],"n":null,"x":1}`,
	`{"v":1,"r":2,"id":"x","on":true,"in":{"a":1,"b":null},"p":null,"list":[{"a":1}],"n":null}`,
	`{"v":1,"r":2,"id":"x","id":"y","on":true,"in":{"a":1,"b":null},"p":null,"list":[],"n":null}`,
	`{"v":1,"r":2,"id":"x","on":true,"in":[],"p":null,"list":{},"n":null}`,
	`{"v":1,"r":2,"id":"x","on":true,"in":{"a":1,"b":null},"p":null,"list":[],"n":{}}`,
	`{"v":1,"r":2,"id":"x","on":true,"in":{"a":1,"b":null},"p":null,"list":[], "n":null} x`,
}

// asEncodingJSON fails unless what Decode accepts, encoding/json
// decodes to the same value, and what encoding/json refuses, Decode
// refuses with encoding/json's error.
func asEncodingJSON(t *testing.T, data []byte) {
	var strict, plain wRec
	err := Decode(data, &strict)
	perr := json.Unmarshal(data, &plain)
	switch {
	case err == nil && (perr != nil || !reflect.DeepEqual(strict, plain)):
		t.Fatalf("%q: Decode gives %+v, encoding/json %+v (%v)", data, strict, plain, perr)
	case perr != nil && err == nil:
		t.Fatalf("%q: encoding/json refuses it (%v), Decode does not", data, perr)
	case err != nil && perr != nil && json.Valid(data) && strictOK(data) && err.Error() != perr.Error():
		t.Fatalf("%q: Decode says %v, encoding/json %v", data, err, perr)
	}
}

// strictOK reports whether the strict check alone passes data as a wRec.
func strictOK(data []byte) bool {
	w := walker{data: data}
	return w.value(reflect.TypeFor[wRec](), "") == nil
}

// TestDecodeAsEncodingJSON: on documents that the check passes, Decode is
// encoding/json's decoding, values and errors (escapes, bytes that are not
// UTF-8, numbers that do not fit, values of another kind, nulls); the
// strictness seeds are refused.
func TestDecodeAsEncodingJSON(t *testing.T) {
	for _, s := range walkSeeds {
		asEncodingJSON(t, []byte(s))
	}
	var r wRec
	if err := Decode([]byte(walkSeeds[1]), &r); err != nil || r.In.A != -128 || *r.P.B != "t" || r.R != 18446744073709551615 || r.Names[1] != "b" || *r.N != 7 {
		t.Fatalf("%v %+v", err, r)
	}
	for _, s := range walkSeeds[len(walkSeeds)-6:] {
		if Decode([]byte(s), &wRec{}) == nil {
			t.Errorf("%s: accepted", s)
		}
	}
}

// FuzzDecodeAsEncodingJSON: on any input, Decode accepts only what
// encoding/json decodes, to the same value.
func FuzzDecodeAsEncodingJSON(f *testing.F) {
	for _, s := range walkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(asEncodingJSON)
}
