package strictjson

import (
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Marshal returns v as encoding/json's Marshal does, byte for byte, and
// MarshalIndent as its MarshalIndent(v, "", "  ") does: wt's records are
// written through them. For the types of wt's records (strings, integers,
// booleans, pointers, slices, string-keyed maps, interfaces holding these,
// and structs of them with plain JSON names) they write the bytes
// themselves: a new process does not pay for encoding/json's first-use
// analysis of each record type, about 0.1 ms per type in a run of wt-exec.
// Any other value (a float, a type that marshals itself, a tag option other
// than omitempty, ...) is handed to encoding/json whole, so the result and
// the errors are encoding/json's in every case; a fuzz test holds the two
// ways to the same bytes.
func Marshal(v any) ([]byte, error) { return marshal(v, false, true) }

// MarshalIndent is Marshal with encoding/json's MarshalIndent(v, "", "  ")
// layout.
func MarshalIndent(v any) ([]byte, error) { return marshal(v, true, true) }

// marshal is Marshal (indent false) or MarshalIndent; fast allows a
// generated encoder (tests compare it with the reflection encoder).
func marshal(v any, indent, fast bool) ([]byte, error) {
	if fe, ok := v.(fastEncoder); ok && fast {
		if rv := reflect.ValueOf(v); rv.Kind() != reflect.Pointer || !rv.IsNil() {
			f := Enc{indent: indent}
			fe.AppendFastJSON(&f, 0)
			if f.err == nil {
				return f.buf, nil
			}
		}
	}
	e := encoder{indent: indent}
	if err := e.value(reflect.ValueOf(v), 0); err == nil {
		return e.buf, nil
	} else if !errors.Is(err, errIndirect) {
		return nil, err
	}
	if indent {
		return json.MarshalIndent(v, "", "  ")
	}
	return json.Marshal(v)
}

type encoder struct {
	buf    []byte
	indent bool
	hops   int // pointers and interfaces followed on the way to the value
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	numberType        = reflect.TypeFor[json.Number]()
)

var selfCache typeCache[bool]

// selfMarshaling: t, or a pointer to it, encodes itself, or encoding/json
// gives it a form of its own (json.Number, written as a bare number).
// Worked out once per type: reflect.PointerTo searches the binary's types
// by name.
func selfMarshaling(t reflect.Type) bool {
	if self, ok := selfCache.load(t); ok {
		return self
	}
	p := reflect.PointerTo(t)
	self := t == numberType || t.Implements(marshalerType) || t.Implements(textMarshalerType) ||
		p.Implements(marshalerType) || p.Implements(textMarshalerType)
	selfCache.store(t, self)
	return self
}

// newline starts a line at depth (MarshalIndent's layout only).
func (e *encoder) newline(depth int) { e.buf = appendNewline(e.buf, e.indent, depth) }

// appendNewline starts a line at depth when indenting.
func appendNewline(buf []byte, indent bool, depth int) []byte {
	if !indent {
		return buf
	}
	buf = append(buf, '\n')
	for range depth {
		buf = append(buf, ' ', ' ')
	}
	return buf
}

// value appends v; it returns errIndirect for what it leaves to
// encoding/json, with e.buf then of no use.
func (e *encoder) value(v reflect.Value, depth int) error {
	if !v.IsValid() {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	t := v.Type()
	if t.Kind() != reflect.Interface && selfMarshaling(t) {
		return errIndirect
	}
	// A record inside a map or an interface (an event's detail) is written
	// by its generated encoder, as at the top.
	if k := t.Kind(); (k == reflect.Struct || k == reflect.Pointer && !v.IsNil()) && v.CanInterface() {
		if fe, ok := v.Interface().(fastEncoder); ok {
			f := Enc{buf: e.buf, indent: e.indent}
			fe.AppendFastJSON(&f, depth)
			if f.err != nil {
				return f.err
			}
			e.buf = f.buf
			return nil
		}
	}
	switch t.Kind() {
	case reflect.Bool:
		e.buf = strconv.AppendBool(e.buf, v.Bool())
	case reflect.String:
		e.buf = appendString(e.buf, v.String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.buf = strconv.AppendInt(e.buf, v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.buf = strconv.AppendUint(e.buf, v.Uint(), 10)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		// A pointer cycle: encoding/json reports it (it counts from 1000).
		if e.hops++; e.hops > 1000 {
			return errIndirect
		}
		err := e.value(v.Elem(), depth)
		e.hops--
		return err
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return errIndirect // base64
		}
		if v.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		return e.elements(v, depth)
	case reflect.Map:
		if t.Key().Kind() != reflect.String || selfMarshaling(t.Key()) {
			return errIndirect
		}
		if v.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		return e.mapMembers(v, depth)
	case reflect.Struct:
		return e.structMembers(v, depth)
	default:
		// Floats (encoding/json's own formatting), arrays, channels,
		// functions, complex numbers.
		return errIndirect
	}
	return nil
}

func (e *encoder) elements(v reflect.Value, depth int) error {
	if v.Len() == 0 {
		e.buf = append(e.buf, "[]"...)
		return nil
	}
	e.buf = append(e.buf, '[')
	for i := range v.Len() {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.newline(depth + 1)
		if err := e.value(v.Index(i), depth+1); err != nil {
			return err
		}
	}
	e.newline(depth)
	e.buf = append(e.buf, ']')
	return nil
}

func (e *encoder) mapMembers(v reflect.Value, depth int) error {
	keys := v.MapKeys()
	if len(keys) == 0 {
		e.buf = append(e.buf, "{}"...)
		return nil
	}
	slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
	e.buf = append(e.buf, '{')
	for i, k := range keys {
		if err := e.member(i, k.String(), v.MapIndex(k), depth); err != nil {
			return err
		}
	}
	e.newline(depth)
	e.buf = append(e.buf, '}')
	return nil
}

func (e *encoder) structMembers(v reflect.Value, depth int) error {
	fs := fieldsOf(v.Type())
	if !fs.encodable {
		return errIndirect
	}
	e.buf = append(e.buf, '{')
	n := 0
	for _, f := range fs.list {
		fv, ok := fieldByIndex(v, f.index)
		if !ok || f.omitEmpty && isEmpty(fv) {
			continue
		}
		if err := e.member(n, f.name, fv, depth); err != nil {
			return err
		}
		n++
	}
	if n > 0 {
		e.newline(depth)
	}
	e.buf = append(e.buf, '}')
	return nil
}

// member appends the i-th member of an object, "name": value.
func (e *encoder) member(i int, name string, v reflect.Value, depth int) error {
	if i > 0 {
		e.buf = append(e.buf, ',')
	}
	e.newline(depth + 1)
	e.buf = appendString(e.buf, name)
	e.buf = append(e.buf, ':')
	if e.indent {
		e.buf = append(e.buf, ' ')
	}
	return e.value(v, depth+1)
}

// fieldByIndex is v's field at index, through embedded structs; ok is false
// where an embedded pointer on the way is nil (encoding/json leaves such
// fields out).
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

const hexDigits = "0123456789abcdef"

// appendString appends s quoted as encoding/json quotes it (HTML escaping
// on, as in Marshal): <, >, & and the controls as \u escapes (\b \f \n \r
// \t short), U+2028 and U+2029 escaped, bytes that are not UTF-8 as
// U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// WritesItself reports whether Marshal writes v itself rather than handing
// it to encoding/json (tests hold wt's record types to it).
func WritesItself(v any) bool {
	e := encoder{}
	return e.value(reflect.ValueOf(v), 0) == nil
}
