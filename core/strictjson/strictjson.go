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
// A type whose fields are all strings, numbers, booleans, pointers, slices
// and structs of these (every record in wt's store) is decoded in the same
// walk, by reflection on the fields the walk already looked up: a new
// process does not pay for encoding/json's first-use analysis of every
// record type (about a third of what a commit gate's decision cost). Any
// other type, and any value the walk does not convert itself (a string with
// an escape, a number where a string belongs), is decoded by encoding/json
// after the walk, so the result and the errors are encoding/json's in every
// case; a fuzz test holds the two ways to the same answers.
//
// It is also how wt writes what it reads (Marshal, MarshalIndent): the same
// types are encoded by reflection on their fields, byte for byte as
// encoding/json encodes them, and anything else is handed to encoding/json.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// Decode decodes data, exactly one JSON value, into v (a non-nil pointer),
// strictly (see the package doc).
func Decode(data []byte, v any) error { return decode(data, v, true, true) }

// decode is Decode; fast allows a generated decoder and direct the
// decoding walk (tests compare each with the others and with
// encoding/json's decoding).
func decode(data []byte, v any, fast, direct bool) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errors.New("strictjson: Decode needs a non-nil pointer")
	}
	if !json.Valid(data) {
		return syntaxError(data)
	}
	t, dst := rv.Type().Elem(), rv.Elem()
	// Into a zero value only: encoding/json merges into what is there, and
	// the walk builds values afresh.
	if fd, ok := v.(fastDecoder); ok && fast && dst.IsZero() {
		if decodeFast(data, fd) {
			return nil
		}
		dst.SetZero()
	}
	if direct && walkable(t) && dst.IsZero() {
		w := walker{data: data}
		err := w.value(t, dst, "")
		if err != errIndirect {
			if err != nil {
				dst.SetZero()
			}
			return err
		}
		dst.SetZero()
	}
	w := walker{data: data}
	if err := w.value(t, reflect.Value{}, ""); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// errIndirect is how the decoding walk hands a document to encoding/json:
// a value it does not convert itself (a string with an escape or bytes
// that are not UTF-8, a number that does not fit, a value of another kind
// than its field's).
var errIndirect = errors.New("strictjson: decoded by encoding/json")

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

// value reads one value and checks it against t. When dst is valid (a
// settable value of type t, of a walkable type) it also stores the value
// there as encoding/json would.
func (w *walker) value(t reflect.Type, dst reflect.Value, at string) error {
	c := w.peek()
	if c == 'n' {
		w.pos += len("null") // a value for any type (pointers, slices, maps)
		if dst.IsValid() && (dst.Kind() == reflect.Pointer || dst.Kind() == reflect.Slice) {
			dst.SetZero() // encoding/json leaves any other kind as it was
		}
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
		if dst.IsValid() {
			if dst.IsNil() {
				dst.Set(reflect.New(t))
			}
			dst = dst.Elem()
		}
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
			f := fields.list[i]
			var fv reflect.Value
			if dst.IsValid() {
				fv = dst.FieldByIndex(f.index)
			}
			return w.value(f.typ, fv, join(at, k))
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
		_, err := w.members(at, func(k string) error { return w.value(t.Elem(), reflect.Value{}, join(at, k)) })
		return err
	case reflect.Slice, reflect.Array:
		if c != '[' {
			return fmt.Errorf("%s: want an array", where(at))
		}
		if !dst.IsValid() {
			return w.elements(func(i int) error { return w.value(t.Elem(), reflect.Value{}, fmt.Sprintf("%s[%d]", at, i)) })
		}
		s := reflect.MakeSlice(t, 0, 0) // [] is an empty slice, not nil
		err := w.elements(func(i int) error {
			e := reflect.New(t.Elem()).Elem()
			if err := w.value(t.Elem(), e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
			s = reflect.Append(s, e)
			return nil
		})
		dst.Set(s)
		return err
	}
	if c == '{' || c == '[' {
		return fmt.Errorf("%s: want a %s, not a structure", where(at), t.Kind())
	}
	start := w.pos
	escaped := w.scalar()
	if !dst.IsValid() {
		return nil // its type is checked by json.Unmarshal
	}
	return store(dst, w.data[start:w.pos], escaped)
}

// store sets dst, of a scalar kind, from raw, one JSON string, number, true
// or false, where it converts the value exactly as encoding/json does, and
// returns errIndirect where it leaves the conversion to encoding/json.
func store(dst reflect.Value, raw []byte, escaped bool) error {
	isNumber := raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9'
	switch k := dst.Kind(); {
	case k == reflect.String:
		if raw[0] != '"' {
			return errIndirect
		}
		u, ok := stringOf(raw, escaped)
		if !ok {
			return errIndirect
		}
		dst.SetString(u)
	case k == reflect.Bool:
		switch string(raw) {
		case "true":
			dst.SetBool(true)
		case "false":
			dst.SetBool(false)
		default:
			return errIndirect
		}
	case dst.CanInt():
		n, err := strconv.ParseInt(string(raw), 10, dst.Type().Bits())
		if !isNumber || err != nil {
			return errIndirect
		}
		dst.SetInt(n)
	case dst.CanUint():
		n, err := strconv.ParseUint(string(raw), 10, dst.Type().Bits())
		if !isNumber || err != nil {
			return errIndirect
		}
		dst.SetUint(n)
	case dst.CanFloat():
		f, err := strconv.ParseFloat(string(raw), dst.Type().Bits())
		if !isNumber || err != nil {
			return errIndirect
		}
		dst.SetFloat(f)
	default:
		return errIndirect
	}
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
	// walkable: every field is of a walkable type, none is named twice,
	// none has a name encoding/json would not take or the ",string" option.
	walkable bool
	// encodable: Marshal writes the struct itself (see encode.go): no
	// option but omitempty, no name twice or of another spelling, no
	// embedded pointer or non-struct.
	encodable bool
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
// Decoding and encoding share it, so a type is analysed once per process.
func fieldsOf(t reflect.Type) fieldSet {
	if fs, ok := fieldCache.load(t); ok {
		return fs
	}
	n := t.NumField()
	fs := fieldSet{byName: make(map[string]int, n), list: make([]field, 0, n), required: make([]string, 0, n), walkable: true, encodable: true}
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
				// encoding/json promotes its fields, exported or not.
				fs.walkable, fs.encodable = false, false
				continue
			}
			if tag == "-" || !f.IsExported() {
				continue
			}
			if f.Anonymous {
				fs.walkable, fs.encodable = false, false
			}
			if !plainName(name) || hasOption(opts, "string") {
				fs.walkable = false
			}
			if !plainName(name) || opts != "" && opts != "omitempty" {
				fs.encodable = false
			}
			if name == "" {
				name = f.Name
			}
			if _, twice := fs.byName[name]; twice {
				fs.walkable, fs.encodable = false, false
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

// plainName: a JSON name of letters, digits and underscores (or none), which
// encoding/json takes as it is.
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

var (
	walkCache       typeCache[bool]
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textType        = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// walkable reports whether the decoding walk can decode t: booleans,
// numbers and strings, and pointers, slices (not []byte, which is base64)
// and structs of walkable types, none of which decodes itself
// (json.Unmarshaler, encoding.TextUnmarshaler).
func walkable(t reflect.Type) bool {
	if ok, known := walkCache.load(t); known {
		return ok
	}
	walkCache.store(t, true) // a type that contains itself is walkable if the rest is
	ok := walkableNow(t)
	walkCache.store(t, ok)
	return ok
}

func walkableNow(t reflect.Type) bool {
	if t.Implements(unmarshalerType) || t.Implements(textType) ||
		reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textType) {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	case reflect.Pointer:
		return walkable(t.Elem())
	case reflect.Slice:
		return t.Elem().Kind() != reflect.Uint8 && walkable(t.Elem())
	case reflect.Struct:
		fs := fieldsOf(t)
		if !fs.walkable {
			return false
		}
		for _, f := range fs.list {
			if !walkable(f.typ) {
				return false
			}
		}
		return true
	}
	return false
}
