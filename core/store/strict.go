package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"

	"github.com/wt-tool/wt/core/decision"
)

// requiredFields lists the JSON names of every field of a record type: all of
// them must be present (null is a value), except those tagged omitempty,
// which later versions of a record added and older files lack. Computed once
// per type.
var requiredFields sync.Map // reflect.Type -> []string

func fieldsOf(t reflect.Type) []string {
	if v, ok := requiredFields.Load(t); ok {
		return v.([]string)
	}
	var names []string
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			tag := f.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if name == "" || name == "-" || strings.Contains(","+opts+",", ",omitempty,") {
				continue
			}
			names = append(names, name)
		}
	}
	walk(t)
	requiredFields.Store(t, names)
	return names
}

// decodeStrict decodes one JSON object into rec, refusing unknown fields,
// missing fields, trailing data and any schema version but SchemaVersion.
func decodeStrict(data []byte, rec Record) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return err
	}
	if keys == nil {
		return errors.New("not a JSON object")
	}
	for _, name := range fieldsOf(reflect.TypeOf(rec).Elem()) {
		if _, ok := keys[name]; !ok {
			return fmt.Errorf("missing field %q", name)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(rec); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the object")
	}
	if v := rec.meta().SchemaVersion; v != SchemaVersion {
		return fmt.Errorf("unknown schema version %d (this wt reads %d)", v, SchemaVersion)
	}
	if rec.meta().RecordVersion < 1 {
		return fmt.Errorf("record_version %d is not positive", rec.meta().RecordVersion)
	}
	return nil
}

// invalid is the INVALID_METADATA refusal for a file. It returns the typed
// error so that a caller can add a more specific hint.
func invalid(path string, err error) *decision.Error {
	return decision.Wrap(decision.InvalidMetadata, err, "%s is unreadable", path).
		WithHint("inspect the file by hand; wt never overwrites what it cannot read").
		WithFact("file", path)
}
