package store

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/strictjson"
)

// fill sets every field of v (a pointer), at every depth, to a value that
// is not its zero: strings with characters encoding/json escapes, pointers
// allocated, slices and maps of two entries.
func fill(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("a<b>&\"c\"\n\u2028é")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(-7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Pointer:
		if depth < 4 {
			v.Set(reflect.New(v.Type().Elem()))
			fill(v.Elem(), depth+1)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // json.RawMessage
			v.SetBytes([]byte(`{"raw":[1,2]}`))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), depth+1)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for _, k := range []string{"z", "a"} {
			e := reflect.New(v.Type().Elem()).Elem()
			if e.Kind() == reflect.Interface {
				e.Set(reflect.ValueOf(map[string]any{"n": 3, "s": "x", "l": []any{true, nil}}))
			} else {
				fill(e, depth+1)
			}
			m.SetMapIndex(reflect.ValueOf(k), e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	}
}

// Every record wt writes comes out of strictjson's encoder byte for byte
// as encoding/json writes it, filled and empty; those a run of wt-exec or
// a hook writes are written without encoding/json.
func TestRecordsEncodeAsEncodingJSON(t *testing.T) {
	direct := []any{&Repository{}, &Policy{}, &Allocation{}, &Runtime{}, &Binding{}, &Registration{},
		&Lease{}, &FleetLease{}, &Event{}, &proc.RuntimeBinding{}}
	handed := []any{&Journal{}, &Receipt{}} // their payloads are json.RawMessage
	for _, rec := range append(direct, handed...) {
		empty := reflect.New(reflect.TypeOf(rec).Elem()).Interface()
		fill(reflect.ValueOf(rec).Elem(), 0)
		for _, v := range []any{rec, empty} {
			got, err := strictjson.MarshalIndent(v)
			want, werr := json.MarshalIndent(v, "", "  ")
			if err != nil || werr != nil || !bytes.Equal(got, want) {
				t.Fatalf("%T: got\n%s (%v)\nwant\n%s (%v)", v, got, err, want, werr)
			}
			got, _ = strictjson.Marshal(v)
			want, _ = json.Marshal(v)
			if !bytes.Equal(got, want) {
				t.Fatalf("%T compact: got\n%s\nwant\n%s", v, got, want)
			}
		}
	}
	for _, rec := range direct {
		if !strictjson.WritesItself(rec) {
			t.Errorf("%T is handed to encoding/json: a new process pays its first-use analysis", rec)
		}
	}
}

// TestEventDetailRecords: records inside an event's detail (a lease's
// child group, a holder, a lease) are written by their generated encoders
// within the event's detail map, byte for byte as encoding/json
// writes the event.
func TestEventDetailRecords(t *testing.T) {
	var l Lease
	fill(reflect.ValueOf(&l).Elem(), 0)
	var h proc.Holder
	fill(reflect.ValueOf(&h).Elem(), 0)
	ev := Event{At: "t", Event: "writer_lease_released", Detail: map[string]any{
		"child": l.Child, "none": (*ChildGroup)(nil), "holder": h, "lease": &l, "leases": []Lease{l}, "n": 3,
		// What the detail writer handles itself, and what it hands to
		// encoding/json (a float, a small integer, a list of numbers).
		"s": "a<b>&\u2028", "t": true, "big": uint64(1) << 63, "i64": int64(-7), "nil": nil, "strings": []string{"x"},
		"no strings": []string(nil), "map": map[string]any{"z": 1, "a": map[string]any{}, "n": map[string]any(nil)},
		"f": 0.5, "i8": int8(-1), "pids": []int{1, 2},
	}}
	for _, indent := range []bool{false, true} {
		var got, want []byte
		var err, werr error
		if indent {
			got, err = strictjson.MarshalIndent(ev)
			want, werr = json.MarshalIndent(ev, "", "  ")
		} else {
			got, err = strictjson.Marshal(ev)
			want, werr = json.Marshal(ev)
		}
		if err != nil || werr != nil || !bytes.Equal(got, want) {
			t.Fatalf("got\n%s (%v)\nwant\n%s (%v)", got, err, want, werr)
		}
	}
}
