package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/strictjson"
)

// The plain types have a record type's fields and none of its methods:
// strictjson reads and writes them through encoding/json, as it reads and
// writes every record type without a generated decoder and encoder.
type (
	plainRepository     Repository
	plainPolicy         Policy
	plainAllocation     Allocation
	plainRuntime        Runtime
	plainBinding        Binding
	plainRegistration   Registration
	plainLease          Lease
	plainChildGroup     ChildGroup
	plainConfinement    Confinement
	plainFleetLease     FleetLease
	plainHolder         proc.Holder
	plainIdentity       proc.Identity
	plainRuntimeBinding proc.RuntimeBinding
)

// generatedPair is a record type with generated code, beside its plain
// twin.
type generatedPair struct {
	name       string
	rec, plain func() any // new zero values
}

func pair[T, P any](name string) generatedPair {
	return generatedPair{name, func() any { return new(T) }, func() any { return new(P) }}
}

var generatedPairs = []generatedPair{
	pair[Repository, plainRepository]("Repository"), pair[Policy, plainPolicy]("Policy"),
	pair[Allocation, plainAllocation]("Allocation"), pair[Runtime, plainRuntime]("Runtime"),
	pair[Binding, plainBinding]("Binding"), pair[Registration, plainRegistration]("Registration"),
	pair[Lease, plainLease]("Lease"), pair[ChildGroup, plainChildGroup]("ChildGroup"),
	pair[Confinement, plainConfinement]("Confinement"), pair[FleetLease, plainFleetLease]("FleetLease"),
	pair[proc.Holder, plainHolder]("Holder"), pair[proc.Identity, plainIdentity]("Identity"),
	pair[proc.RuntimeBinding, plainRuntimeBinding]("RuntimeBinding"),
}

// samples are documents of each type: empty, filled with plain strings
// (the generated decoder's case), and filled with strings that
// encoding/json escapes (where a generated decoder gives up).
func samples(t *testing.T, p generatedPair) [][]byte {
	var docs [][]byte
	for _, filled := range []string{"", "plain value é", "a<b>&\"c\"\n\u2028"} {
		v := p.rec()
		if filled != "" {
			fill(reflect.ValueOf(v).Elem(), 0)
			setStrings(reflect.ValueOf(v).Elem(), filled)
		}
		for _, indent := range []bool{false, true} {
			var data []byte
			var err error
			if indent {
				data, err = strictjson.MarshalIndent(v)
			} else {
				data, err = strictjson.Marshal(v)
			}
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, data)
		}
	}
	return docs
}

// setStrings sets every string in v to s.
func setStrings(v reflect.Value, s string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Pointer:
		if !v.IsNil() {
			setStrings(v.Elem(), s)
		}
	case reflect.Slice:
		for i := range v.Len() {
			setStrings(v.Index(i), s)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				setStrings(v.Field(i), s)
			}
		}
	}
}

// asPlain converts a pointer to a record to a pointer to its plain twin
// (the same memory layout).
func asPlain(v any, plain any) any {
	return reflect.ValueOf(v).Convert(reflect.TypeOf(plain)).Interface()
}

// TestGeneratedEncodersMatch: a record's generated encoder writes what the
// standard-library path writes for its plain twin, compact and indented.
func TestGeneratedEncodersMatch(t *testing.T) {
	for _, p := range generatedPairs {
		for _, filled := range []string{"", "plain", "a<b>&\"c\"\n\u2028\xff"} {
			v := p.rec()
			if filled != "" {
				fill(reflect.ValueOf(v).Elem(), 0)
				setStrings(reflect.ValueOf(v).Elem(), filled)
			}
			pv := asPlain(v, p.plain())
			for _, m := range []func(any) ([]byte, error){strictjson.Marshal, strictjson.MarshalIndent} {
				got, err := m(v)
				want, werr := m(pv)
				if err != nil || werr != nil || !bytes.Equal(got, want) {
					t.Errorf("%s: generated\n%s (%v)\nencoding/json\n%s (%v)", p.name, got, err, want, werr)
				}
			}
		}
	}
}

var plainName = regexp.MustCompile(`\bplain([A-Z])`)

// decodeBoth decodes data into a record (its generated decoder first) and
// into its plain twin (the check and encoding/json) and says how they differ.
func decodeBoth(p generatedPair, data []byte) string {
	v, pv := p.rec(), p.plain()
	err := strictjson.Decode(data, v)
	perr := strictjson.Decode(data, pv)
	// encoding/json's errors name the Go type: the twin's is plainT.
	if fmt.Sprint(err) != plainName.ReplaceAllString(fmt.Sprint(perr), "$1") {
		return fmt.Sprintf("errors differ: %v / %v", err, perr)
	}
	if !reflect.DeepEqual(asPlain(v, p.plain()), pv) {
		return fmt.Sprintf("values differ:\n%#v\n%#v", v, pv)
	}
	return ""
}

// TestGeneratedDecodersMatch: what a generated decoder gives, value or
// error, is what the check and encoding/json give for the plain twin; it decodes
// every document a record writes itself, escapes included.
func TestGeneratedDecodersMatch(t *testing.T) {
	for _, p := range generatedPairs {
		docs := samples(t, p)
		for _, data := range docs {
			if why := decodeBoth(p, data); why != "" {
				t.Errorf("%s %s: %s", p.name, data, why)
			}
			if !strictjson.DecodesItself(data, p.rec()) {
				t.Errorf("%s: the generated decoder gave up on %s", p.name, data)
			}
			for _, bad := range mutations(data) {
				if why := decodeBoth(p, bad); why != "" {
					t.Errorf("%s %s: %s", p.name, bad, why)
				}
			}
		}
	}
}

// mutations are documents near data that a strict reader refuses or reads
// differently: each key twice, missing or in another case, a key unknown, null, a float, a string or a structure where another kind
// belongs, a number out of range, an escaped key, trailing data.
func mutations(data []byte) [][]byte {
	s := string(data)
	var out [][]byte
	add := func(m string) {
		if m != s {
			out = append(out, []byte(m))
		}
	}
	// Each member twice (its value first, then the whole document), each
	// member missing, and each key in capitals.
	var members map[string]json.RawMessage
	if json.Unmarshal(data, &members) == nil {
		for k, raw := range members {
			add(strings.Replace(s, "{", fmt.Sprintf("{%q: %s,", k, raw), 1))
			rest := map[string]json.RawMessage{}
			for k2, raw2 := range members {
				if k2 != k {
					rest[k2] = raw2
				}
			}
			without, _ := json.Marshal(rest)
			add(string(without))
			add(strings.Replace(s, fmt.Sprintf("%q", k), fmt.Sprintf("%q", strings.ToUpper(k)), 1))
		}
	}
	add(strings.Replace(s, "{", `{"unknown_key":1,`, 1))
	add(strings.Replace(s, `_version"`, `_versio\u006e"`, 1))
	add(strings.Replace(s, `": "`, `": null, "x": "`, 1))
	for _, r := range [][2]string{{`": 1`, `": 1.5`}, {`":1`, `":1e3`}, {`": 1`, `": "1"`}, {`": -7`, `": 99999999999999999999`},
		{`": 7`, `": -7`}, {`": "`, `": {}, "y": "`}, {`": "`, `": 1, "z": "`}, {`": "`, `": null`}, {`": true`, `": null`},
		{`": true`, `": "true"`}, {`": [`, `": {`}, {`": null`, `": "x"`}, {`": null`, `": []`}, {`":null`, `":[]`}} {
		add(strings.Replace(s, r[0], r[1], 1))
	}
	add(s + " ")
	add(s + "{}")
	return out
}

// FuzzGeneratedDecoders holds every generated decoder to the check and
// encoding/json on any document.
func FuzzGeneratedDecoders(f *testing.F) {
	for _, p := range generatedPairs {
		for _, data := range samples(&testing.T{}, p) {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		for _, p := range generatedPairs {
			if why := decodeBoth(p, data); why != "" {
				t.Errorf("%s %q: %s", p.name, data, why)
			}
		}
	})
}
