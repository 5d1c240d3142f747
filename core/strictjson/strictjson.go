// Package strictjson is wt's one strict JSON reader: every record of the
// store, every runtime binding, every journal payload and every event line
// is decoded through it. encoding/json alone matches keys without regard to
// case ("REPOSITORY_ID" fills repository_id), keeps the last of duplicate
// keys, and ignores unknown ones; here the document is walked token by token
// against the Go type first, and refused when an object, at any depth:
//
//   - has a key twice;
//   - has a key that is not, to the letter, a field's JSON name (a
//     case variant is an unknown key);
//   - lacks a field that is not tagged omitempty (null is a value), unless
//     the type is a map;
//
// or when the data is not exactly one JSON value. Only then is it decoded.
//
// A record type with a generated decoder (scripts/genfastjson: the records
// a commit gate and a wt-exec run read) is decoded by it, in the same pass
// as the checks, when the document is the plain case it takes; anything
// else is checked by the walk and then decoded by encoding/json, so the
// result and the errors are encoding/json's in every case. Those are the
// two ways: a new process pays encoding/json's first-use analysis of a
// type only where no generated decoder exists (BenchmarkColdDecode in
// core/store measures both).
//
// It is also how wt writes what it reads (Marshal, MarshalIndent, in
// encode.go): a record's generated encoder, or encoding/json, byte for
// byte the same.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// Decode decodes data, exactly one JSON value, into v (a non-nil pointer),
// strictly (see the package doc).
func Decode(data []byte, v any) error { return decode(data, v, true) }

// decode is Decode; fast allows a generated decoder (tests compare it with
// encoding/json's decoding).
func decode(data []byte, v any, fast bool) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errors.New("strictjson: Decode needs a non-nil pointer")
	}
	if !json.Valid(data) {
		return syntaxError(data)
	}
	t, dst := rv.Type().Elem(), rv.Elem()
	// Into a zero value only: encoding/json merges into what is there, and
	// a generated decoder builds values afresh.
	if fd, ok := v.(fastDecoder); ok && fast && dst.IsZero() {
		if decodeFast(data, fd) {
			return nil
		}
		dst.SetZero()
	}
	w := walker{data: data}
	if err := w.value(t, ""); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// syntaxError says why data, which json.Valid refused, is not exactly one
// JSON value.
func syntaxError(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var first json.RawMessage
	if err := dec.Decode(&first); err != nil {
		if err == io.EOF {
			return errors.New("no JSON value")
		}
		return err
	}
	return errors.New("trailing data after the value")
}

var rawType = reflect.TypeOf(json.RawMessage(nil))

// walker checks a document that json.Valid accepted against a Go type,
// reading its bytes directly: encoding/json's token reader allocates for
// every token, and was a fifth of a commit gate's CPU time.
type walker struct {
	data []byte
	pos  int
}

func (w *walker) space() {
	for w.pos < len(w.data) {
		switch w.data[w.pos] {
		case ' ', '\t', '\n', '\r':
			w.pos++
		default:
			return
		}
	}
}

// peek is the next byte after white space.
func (w *walker) peek() byte {
	w.space()
	return w.data[w.pos] // the document is valid: a value or a closer follows
}

// value reads one value and checks it against t (encoding/json checks its
// scalars' types when it decodes).
func (w *walker) value(t reflect.Type, at string) error {
	c := w.peek()
	if c == 'n' {
		w.pos += len("null") // a value for any type (pointers, slices, maps)
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawType || t.Kind() == reflect.Interface {
		return w.anyValue(at)
	}
	switch t.Kind() {
	case reflect.Struct:
		if c != '{' {
			return fmt.Errorf("%s: want an object", where(at))
		}
		fields := fieldsOf(t)
		seen, err := w.members(at, func(k string) error {
			i, ok := fields.byName[k]
			if !ok {
				return fmt.Errorf("%s: unknown key %q", where(at), k)
			}
			return w.value(fields.list[i].typ, join(at, k))
		})
		if err != nil {
			return err
		}
		for _, name := range fields.required {
			if !slices.Contains(seen, name) {
				return fmt.Errorf("%s: missing field %q", where(at), name)
			}
		}
		return nil
	case reflect.Map:
		if c != '{' {
			return fmt.Errorf("%s: want an object", where(at))
		}
		_, err := w.members(at, func(k string) error { return w.value(t.Elem(), join(at, k)) })
		return err
	case reflect.Slice, reflect.Array:
		if c != '[' {
			return fmt.Errorf("%s: want an array", where(at))
		}
		return w.elements(func(i int) error { return w.value(t.Elem(), fmt.Sprintf("%s[%d]", at, i)) })
	}
	if c == '{' || c == '[' {
		return fmt.Errorf("%s: want a %s, not a structure", where(at), t.Kind())
	}
	w.scalar()
	return nil
}

// anyValue checks a value of no fixed type: its objects still may not repeat
// a key.
func (w *walker) anyValue(at string) error {
	switch w.peek() {
	case '{':
		_, err := w.members(at, func(k string) error { return w.anyValue(join(at, k)) })
		return err
	case '[':
		return w.elements(func(i int) error { return w.anyValue(fmt.Sprintf("%s[%d]", at, i)) })
	}
	w.scalar()
	return nil
}

// members reads an object from its '{' through its '}', refusing a key
// seen twice; each reads the member's value. It returns the keys seen.
func (w *walker) members(at string, each func(k string) error) ([]string, error) {
	w.pos++ // '{'
	var seen []string
	for w.peek() != '}' {
		k, err := w.key()
		if err != nil {
			return nil, err
		}
		if slices.Contains(seen, k) {
			return nil, fmt.Errorf("%s: key %q appears twice", where(at), k)
		}
		seen = append(seen, k)
		w.peek()
		w.pos++ // ':'
		if err := each(k); err != nil {
			return nil, err
		}
		if w.peek() == ',' {
			w.pos++
		}
	}
	w.pos++ // '}'
	return seen, nil
}

// elements reads an array from its '[' through its ']'.
func (w *walker) elements(each func(i int) error) error {
	w.pos++ // '['
	for i := 0; w.peek() != ']'; i++ {
		if err := each(i); err != nil {
			return err
		}
		if w.peek() == ',' {
			w.pos++
		}
	}
	w.pos++ // ']'
	return nil
}

// key reads an object's key, a string, unescaped as encoding/json does.
func (w *walker) key() (string, error) {
	start := w.pos
	escaped := w.str()
	raw := w.data[start:w.pos]
	if !escaped {
		return string(raw[1 : len(raw)-1]), nil
	}
	if k, ok := unquote(raw); ok {
		return k, nil
	}
	var k string
	err := json.Unmarshal(raw, &k)
	return k, err
}

// stringOf is the string that raw, a JSON string with its quotes, spells
// (escaped: it holds a backslash): as is when it needs no unescaping and
// is UTF-8, else unquote's. ok is false for what only encoding/json can
// read.
func stringOf(raw []byte, escaped bool) (string, bool) {
	if !escaped && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	return unquote(raw)
}

// unquote returns the string that raw, a JSON string with its quotes,
// spells, as encoding/json unquotes it: escapes resolved, a \u escape of
// half a surrogate pair and bytes that are not UTF-8 each become U+FFFD.
// ok is false for what is not a JSON string.
func unquote(raw []byte) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	in := raw[1 : len(raw)-1]
	b := make([]byte, 0, len(in))
	for r := 0; r < len(in); {
		switch c := in[r]; {
		case c == '\\':
			if r+1 >= len(in) {
				return "", false
			}
			switch e := in[r+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := hex4(in[r+2:])
				if rr < 0 {
					return "", false
				}
				r += 6
				if utf16.IsSurrogate(rr) {
					if len(in) >= r+2 && in[r] == '\\' && in[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(in[r+2:])); dec != utf8.RuneError {
							b = utf8.AppendRune(b, dec)
							r += 6
							continue
						}
					}
					rr = utf8.RuneError
				}
				b = utf8.AppendRune(b, rr)
				continue
			default:
				return "", false
			}
			r += 2
		case c == '"' || c < ' ':
			return "", false
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(in[r:])
			b = utf8.AppendRune(b, rr)
			r += size
		}
	}
	return string(b), true
}

// hex4 is the value of the four hex digits that p starts with, or -1.
func hex4(p []byte) rune {
	if len(p) < 4 {
		return -1
	}
	var r rune
	for _, c := range p[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// str skips a string from its opening quote through its closing one and
// reports whether it holds an escape.
func (w *walker) str() (escaped bool) {
	w.pos++ // '"'
	for {
		switch w.data[w.pos] {
		case '\\':
			escaped = true
			w.pos += 2
		case '"':
			w.pos++
			return escaped
		default:
			w.pos++
		}
	}
}

// scalar skips a string, number, true or false, and reports whether it was
// a string holding an escape.
func (w *walker) scalar() (escaped bool) {
	if w.data[w.pos] == '"' {
		return w.str()
	}
	for w.pos < len(w.data) {
		switch w.data[w.pos] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return false
		}
		w.pos++
	}
	return false
}

func join(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

func where(at string) string {
	if at == "" {
		return "the document"
	}
	return at
}

type field struct {
	name      string
	typ       reflect.Type
	index     []int // for reflect.Value.FieldByIndex, through embedded structs
	omitEmpty bool
}

type fieldSet struct {
	list     []field        // in encoding/json's order
	byName   map[string]int // index in list
	required []string
}

// typeCache holds what was worked out about each type, for the process.
// A map under a mutex: a process analyses a dozen types once each, and
// sync.Map's stores cost more than the analysis they save.
type typeCache[V any] struct {
	mu sync.Mutex
	m  map[reflect.Type]V
}

func (c *typeCache[V]) load(t reflect.Type) (V, bool) {
	c.mu.Lock()
	v, ok := c.m[t]
	c.mu.Unlock()
	return v, ok
}

func (c *typeCache[V]) store(t reflect.Type, v V) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[reflect.Type]V{}
	}
	c.m[t] = v
	c.mu.Unlock()
}

var fieldCache typeCache[fieldSet]

// fieldsOf lists a struct's JSON fields (embedded structs flattened, in
// encoding/json's order: declaration order, an embedded struct's fields in
// its place) and which are required to decode: all but those tagged
// omitempty, which later versions of a record added and older files lack.
// The check works it out once per type per process.
func fieldsOf(t reflect.Type) fieldSet {
	if fs, ok := fieldCache.load(t); ok {
		return fs
	}
	n := t.NumField()
	fs := fieldSet{byName: make(map[string]int, n), list: make([]field, 0, n), required: make([]string, 0, n)}
	var add func(t reflect.Type, index []int)
	add = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			at := append(slices.Clip(index), i)
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				add(f.Type, at)
				continue
			}
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct {
				// encoding/json promotes its fields, exported or not:
				// the check does not know them.
				continue
			}
			if tag == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			fd := field{name: name, typ: f.Type, index: at, omitEmpty: hasOption(opts, "omitempty")}
			fs.byName[name] = len(fs.list)
			fs.list = append(fs.list, fd)
			if !fd.omitEmpty {
				fs.required = append(fs.required, name)
			}
		}
	}
	add(t, nil)
	fieldCache.store(t, fs)
	return fs
}

// hasOption reports whether the options of a json tag (after the name)
// include opt.
func hasOption(opts, opt string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == opt {
			return true
		}
	}
	return false
}
