package strictjson

import (
	"maps"
	"slices"
	"strconv"
)

// Generated code (go run -tags wt_genfastjson ./scripts/genfastjson, from the module root)
// gives wt's record types a decoder and an encoder of their own, so that a
// new process reads and writes its first records without encoding/json's
// first-use analysis of each type (BenchmarkColdDecode in core/store: eight
// records cold in about a quarter of encoding/json's time). They are a fast
// path only. A generated decoder takes the plain case (every key known
// and unescaped, none twice, none missing, integers as integers, null only
// where a pointer or slice is) and gives up on anything else; Decode then
// checks the document and decodes it with encoding/json. A generated
// encoder writes encoding/json's bytes; tests hold both to encoding/json's
// answers on every record type.

// fastDecoder is a type with a generated decoder.
type fastDecoder interface {
	DecodeFastJSON(d *Dec)
}

// fastEncoder is a type with a generated encoder.
type fastEncoder interface {
	AppendFastJSON(e *Enc, depth int)
}

// Dec is the reader a generated decoder gets: a document that json.Valid
// accepted, and whether the decoder gave up. Once it has, every read
// returns a zero value.
type Dec struct {
	w   walker
	bad bool
}

// GiveUp makes the decode fall back to the check and encoding/json.
func (d *Dec) GiveUp() { d.bad = true }

// Object reads the '{' that starts an object; a decoder gives up on
// another value.
func (d *Dec) Object() {
	if d.bad || d.w.peek() != '{' {
		d.bad = true
		return
	}
	d.w.pos++
}

// Key is the next member's key, unquoted, and true; or false at the '}'
// that ends the object. A key with an escape gives up.
func (d *Dec) Key() ([]byte, bool) {
	if d.bad || d.end('}') {
		return nil, false
	}
	start := d.w.pos
	if d.w.str() {
		d.bad = true
		return nil, false
	}
	key := d.w.data[start+1 : d.w.pos-1]
	d.w.peek()
	d.w.pos++ // ':'
	return key, true
}

// Null reads a null and reports true, or reads nothing and reports false.
func (d *Dec) Null() bool {
	if d.bad || d.w.peek() != 'n' {
		return false
	}
	d.w.pos += len("null")
	return true
}

// String reads a string, unescaped as encoding/json unescapes it
// (store): a runtime binding is JSON inside a string, and every record
// that holds one has escapes.
func (d *Dec) String() string {
	if d.bad || d.w.peek() != '"' {
		d.bad = true
		return ""
	}
	start := d.w.pos
	escaped := d.w.str()
	u, ok := stringOf(d.w.data[start:d.w.pos], escaped)
	if !ok {
		d.bad = true
	}
	return u
}

// number is the next scalar, which must be a number.
func (d *Dec) number() []byte {
	if d.bad {
		return nil
	}
	c := d.w.peek()
	if c != '-' && (c < '0' || c > '9') {
		d.bad = true
		return nil
	}
	start := d.w.pos
	d.w.scalar()
	return d.w.data[start:d.w.pos]
}

// Int64 reads an integer that fits in bits bits.
func (d *Dec) Int64(bits int) int64 {
	n, err := strconv.ParseInt(string(d.number()), 10, bits)
	if err != nil {
		d.bad = true
	}
	return n
}

// Uint64 reads an unsigned integer that fits in bits bits.
func (d *Dec) Uint64(bits int) uint64 {
	n, err := strconv.ParseUint(string(d.number()), 10, bits)
	if err != nil {
		d.bad = true
	}
	return n
}

// Bool reads true or false.
func (d *Dec) Bool() bool {
	if d.bad {
		return false
	}
	switch d.w.peek() {
	case 't':
		d.w.pos += len("true")
		return true
	case 'f':
		d.w.pos += len("false")
		return false
	}
	d.bad = true
	return false
}

// Strings reads an array of strings (null is nil, [] an empty slice).
func (d *Dec) Strings() []string {
	if d.Null() || d.bad {
		return nil
	}
	if d.w.peek() != '[' {
		d.bad = true
		return nil
	}
	d.w.pos++
	s := []string{}
	for !d.bad && !d.end(']') {
		s = append(s, d.String())
	}
	return s
}

// end skips the comma before the next member or element and reports
// whether the object or array ends here instead, with its closer read.
func (d *Dec) end(closer byte) bool {
	c := d.w.peek()
	if c == ',' {
		d.w.pos++
		c = d.w.peek()
	}
	if c == closer {
		d.w.pos++
		return true
	}
	return false
}

// Skip reads a value of any kind (for a field the generated decoder
// leaves to no Go field); objects in it are not checked for repeated keys,
// so a decoder gives up unless the value is a scalar.
func (d *Dec) Skip() {
	if d.bad {
		return
	}
	if c := d.w.peek(); c == '{' || c == '[' {
		d.bad = true
		return
	}
	d.w.scalar()
}

// decodeFast runs a generated decoder over data, a document json.Valid
// accepted, and reports whether it decoded all of it.
func decodeFast(data []byte, v fastDecoder) bool {
	d := Dec{w: walker{data: data}}
	v.DecodeFastJSON(&d)
	if d.bad {
		return false
	}
	d.w.space()
	return d.w.pos == len(data)
}

// Enc is the writer a generated encoder gets.
type Enc struct {
	buf    []byte
	indent bool
	err    error
}

// Open starts an object.
func (e *Enc) Open() { e.buf = append(e.buf, '{') }

// Key starts the n-th member (from 0) of an object at depth: its quoted
// key, which the generator made as encoding/json quotes it.
func (e *Enc) Key(n int, quoted string, depth int) {
	if n > 0 {
		e.buf = append(e.buf, ',')
	}
	e.newline(depth + 1)
	e.buf = append(e.buf, quoted...)
	e.buf = append(e.buf, ':')
	if e.indent {
		e.buf = append(e.buf, ' ')
	}
}

// Close ends an object at depth that has n members.
func (e *Enc) Close(n, depth int) {
	if n > 0 {
		e.newline(depth)
	}
	e.buf = append(e.buf, '}')
}

func (e *Enc) newline(depth int) { e.buf = appendNewline(e.buf, e.indent, depth) }

// Null writes null.
func (e *Enc) Null() { e.buf = append(e.buf, "null"...) }

// String writes s quoted as encoding/json quotes it.
func (e *Enc) String(s string) { e.buf = appendString(e.buf, s) }

// Int writes n.
func (e *Enc) Int(n int64) { e.buf = strconv.AppendInt(e.buf, n, 10) }

// Uint writes n.
func (e *Enc) Uint(n uint64) { e.buf = strconv.AppendUint(e.buf, n, 10) }

// Bool writes b.
func (e *Enc) Bool(b bool) { e.buf = strconv.AppendBool(e.buf, b) }

// Strings writes s at depth as encoding/json writes a []string.
func (e *Enc) Strings(s []string, depth int) {
	switch {
	case s == nil:
		e.Null()
		return
	case len(s) == 0:
		e.buf = append(e.buf, "[]"...)
		return
	}
	e.buf = append(e.buf, '[')
	for i, v := range s {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.newline(depth + 1)
		e.String(v)
	}
	e.newline(depth)
	e.buf = append(e.buf, ']')
}

// Value writes v, a value of no fixed type (an event's detail), as
// encoding/json writes it: what wt's event details hold (strings, integers,
// booleans, string lists, maps of these, records with a generated
// encoder) itself, anything else by encoding/json.
func (e *Enc) Value(v any, depth int) {
	if e.err != nil {
		return
	}
	switch x := v.(type) {
	case nil:
		e.Null()
	case string:
		e.String(x)
	case bool:
		e.Bool(x)
	case int:
		e.Int(int64(x))
	case int64:
		e.Int(x)
	case uint64:
		e.Uint(x)
	case []string:
		e.Strings(x, depth)
	case map[string]any:
		if x == nil {
			e.Null()
			return
		}
		keys := slices.Sorted(maps.Keys(x))
		e.Open()
		for n, k := range keys {
			e.Key(n, string(appendString(nil, k)), depth)
			e.Value(x[k], depth+1)
		}
		e.Close(len(keys), depth)
	case fastEncoder:
		if nilPointer(x) {
			e.Null()
			return
		}
		x.AppendFastJSON(e, depth)
	default:
		b, err := stdMarshal(v, e.indent, depth)
		e.buf, e.err = append(e.buf, b...), err
	}
}

// DecodesItself reports whether v's generated decoder alone decodes data,
// a document json.Valid accepts, into v (tests hold wt's record types to
// it, as to WritesItself).
func DecodesItself(data []byte, v any) bool {
	fd, ok := v.(fastDecoder)
	return ok && decodeFast(data, fd)
}
