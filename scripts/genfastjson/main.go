// Command genfastjson writes the generated strict JSON decoders and encoders of
// wt's record types (see core/strictjson/fast.go) into the packages that
// declare them:
//
//	go run -tags wt_genfastjson ./scripts/genfastjson
//
// run from the module root. It reads the types by reflection, so it is
// run again whenever a record type changes; a test fails while a
// generated file is not what it would write now. The tag leaves the
// generated files out of its build: a record type renamed or changed
// does not stop the generator that is to write them again.
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// Target is one generated file: the types of one package.
type Target struct {
	Dir     string // from the module root
	Package string
	Types   []Type
}

// Type is one record type and what is generated for it.
type Type struct {
	T      reflect.Type
	Decode bool
}

// Targets are the record types with generated code: every one a wt-exec
// run or a commit gate reads or writes.
func Targets() []Target {
	both := func(ts ...reflect.Type) []Type {
		var out []Type
		for _, t := range ts {
			out = append(out, Type{T: t, Decode: true})
		}
		return out
	}
	return []Target{
		{Dir: "core/store", Package: "store", Types: append(both(
			reflect.TypeFor[store.Repository](), reflect.TypeFor[store.Policy](), reflect.TypeFor[store.Allocation](),
			reflect.TypeFor[store.Runtime](), reflect.TypeFor[store.Binding](), reflect.TypeFor[store.Registration](),
			reflect.TypeFor[store.Lease](), reflect.TypeFor[store.ChildGroup](), reflect.TypeFor[store.Confinement](),
			reflect.TypeFor[store.FleetLease](), reflect.TypeFor[store.Provenance](), reflect.TypeFor[store.Handoff]()),
			// Events are written at every run and read only by wt-admin's
			// listings: Detail is a map, which the generated decoder
			// would give up on anyway.
			Type{T: reflect.TypeFor[store.Event]()})},
		{Dir: "core/proc", Package: "proc", Types: both(
			reflect.TypeFor[proc.Holder](), reflect.TypeFor[proc.Identity](), reflect.TypeFor[proc.RuntimeBinding]())},
	}
}

// FileName is the generated file in each target's directory.
const FileName = "fastjson_gen.go"

func main() {
	for _, t := range Targets() {
		src, err := Generate(t)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(filepath.Join(t.Dir, FileName), src, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
}

// field is one JSON member of a struct, embedded structs flattened.
type field struct {
	name      string
	goPath    string // x.Meta.SchemaVersion
	typ       reflect.Type
	omitEmpty bool
}

// fields lists t's JSON members in encoding/json's order, and refuses
// what the generated code does not do (the reflection path does it).
func fields(t reflect.Type, path string) ([]field, error) {
	var out []field
	for i := range t.NumField() {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			sub, err := fields(f.Type, path+"."+f.Name)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
			continue
		}
		switch {
		case !f.IsExported() || tag == "-":
			continue
		case !hasTag || name == "" || f.Anonymous:
			return nil, fmt.Errorf("%s.%s: give every field a plain JSON name", t, f.Name)
		case opts != "" && opts != "omitempty":
			return nil, fmt.Errorf("%s.%s: tag option %q", t, f.Name, opts)
		case strings.ContainsAny(name, "\"\\<>&") || strings.ToLower(name) != name:
			return nil, fmt.Errorf("%s.%s: JSON name %q is not plain", t, f.Name, name)
		}
		out = append(out, field{name: name, goPath: path + "." + f.Name, typ: f.Type, omitEmpty: opts == "omitempty"})
	}
	for i, f := range out {
		if slices.ContainsFunc(out[:i], func(g field) bool { return g.name == f.name }) {
			return nil, fmt.Errorf("%s: JSON name %q twice", t, f.name)
		}
	}
	if len(out) > 64 {
		return nil, fmt.Errorf("%s: more than 64 fields", t)
	}
	return out, nil
}

// Generate is the source of one target's file.
func Generate(tg Target) ([]byte, error) {
	var b bytes.Buffer
	imports = map[string]bool{"github.com/wt-tool/wt/core/strictjson": true}
	generated := map[reflect.Type]bool{}
	for _, t := range Targets() {
		for _, ty := range t.Types {
			generated[ty.T] = true
		}
	}
	for _, ty := range tg.Types {
		fs, err := fields(ty.T, "x")
		if err != nil {
			return nil, err
		}
		if ty.Decode {
			if err := decoder(&b, ty.T, fs, generated); err != nil {
				return nil, err
			}
		}
		if err := encoder(&b, ty.T, fs, generated); err != nil {
			return nil, err
		}
	}
	var head bytes.Buffer
	// The build tag leaves the generated file out of the generator's own
	// build: it reads the record types by reflection from the packages it
	// writes into, which then build without a stale file.
	fmt.Fprintf(&head, "// Code generated by go run -tags %s ./scripts/genfastjson; DO NOT EDIT.\n\n//go:build !%s\n\npackage %s\n\nimport (\n", Tag, Tag, tg.Package)
	for _, p := range slices.Sorted(maps.Keys(imports)) {
		fmt.Fprintf(&head, "\t%q\n", p)
	}
	head.WriteString(")\n")
	return format.Source(append(head.Bytes(), b.Bytes()...))
}

// Tag is the build tag the generator runs with, which the files it writes
// exclude themselves from.
const Tag = "wt_genfastjson"

// imports are the packages the file being generated names (local adds
// the ones its types come from).
var imports map[string]bool

// local is t's name as its own package writes it, importing t's package
// when it is another.
func local(t reflect.Type, pkg string) string {
	if t.PkgPath() == pkg {
		return t.Name()
	}
	if t.PkgPath() != "" {
		imports[t.PkgPath()] = true
	}
	return t.String()
}

func decoder(b *bytes.Buffer, t reflect.Type, fs []field, generated map[reflect.Type]bool) error {
	name := t.Name()
	fmt.Fprintf(b, "\n// DecodeFastJSON is %s's generated strict decoder (core/strictjson/fast.go).\n", name)
	fmt.Fprintf(b, "func (x *%s) DecodeFastJSON(d *strictjson.Dec) {\n\td.Object()\n\tvar seen uint64\n\tfor {\n\t\tk, ok := d.Key()\n\t\tif !ok {\n\t\t\tbreak\n\t\t}\n\t\tswitch string(k) {\n", name)
	var required uint64
	for i, f := range fs {
		bit := uint64(1) << i
		if !f.omitEmpty {
			required |= bit
		}
		fmt.Fprintf(b, "\t\tcase %q:\n\t\t\tif seen&%#x != 0 {\n\t\t\t\td.GiveUp()\n\t\t\t\treturn\n\t\t\t}\n\t\t\tseen |= %#x\n", f.name, bit, bit)
		code, err := decodeValue(f.goPath, f.typ, t.PkgPath(), generated)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", t, f.name, err)
		}
		b.WriteString(code)
	}
	fmt.Fprintf(b, "\t\tdefault:\n\t\t\td.GiveUp()\n\t\t\treturn\n\t\t}\n\t}\n\tif seen&%#x != %#x {\n\t\td.GiveUp()\n\t}\n}\n", required, required)
	return nil
}

// decodeValue is the code that reads a value of type t into dst.
func decodeValue(dst string, t reflect.Type, pkg string, generated map[reflect.Type]bool) (string, error) {
	switch {
	case t.Kind() == reflect.String && t.PkgPath() == "":
		return fmt.Sprintf("\t\t\t%s = d.String()\n", dst), nil
	case t.Kind() == reflect.Bool && t.PkgPath() == "":
		return fmt.Sprintf("\t\t\t%s = d.Bool()\n", dst), nil
	case t == reflect.TypeFor[int]():
		return fmt.Sprintf("\t\t\t%s = int(d.Int64(0))\n", dst), nil
	case t == reflect.TypeFor[int64]():
		return fmt.Sprintf("\t\t\t%s = d.Int64(64)\n", dst), nil
	case t == reflect.TypeFor[uint64]():
		return fmt.Sprintf("\t\t\t%s = d.Uint64(64)\n", dst), nil
	case t == reflect.TypeFor[[]string]():
		return fmt.Sprintf("\t\t\t%s = d.Strings()\n", dst), nil
	case t.Kind() == reflect.Struct && generated[t]:
		return fmt.Sprintf("\t\t\t%s.DecodeFastJSON(d)\n", dst), nil
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct && generated[t.Elem()]:
		return fmt.Sprintf("\t\t\tif !d.Null() {\n\t\t\t\t%s = new(%s)\n\t\t\t\t%s.DecodeFastJSON(d)\n\t\t\t}\n", dst, local(t.Elem(), pkg), dst), nil
	case t.Kind() == reflect.Pointer:
		inner, err := decodeValue("v", t.Elem(), pkg, generated)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("\t\t\tif !d.Null() {\n\t\t\t\tvar v %s\n%s\t\t\t\t%s = &v\n\t\t\t}\n", local(t.Elem(), pkg), inner, dst), nil
	}
	return "", fmt.Errorf("no generated decoding for %s", t)
}

func encoder(b *bytes.Buffer, t reflect.Type, fs []field, generated map[reflect.Type]bool) error {
	name := t.Name()
	fmt.Fprintf(b, "\n// AppendFastJSON is %s's generated encoder (core/strictjson/fast.go).\n", name)
	fmt.Fprintf(b, "func (x %s) AppendFastJSON(e *strictjson.Enc, depth int) {\n\te.Open()\n\tn := 0\n", name)
	for _, f := range fs {
		code, err := encodeValue(f.goPath, f.typ, generated)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", t, f.name, err)
		}
		member := fmt.Sprintf("e.Key(n, %q, depth)\n%sn++\n", `"`+f.name+`"`, code)
		if f.omitEmpty {
			cond, err := notEmpty(f.goPath, f.typ)
			if err != nil {
				return fmt.Errorf("%s.%s: %w", t, f.name, err)
			}
			member = fmt.Sprintf("if %s {\n%s}\n", cond, member)
		}
		b.WriteString(member)
	}
	b.WriteString("\te.Close(n, depth)\n}\n")
	return nil
}

// encodeValue is the code that writes src, of type t, at depth+1.
func encodeValue(src string, t reflect.Type, generated map[reflect.Type]bool) (string, error) {
	switch {
	case t.Kind() == reflect.String && t.PkgPath() == "":
		return fmt.Sprintf("e.String(%s)\n", src), nil
	case t.Kind() == reflect.Bool && t.PkgPath() == "":
		return fmt.Sprintf("e.Bool(%s)\n", src), nil
	case t == reflect.TypeFor[int]() || t == reflect.TypeFor[int64]():
		return fmt.Sprintf("e.Int(int64(%s))\n", src), nil
	case t == reflect.TypeFor[uint64]():
		return fmt.Sprintf("e.Uint(%s)\n", src), nil
	case t == reflect.TypeFor[[]string]():
		return fmt.Sprintf("e.Strings(%s, depth+1)\n", src), nil
	case t.Kind() == reflect.Struct && generated[t]:
		return fmt.Sprintf("%s.AppendFastJSON(e, depth+1)\n", src), nil
	case t.Kind() == reflect.Pointer:
		inner, err := encodeValue("(*"+src+")", t.Elem(), generated)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("if %s == nil {\ne.Null()\n} else {\n%s}\n", src, inner), nil
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		return fmt.Sprintf("e.Value(%s, depth+1)\n", src), nil
	}
	return "", fmt.Errorf("no generated encoding for %s", t)
}

// notEmpty is encoding/json's test for writing an omitempty field.
func notEmpty(src string, t reflect.Type) (string, error) {
	switch t.Kind() {
	case reflect.String, reflect.Slice, reflect.Map:
		return fmt.Sprintf("len(%s) != 0", src), nil
	case reflect.Bool:
		return src, nil
	case reflect.Int, reflect.Int64, reflect.Uint64:
		return src + " != 0", nil
	case reflect.Pointer:
		return src + " != nil", nil
	}
	return "", fmt.Errorf("omitempty of a %s", t)
}
