package clikit

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"
)

// termSafe writes what wt prints with every control character other than
// newline and tab escaped (\x1b, \u009b): a path, branch or reason that came
// from outside (git reports worktrees wt did not make) can then neither
// move the cursor, recolour or retitle the terminal, nor hide text. Newlines
// inside a value are escaped where the value is printed (clean).
type termSafe struct{ w io.Writer }

func (t termSafe) Write(p []byte) (int, error) {
	if !needsEscape(string(p), "\n\t") {
		return t.w.Write(p)
	}
	if _, err := io.WriteString(t.w, escape(string(p), "\n\t")); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Clean escapes every control character in a value printed inside a line,
// newlines and tabs included, so that a value can never forge a line or a
// column of wt's output.
func Clean(s string) string {
	if !needsEscape(s, "") {
		return s
	}
	return escape(s, "")
}

func needsEscape(s, keep string) bool {
	for _, r := range s {
		if (unicode.IsControl(r) || r == utf8.RuneError) && !strings.ContainsRune(keep, r) {
			return true
		}
	}
	return false
}

func escape(s, keep string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsControl(r) && !strings.ContainsRune(keep, r):
			switch {
			case r == '\n':
				b.WriteString(`\n`)
			case r == '\t':
				b.WriteString(`\t`)
			case r < 0x80:
				fmt.Fprintf(&b, `\x%02x`, r)
			default:
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Table is the column layout of every table wt prints.
func Table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// Dash is s, or "-" for an empty cell.
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
