package strictjson

import (
	"encoding/json"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Marshal returns v as encoding/json's Marshal does, byte for byte, and
// MarshalIndent as its MarshalIndent(v, "", "  ") does: wt's records are
// written through them. A record with a generated encoder (scripts/
// genfastjson: those a wt-exec run or a commit gate writes) is written by
// it, so a new process does not pay encoding/json's first-use analysis of
// the record's type; anything else is encoding/json's. Tests in core/store
// hold every generated encoder to encoding/json's bytes.
func Marshal(v any) ([]byte, error) { return marshal(v, false) }

// MarshalIndent is Marshal with encoding/json's MarshalIndent(v, "", "  ")
// layout.
func MarshalIndent(v any) ([]byte, error) { return marshal(v, true) }

func marshal(v any, indent bool) ([]byte, error) {
	if fe, ok := v.(fastEncoder); ok && !nilPointer(v) {
		e := Enc{indent: indent}
		fe.AppendFastJSON(&e, 0)
		if e.err == nil {
			return e.buf, nil
		}
	}
	return stdMarshal(v, indent, 0)
}

// stdMarshal is encoding/json's encoding of v, laid out to sit at depth.
func stdMarshal(v any, indent bool, depth int) ([]byte, error) {
	if indent {
		return json.MarshalIndent(v, strings.Repeat("  ", depth), "  ")
	}
	return json.Marshal(v)
}

func nilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

func appendNewline(buf []byte, indent bool, depth int) []byte {
	if !indent {
		return buf
	}
	buf = append(buf, '\n')
	for range depth {
		buf = append(buf, "  "...)
	}
	return buf
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

// WritesItself reports whether Marshal writes v with a generated encoder
// rather than handing it to encoding/json (tests hold wt's record types to
// it).
func WritesItself(v any) bool {
	_, ok := v.(fastEncoder)
	return ok
}
