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
)

// Decode decodes data, exactly one JSON value, into v (a non-nil pointer),
// strictly (see the package doc).
func Decode(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errors.New("strictjson: Decode needs a non-nil pointer")
	}
	if !json.Valid(data) {
		return syntaxError(data)
	}
	w := walker{data: data}
	if err := w.value(rv.Type().Elem(), ""); err != nil {
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

// value reads one value and checks it against t.
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
			f, ok := fields.byName[k]
			if !ok {
				return fmt.Errorf("%s: unknown key %q", where(at), k)
			}
			return w.value(f, join(at, k))
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
	return nil // its type is checked by json.Unmarshal
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
	var k string
	err := json.Unmarshal(raw, &k)
	return k, err
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

// scalar skips a string, number, true or false.
func (w *walker) scalar() {
	if w.data[w.pos] == '"' {
		w.str()
		return
	}
	for w.pos < len(w.data) {
		switch w.data[w.pos] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return
		}
		w.pos++
	}
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

type fieldSet struct {
	byName   map[string]reflect.Type
	required []string
}

var fieldCache sync.Map // reflect.Type -> fieldSet

// fieldsOf lists a struct's JSON fields (embedded structs flattened) and
// which are required: all but those tagged omitempty, which later versions
// of a record added and older files lack.
func fieldsOf(t reflect.Type) fieldSet {
	if v, ok := fieldCache.Load(t); ok {
		return v.(fieldSet)
	}
	fs := fieldSet{byName: map[string]reflect.Type{}}
	var add func(reflect.Type)
	add = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && f.Type.Kind() == reflect.Struct && name == "" {
				add(f.Type)
				continue
			}
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			fs.byName[name] = f.Type
			if !strings.Contains(","+opts+",", ",omitempty,") {
				fs.required = append(fs.required, name)
			}
		}
	}
	add(t)
	fieldCache.Store(t, fs)
	return fs
}
