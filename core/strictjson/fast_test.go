package strictjson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// fSub and fRec carry a decoder and an encoder written as scripts/
// genfastjson writes them (one bit a field, a give-up on anything else),
// so that the fast path's reader and writer are tested here, on the
// shapes wt's records have. fRec's decoder leaves "detail" to the slow
// path, as a record with a field of no generated decoding would.
type fSub struct {
	PID   int    `json:"pid"`
	Ticks uint64 `json:"start_ticks"`
}

func (x *fSub) DecodeFastJSON(d *Dec) {
	d.Object()
	var seen uint64
	for {
		k, ok := d.Key()
		if !ok {
			break
		}
		switch string(k) {
		case "pid":
			if seen&0x1 != 0 {
				d.GiveUp()
				return
			}
			seen |= 0x1
			x.PID = int(d.Int64(0))
		case "start_ticks":
			if seen&0x2 != 0 {
				d.GiveUp()
				return
			}
			seen |= 0x2
			x.Ticks = d.Uint64(64)
		default:
			d.GiveUp()
			return
		}
	}
	if seen&0x3 != 0x3 {
		d.GiveUp()
	}
}

func (x fSub) AppendFastJSON(e *Enc, depth int) {
	e.Open()
	n := 0
	e.Key(n, `"pid"`, depth)
	e.Int(int64(x.PID))
	n++
	e.Key(n, `"start_ticks"`, depth)
	e.Uint(x.Ticks)
	n++
	e.Close(n, depth)
}

type fRec struct {
	ID     string         `json:"id"`
	N      int            `json:"n"`
	Big    int64          `json:"big"`
	U      uint64         `json:"u"`
	On     bool           `json:"on"`
	Branch *string        `json:"branch"`
	Tags   []string       `json:"tags"`
	Sub    *fSub          `json:"sub"`
	Opt    string         `json:"opt,omitempty"`
	Detail map[string]any `json:"detail,omitempty"`
}

func (x *fRec) DecodeFastJSON(d *Dec) {
	d.Object()
	var seen uint64
	once := func(bit uint64) bool {
		if seen&bit != 0 {
			d.GiveUp()
			return false
		}
		seen |= bit
		return true
	}
	for {
		k, ok := d.Key()
		if !ok {
			break
		}
		switch string(k) {
		case "id":
			if !once(0x1) {
				return
			}
			x.ID = d.String()
		case "n":
			if !once(0x2) {
				return
			}
			x.N = int(d.Int64(0))
		case "big":
			if !once(0x4) {
				return
			}
			x.Big = d.Int64(64)
		case "u":
			if !once(0x8) {
				return
			}
			x.U = d.Uint64(64)
		case "on":
			if !once(0x10) {
				return
			}
			x.On = d.Bool()
		case "branch":
			if !once(0x20) {
				return
			}
			if !d.Null() {
				v := d.String()
				x.Branch = &v
			}
		case "tags":
			if !once(0x40) {
				return
			}
			x.Tags = d.Strings()
		case "sub":
			if !once(0x80) {
				return
			}
			if !d.Null() {
				x.Sub = new(fSub)
				x.Sub.DecodeFastJSON(d)
			}
		case "opt":
			if !once(0x100) {
				return
			}
			x.Opt = d.String()
		default:
			d.GiveUp()
			return
		}
	}
	if seen&0xff != 0xff {
		d.GiveUp()
	}
}

func (x fRec) AppendFastJSON(e *Enc, depth int) {
	e.Open()
	n := 0
	e.Key(n, `"id"`, depth)
	e.String(x.ID)
	n++
	e.Key(n, `"n"`, depth)
	e.Int(int64(x.N))
	n++
	e.Key(n, `"big"`, depth)
	e.Int(x.Big)
	n++
	e.Key(n, `"u"`, depth)
	e.Uint(x.U)
	n++
	e.Key(n, `"on"`, depth)
	e.Bool(x.On)
	n++
	e.Key(n, `"branch"`, depth)
	if x.Branch == nil {
		e.Null()
	} else {
		e.String(*x.Branch)
	}
	n++
	e.Key(n, `"tags"`, depth)
	e.Strings(x.Tags, depth+1)
	n++
	e.Key(n, `"sub"`, depth)
	if x.Sub == nil {
		e.Null()
	} else {
		x.Sub.AppendFastJSON(e, depth+1)
	}
	n++
	if len(x.Opt) != 0 {
		e.Key(n, `"opt"`, depth)
		e.String(x.Opt)
		n++
	}
	if len(x.Detail) != 0 {
		e.Key(n, `"detail"`, depth)
		e.Value(x.Detail, depth+1)
		n++
	}
	e.Close(n, depth)
}

// fDoc is a plain fRec document with the member named by key replaced
// by member ("" drops it), and extra appended inside the object.
func fDoc(key, member, extra string) string {
	members := []struct{ k, m string }{
		{"id", `"id":"x"`}, {"n", `"n":-3`}, {"big", `"big":9223372036854775807`},
		{"u", `"u":18446744073709551615`}, {"on", `"on":true`}, {"branch", `"branch":"refs/heads/wt/T-1"`},
		{"tags", `"tags":["a","b"]`}, {"sub", `"sub":{"pid":42,"start_ticks":7}`},
	}
	var parts []string
	for _, p := range members {
		switch {
		case p.k != key:
			parts = append(parts, p.m)
		case member != "":
			parts = append(parts, member)
		}
	}
	if extra != "" {
		parts = append(parts, extra)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// TestDecodeTakesTheGeneratedDecoderOnlyOnThePlainCase: the generated
// decoder alone decodes a plain document; anything else (an escaped key,
// a key twice, an unknown or missing key, a number that is not an integer
// of the field's size, a value of another kind, null for a string, a
// field it leaves to the slow path) makes it give up, and Decode then
// gives the strict check's refusal or encoding/json's value and error.
func TestDecodeTakesTheGeneratedDecoderOnlyOnThePlainCase(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		doc     string
		fast    bool
		refused string // "" accepted; else part of the error
	}{
		{"plain", fDoc("", "", ""), true, ""},
		{"white space everywhere", " {\n\t\"id\" : \"x\" , \"n\":1,\"big\":-1 ,\"u\":0,\"on\":false,\"branch\":null,\"tags\":[ \"a\" , \"b\" ],\"sub\" : null }\r\n", true, ""},
		{"nulls and an empty list", fDoc("tags", `"tags":[]`, ""), true, ""},
		{"null tags", fDoc("tags", `"tags":null`, ""), true, ""},
		{"omitempty present", fDoc("", "", `"opt":"o"`), true, ""},
		{"escapes in a value", fDoc("id", `"id":"a\"b\\c\/\b\f\n\r\t\u00e9\ud83d\ude00"`, ""), true, ""},
		{"half a surrogate pair", fDoc("id", `"id":"\ud800\u0041\udc00"`, ""), true, ""},
		{"bytes not UTF-8", fDoc("id", "\"id\":\"a\xff\xfeb\"", ""), true, ""},
		{"escaped key", fDoc("id", `"\u0069d":"x"`, ""), false, ""},
		{"a field left to the slow path", fDoc("", "", `"detail":{"k":[1,"v"]}`), false, ""},
		{"null for a string", fDoc("id", `"id":null`, ""), false, ""},
		{"key twice", fDoc("", "", `"n":4`), false, `key "n" appears twice`},
		{"key twice, nested", fDoc("sub", `"sub":{"pid":1,"pid":2,"start_ticks":3}`, ""), false, `sub: key "pid" appears twice`},
		{"unknown key", fDoc("", "", `"N":4`), false, `unknown key "N"`},
		{"missing field", fDoc("on", "", ""), false, `missing field "on"`},
		{"missing field, nested", fDoc("sub", `"sub":{"pid":1}`, ""), false, `sub: missing field "start_ticks"`},
		{"not an integer", fDoc("n", `"n":1.5`, ""), false, "cannot unmarshal number 1.5"},
		{"an exponent", fDoc("n", `"n":1e2`, ""), false, "cannot unmarshal number 1e2"},
		{"int64 overflow", fDoc("big", `"big":9223372036854775808`, ""), false, "cannot unmarshal number"},
		{"negative unsigned", fDoc("u", `"u":-1`, ""), false, "cannot unmarshal number -1"},
		{"a string for a bool", fDoc("on", `"on":"true"`, ""), false, "cannot unmarshal string"},
		{"a number in the tags", fDoc("tags", `"tags":["a",1]`, ""), false, "cannot unmarshal number"},
		{"a string for the tags", fDoc("tags", `"tags":"a"`, ""), false, "tags: want an array"},
		{"a list for the sub", fDoc("sub", `"sub":[]`, ""), false, "sub: want an object"},
		{"a number for the id", fDoc("id", `"id":7`, ""), false, "cannot unmarshal number"},
	} {
		data := []byte(c.doc)
		if !json.Valid(data) {
			t.Fatalf("%s: the case is not JSON: %s", c.name, data)
		}
		if got := DecodesItself(data, &fRec{}); got != c.fast {
			t.Errorf("%s: DecodesItself %v, want %v", c.name, got, c.fast)
		}
		var strict, plain fRec
		err := Decode(data, &strict)
		perr := json.Unmarshal(data, &plain)
		if c.refused == "" {
			if err != nil || perr != nil || !reflect.DeepEqual(strict, plain) {
				t.Errorf("%s: Decode %+v (%v), encoding/json %+v (%v)", c.name, strict, err, plain, perr)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.refused) {
			t.Errorf("%s: Decode: %v, want %q", c.name, err, c.refused)
		}
		if perr != nil && strictOKFor[fRec](data) && err.Error() != perr.Error() {
			t.Errorf("%s: Decode says %v, encoding/json %v", c.name, err, perr)
		}
	}
}

func strictOKFor[T any](data []byte) bool {
	w := walker{data: data}
	return w.value(reflect.TypeFor[T](), "") == nil
}

// TestDecodeIntoAFilledValueMergesAsEncodingJSON: the generated decoder
// builds values afresh, so Decode uses it only into a zero value; into a
// filled one it merges as encoding/json does, decoding into the record
// a pointer already points at.
func TestDecodeIntoAFilledValueMergesAsEncodingJSON(t *testing.T) {
	t.Parallel()
	data := []byte(fDoc("", "", ""))
	sub := &fSub{PID: 9}
	r := fRec{Opt: "kept", Sub: sub}
	if err := Decode(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Opt != "kept" || r.ID != "x" || r.Sub != sub || sub.PID != 42 || sub.Ticks != 7 {
		t.Fatalf("after Decode into a filled value: %+v, sub %+v (want the same pointer, filled)", r, sub)
	}
}

// TestDecodeRefusesWhatIsNotANonNilPointer: Decode needs somewhere to
// decode into.
func TestDecodeRefusesWhatIsNotANonNilPointer(t *testing.T) {
	t.Parallel()
	for _, v := range []any{fRec{}, (*fRec)(nil), nil, 3} {
		if err := Decode([]byte(`{}`), v); err == nil || !strings.Contains(err.Error(), "non-nil pointer") {
			t.Errorf("Decode into %#v: %v", v, err)
		}
	}
}

// TestDecodeOfAnEmptyObjectAndTrailingSpace: white space after the value
// is not trailing data; an empty document, and a second value, are refused.
func TestDecodeOfAnEmptyObjectAndTrailingSpace(t *testing.T) {
	t.Parallel()
	var m map[string]any
	if err := Decode([]byte("{} \n\t"), &m); err != nil || m == nil || len(m) != 0 {
		t.Errorf("{} with trailing space: %v %v", m, err)
	}
	for doc, says := range map[string]string{
		"   ":        "no JSON value",
		`{} {}`:      "trailing data",
		`{}x`:        "trailing data",
		`1 2`:        "trailing data",
		`{"a":1,}`:   "invalid character",
		`{"a" 1}`:    "invalid character",
		`["a",,"b"]`: "invalid character",
	} {
		var v any
		if err := Decode([]byte(doc), &v); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%q: %v, want %q", doc, err, says)
		}
	}
}

// TestDecodeOfScalarsAgainstStructures: a scalar's type is left to
// encoding/json; a structure where a scalar must be is refused by the
// check, naming where.
func TestDecodeOfScalarsAgainstStructures(t *testing.T) {
	t.Parallel()
	type s struct {
		N int               `json:"n"`
		M map[string]string `json:"m"`
		A [2]int            `json:"a"`
	}
	for doc, says := range map[string]string{
		`{"n":{},"m":{},"a":[1,2]}`:            "n: want a int, not a structure",
		`{"n":1,"m":[],"a":[1,2]}`:             "m: want an object",
		`{"n":1,"m":{"k":[]},"a":[1,2]}`:       "m.k: want a string, not a structure",
		`{"n":1,"m":{"k":"v","k":"w"},"a":[]}`: `m: key "k" appears twice`,
		`{"n":1,"m":{},"a":{}}`:                "a: want an array",
		`{"n":1,"m":{},"a":[1,[2]]}`:           "a[1]: want a int, not a structure",
	} {
		var v s
		if err := Decode([]byte(doc), &v); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v, want %q", doc, err, says)
		}
	}
	var v s
	if err := Decode([]byte(`{"n":null,"m":null,"a":[1,2]}`), &v); err != nil || v.A != [2]int{1, 2} {
		t.Errorf("nulls: %v %+v", err, v)
	}
}

// TestDecPrimitivesGiveUpOnWhatTheyDoNotTake: each reader of the fast
// path gives up, and returns a zero value, on a value it does not take;
// once given up, every read is a zero value.
func TestDecPrimitivesGiveUpOnWhatTheyDoNotTake(t *testing.T) {
	t.Parallel()
	dec := func(s string) *Dec { return &Dec{w: walker{data: []byte(s)}} }
	for _, c := range []struct {
		doc  string
		read func(d *Dec) any
		want any
		bad  bool
	}{
		{`127`, func(d *Dec) any { return d.Int64(8) }, int64(127), false},
		{`128`, func(d *Dec) any { return d.Int64(8) }, int64(127), true}, // ParseInt's clamp, given up
		{`"1"`, func(d *Dec) any { return d.Int64(64) }, int64(0), true},
		{`-1`, func(d *Dec) any { return d.Uint64(64) }, uint64(0), true},
		{`255`, func(d *Dec) any { return d.Uint64(8) }, uint64(255), false},
		{`true`, func(d *Dec) any { return d.Bool() }, true, false},
		{`false`, func(d *Dec) any { return d.Bool() }, false, false},
		{`null`, func(d *Dec) any { return d.Bool() }, false, true},
		{`1`, func(d *Dec) any { return d.String() }, "", true},
		{`[]`, func(d *Dec) any { return d.Strings() }, []string{}, false},
		{`null`, func(d *Dec) any { return d.Strings() }, []string(nil), false},
		{`{}`, func(d *Dec) any { return d.Strings() }, []string(nil), true},
		{`[ "a" , "b" ]`, func(d *Dec) any { return d.Strings() }, []string{"a", "b"}, false},
		{`"x"`, func(d *Dec) any { return d.Null() }, false, false},
		{`[]`, func(d *Dec) any { d.Object(); return nil }, nil, true},
		{`{"\u0061":1}`, func(d *Dec) any { d.Object(); k, ok := d.Key(); return string(k) + map[bool]string{true: "!"}[ok] }, "", true},
		{`{"a":1}`, func(d *Dec) any { d.Object(); k, ok := d.Key(); return string(k) + map[bool]string{true: "!"}[ok] }, "a!", false},
		{`{}`, func(d *Dec) any { d.Object(); _, ok := d.Key(); return ok }, false, false},
		{`"s"`, func(d *Dec) any { d.Skip(); return d.w.pos }, 3, false},
		{`12.5`, func(d *Dec) any { d.Skip(); return d.w.pos }, 4, false},
		{`{"a":1}`, func(d *Dec) any { d.Skip(); return d.w.pos }, 0, true},
		{`[1]`, func(d *Dec) any { d.Skip(); return d.w.pos }, 0, true},
	} {
		d := dec(c.doc)
		got := c.read(d)
		if !reflect.DeepEqual(got, c.want) || d.bad != c.bad {
			t.Errorf("%s: read %#v (gave up %v), want %#v (gave up %v)", c.doc, got, d.bad, c.want, c.bad)
		}
	}
	d := dec(`{"a":"s","b":1,"c":true,"d":["x"]}`)
	d.GiveUp()
	if d.Int64(64) != 0 || d.Uint64(64) != 0 || d.Bool() || d.String() != "" || d.Strings() != nil || d.Null() {
		t.Error("a Dec that gave up still reads values")
	}
	if k, ok := d.Key(); ok || k != nil {
		t.Errorf("a Dec that gave up reads key %q", k)
	}
	d.Skip()
	d.Object()
	if d.w.pos != 0 {
		t.Errorf("a Dec that gave up moved to %d", d.w.pos)
	}
}

// TestMarshalWritesItselfAsEncodingJSON: a record with a generated encoder
// is written by it, byte for byte encoding/json's, compact and indented,
// with its detail's values at every depth (strings, integers, booleans,
// string lists, maps, records with a generated encoder and nil pointers
// to them, and what it hands to encoding/json: floats, lists of anything).
func TestMarshalWritesItselfAsEncodingJSON(t *testing.T) {
	t.Parallel()
	if !WritesItself(fRec{}) || !WritesItself(&fRec{}) || WritesItself(eRec{}) {
		t.Fatal("WritesItself does not tell a generated encoder")
	}
	branch := "refs/heads/wt/T-1"
	full := fRec{ID: "a<b>&\"\u2028\xff", N: -1, Big: -1 << 62, U: 1 << 63, On: true, Branch: &branch,
		Tags: []string{"x", ""}, Sub: &fSub{42, 7}, Opt: "o",
		Detail: map[string]any{
			"s": "v", "i": 3, "i64": int64(-4), "u64": uint64(5), "b": false, "nil": nil,
			"list": []string{"a"}, "empty": []string{}, "nolist": []string(nil),
			"map":    map[string]any{"z": 1, "a": map[string]any{"deep": true}},
			"nilmap": map[string]any(nil), "emptymap": map[string]any{},
			"sub": fSub{1, 2}, "psub": &fSub{3, 4}, "nosub": (*fSub)(nil),
			"float": 1.5, "any": []any{1, "x", map[string]any{"k": []any{}}},
		}}
	for _, v := range []any{full, &full, fRec{}, fRec{Tags: []string{}}, []fRec{full, {}}, map[string]any{"r": full}} {
		sameMarshal(t, v)
	}
	// The generated encoder wrote it: the same bytes come from it alone.
	e := Enc{indent: true}
	full.AppendFastJSON(&e, 0)
	got, err := MarshalIndent(full)
	if err != nil || !bytes.Equal(got, e.buf) {
		t.Errorf("MarshalIndent is not the generated encoder's: %s (%v)", got, err)
	}
	// A nil pointer to such a record is null, as encoding/json writes it.
	if b, err := Marshal((*fRec)(nil)); err != nil || string(b) != "null" {
		t.Errorf("Marshal of a nil record: %s %v", b, err)
	}
}

// TestMarshalOfADetailEncodingJSONRefuses: a detail value encoding/json
// cannot write fails the whole record, with encoding/json's error.
func TestMarshalOfADetailEncodingJSONRefuses(t *testing.T) {
	t.Parallel()
	r := fRec{Detail: map[string]any{"a": 1.5, "ch": make(chan int), "z": "after"}}
	_, err := Marshal(r)
	_, werr := json.Marshal(r)
	if err == nil || werr == nil || err.Error() != werr.Error() {
		t.Fatalf("Marshal: %v; encoding/json: %v", err, werr)
	}
	e := Enc{}
	r.AppendFastJSON(&e, 0)
	if e.err == nil {
		t.Error("the generated encoder did not keep the detail's error")
	}
}

// TestUnquoteAsEncodingJSON: unquote spells a JSON string as
// encoding/json does, and refuses what is not one.
func TestUnquoteAsEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`""`, `"plain"`, `"\"\\\/\b\f\n\r\t"`, `"\u00e9\u4E2D"`, `"\ud83d\ude00"`,
		`"\ud800"`, `"\ud800x"`, `"\ud800\u0041"`, `"\udc00\ud800"`, `"\ud800\ud800"`,
		"\"a\xffb\"", "\"é中\"",
	} {
		var want string
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		got, ok := unquote([]byte(raw))
		if !ok || got != want {
			t.Errorf("unquote(%s) = %q, %v; want %q", raw, got, ok, want)
		}
		if got, ok := stringOf([]byte(raw), strings.Contains(raw, `\`)); !ok || got != want {
			t.Errorf("stringOf(%s) = %q, %v; want %q", raw, got, ok, want)
		}
	}
	for _, raw := range []string{`"`, `x`, `"abc`, `abc"`, `"a\"`, `"\x"`, `"\u12"`, `"\uZZZZ"`, "\"a\tb\"", `"a"b"`} {
		if got, ok := unquote([]byte(raw)); ok {
			t.Errorf("unquote(%s) = %q, want a refusal", raw, got)
		}
	}
}
