package strictjson

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

type eMeta struct {
	Schema  int `json:"schema_version"`
	Version int `json:"record_version"`
}

type eHolder struct {
	PID   int    `json:"pid"`
	Ticks uint64 `json:"start_ticks"`
}

// eRec is shaped like wt's records: an embedded struct, pointers, slices,
// omitempty fields, a map of anything, a field with no tag, one left out.
type eRec struct {
	eMeta
	ID      string            `json:"id"`
	Branch  *string           `json:"branch"`
	Holder  *eHolder          `json:"holder,omitempty"`
	List    []string          `json:"list"`
	Groups  []eHolder         `json:"groups"`
	Opt     string            `json:"opt,omitempty"`
	Count   int64             `json:"count,omitempty"`
	Flag    bool              `json:"flag"`
	Small   uint8             `json:"small"`
	Detail  map[string]any    `json:"detail"`
	Names   map[string]string `json:"names,omitempty"`
	NoTag   string
	Skipped string `json:"-"`
	hidden  string
}

// sameMarshal fails unless Marshal and MarshalIndent give encoding/json's
// bytes and errors for v.
func sameMarshal(t *testing.T, v any) {
	t.Helper()
	for _, indent := range []bool{false, true} {
		got, err := marshal(v, indent)
		var want []byte
		var werr error
		if indent {
			want, werr = json.MarshalIndent(v, "", "  ")
		} else {
			want, werr = json.Marshal(v)
		}
		if (err == nil) != (werr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("indent %v: %#v\n got %s (%v)\nwant %s (%v)", indent, v, got, err, want, werr)
		}
	}
}

func TestMarshalAsEncodingJSON(t *testing.T) {
	branch := "refs/heads/wt/T-1"
	full := eRec{eMeta: eMeta{1, 7}, ID: "a<b>&c\"d\\e\n\t\x01\x7f\u2028\u2029é\xff", Branch: &branch,
		Holder: &eHolder{42, 1 << 40}, List: []string{"x", ""}, Groups: []eHolder{{1, 2}, {3, 4}},
		Opt: "o", Count: -5, Flag: true, Small: 255,
		Detail: map[string]any{"z": 1, "a": []any{"s", true, nil, map[string]any{}}, "m": map[string]any{"k": "v"}, "n": nil},
		Names:  map[string]string{"b": "2", "a": "1"}, NoTag: "t", Skipped: "never", hidden: "never"}
	values := []any{
		full,
		&full,
		eRec{}, // nil slices and maps, omitempty fields left out
		eRec{List: []string{}, Groups: []eHolder{}, Detail: map[string]any{}},
		[]eRec{{ID: "1"}, {ID: "2"}},
		map[string]any{},
		struct{}{},
		struct {
			A string `json:"a,omitempty"`
		}{},
		nil,
		"plain",
		(*eRec)(nil),
	}
	for _, v := range values {
		sameMarshal(t, v)
	}
}

// What the encoder leaves to encoding/json still comes out as encoding/json
// writes it (and fails as it fails).
func TestMarshalHandsOver(t *testing.T) {
	type withFloat struct {
		F float64 `json:"f"`
	}
	type withString struct {
		N int `json:"n,string"`
	}
	type withDash struct {
		//lint:ignore SA5008 the tag "-," (a field named "-") is what this case tests
		D string `json:"-,"`
	}
	type cyc struct {
		Next *cyc `json:"next"`
	}
	type hidden struct {
		H string `json:"h"`
	}
	type viaPointer struct {
		*hidden
		A string `json:"a"`
	}
	loop := &cyc{}
	loop.Next = loop
	values := []any{
		withFloat{1.5},
		map[string]any{"f": 0.000001},
		withString{3},
		withDash{"d"},
		[]byte("bytes"),
		json.RawMessage(`{"raw":true}`),
		time.Unix(0, 0).UTC(),
		map[int]string{2: "b", 1: "a"},
		[2]int{1, 2},
		viaPointer{&hidden{"promoted"}, "a"},
		viaPointer{nil, "a"},
		json.Number("12"),
		map[string]any{"n": json.Number("1e3")},
	}
	for _, v := range values {
		sameMarshal(t, v)
	}
	if _, err := Marshal(loop); err == nil {
		t.Fatal("a pointer cycle was encoded")
	} else if _, werr := json.Marshal(loop); werr == nil || err.Error() != werr.Error() {
		t.Fatalf("cycle: %v, encoding/json: %v", err, werr)
	}
	if _, err := Marshal(make(chan int)); err == nil {
		t.Fatalf("a channel: %v", err)
	}
}

func FuzzMarshal(f *testing.F) {
	f.Add("x", "refs/heads/wt/T-1", int64(3), uint64(7), true, 2)
	f.Add("<&>\u2028\x00", "\xff\xfe", int64(-1), uint64(0), false, 0)
	f.Fuzz(func(t *testing.T, s, k string, n int64, u uint64, b bool, size int) {
		r := eRec{eMeta: eMeta{int(n), int(u)}, ID: s, Opt: k, Count: n, Flag: b, Small: uint8(u), NoTag: k,
			Detail: map[string]any{k: s, s: n, "b": b, "list": []any{s, k, u}}, Names: map[string]string{s: k}}
		if b {
			r.Branch, r.Holder = &k, &eHolder{int(n), u}
		}
		for i := range size % 5 {
			r.List = append(r.List, s[:min(i, len(s))])
			r.Groups = append(r.Groups, eHolder{i, u})
		}
		sameMarshal(t, r)
		sameMarshal(t, r.Detail)
	})
}
