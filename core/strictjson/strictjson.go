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
//     the type is a map or the caller asked for partial objects;
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
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walk(dec, rv.Type().Elem(), ""); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the value")
	}
	return json.Unmarshal(data, v)
}

var rawType = reflect.TypeOf(json.RawMessage(nil))

// walk reads one value from dec and checks it against t.
func walk(dec *json.Decoder, t reflect.Type, at string) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%s: %w", where(at), err)
	}
	return value(dec, tok, t, at)
}

func value(dec *json.Decoder, tok json.Token, t reflect.Type, at string) error {
	if tok == nil {
		return nil // null: a value for any type (pointers, slices, maps)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawType || t.Kind() == reflect.Interface {
		return anyValue(dec, tok, at)
	}
	d, isDelim := tok.(json.Delim)
	switch t.Kind() {
	case reflect.Struct:
		if !isDelim || d != '{' {
			return fmt.Errorf("%s: want an object", where(at))
		}
		fields := fieldsOf(t)
		seen, err := members(dec, at, func(k string) error {
			f, ok := fields.byName[k]
			if !ok {
				return fmt.Errorf("%s: unknown key %q", where(at), k)
			}
			return walk(dec, f, join(at, k))
		})
		if err != nil {
			return err
		}
		for _, name := range fields.required {
			if !seen[name] {
				return fmt.Errorf("%s: missing field %q", where(at), name)
			}
		}
		return nil
	case reflect.Map:
		if !isDelim || d != '{' {
			return fmt.Errorf("%s: want an object", where(at))
		}
		_, err := members(dec, at, func(k string) error { return walk(dec, t.Elem(), join(at, k)) })
		return err
	case reflect.Slice, reflect.Array:
		if !isDelim || d != '[' {
			return fmt.Errorf("%s: want an array", where(at))
		}
		for i := 0; dec.More(); i++ {
			if err := walk(dec, t.Elem(), fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		return err
	}
	if isDelim {
		return fmt.Errorf("%s: want a %s, not a structure", where(at), t.Kind())
	}
	return nil // a scalar: its type is checked by json.Unmarshal
}

// anyValue checks a value of no fixed type: its objects still may not repeat
// a key.
func anyValue(dec *json.Decoder, tok json.Token, at string) error {
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		_, err := members(dec, at, func(k string) error {
			t, err := dec.Token()
			if err != nil {
				return err
			}
			return anyValue(dec, t, join(at, k))
		})
		return err
	case '[':
		for i := 0; dec.More(); i++ {
			t, err := dec.Token()
			if err != nil {
				return err
			}
			if err := anyValue(dec, t, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	}
	_, err := dec.Token()
	return err
}

// members reads the members of an object whose '{' was read, through its
// '}', refusing a key seen twice; each reads the member's value. It returns
// the keys seen.
func members(dec *json.Decoder, at string, each func(k string) error) (map[string]bool, error) {
	seen := map[string]bool{}
	for dec.More() {
		k, err := key(dec, at)
		if err != nil {
			return nil, err
		}
		if seen[k] {
			return nil, fmt.Errorf("%s: key %q appears twice", where(at), k)
		}
		seen[k] = true
		if err := each(k); err != nil {
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return seen, nil
}

func key(dec *json.Decoder, at string) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", err
	}
	k, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("%s: want a key", where(at))
	}
	return k, nil
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
