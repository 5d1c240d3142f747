// Package textout is how wt's binaries write text for people: every
// control character a value could carry escaped, a refusal or failure as
// two lines (the decision code and message, then a hint) and the exit code
// that goes with it. It links no CLI library: wt-gate, which git starts at
// every commit, prints through it as wt-hook does.
package textout

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/wt-tool/wt/core/decision"
)

// Exit codes shared by wt-admin, wt-hook and wt-gate (docs/design.md,
// "Output").
const (
	ExitOK      = 0
	ExitRefused = 1
	ExitUsage   = 2
)

// ExitError carries an exit code to main. Err has already been reported when
// Reported is true.
type ExitError struct {
	Code     int
	Err      error
	Reported bool
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Decide is what err comes to: the exit code, and the decision to report
// (a USAGE refusal without a hint gets "see BIN COMMAND --help"); reported
// says err was reported already and nothing is to be printed.
func Decide(err error, bin, command string) (code int, d *decision.Error, reported bool) {
	code = ExitRefused
	var xe *ExitError
	if errors.As(err, &xe) {
		code = xe.Code
		if xe.Reported {
			return code, nil, true
		}
		if xe.Err != nil {
			err = xe.Err
		}
	}
	d, ok := decision.As(err)
	if !ok {
		d = decision.Relay(decision.Internal, err.Error())
	}
	if d.Code == decision.Usage {
		code = ExitUsage
		if d.Hint == "" {
			d = &decision.Error{Code: d.Code, Message: d.Message, Facts: d.Facts, Err: d.Err,
				Hint: fmt.Sprintf("see %s --help", strings.TrimSpace(bin+" "+command))}
		}
	}
	return code, d, false
}

// Print writes d as wt's lines on w: for a usage error (code ExitUsage) the
// code and what is wrong, then the hint that gives the form; else
// "refused" (or "error" for a failure of wt or git), the code and the
// message, then the hint if there is one.
func Print(w io.Writer, bin string, code int, d *decision.Error) {
	if code == ExitUsage {
		fmt.Fprintf(w, "%s: %s: %s\n", bin, d.Code, Clean(d.Message))
		fmt.Fprintf(w, "%s: hint: %s\n", bin, Clean(d.Hint))
		return
	}
	verb := "refused"
	if d.Code == decision.Internal || d.Code == decision.GitFailed {
		verb = "error"
	}
	fmt.Fprintf(w, "%s: %s: %s: %s\n", bin, verb, d.Code, Clean(d.Message))
	if d.Hint != "" {
		fmt.Fprintf(w, "%s: hint: %s\n", bin, Clean(d.Hint))
	}
}

// Report writes err on w (Decide, then Print) and returns its exit code.
func Report(w io.Writer, bin, command string, err error) int {
	code, d, reported := Decide(err, bin, command)
	if !reported {
		Print(w, bin, code, Anchored(d, WorkDir()))
	}
	return code
}

// Safe returns a writer that writes to w what wt prints with every control
// character other than newline and tab escaped (\x1b, \u009b): a path,
// branch or reason that came from outside (git reports worktrees wt did
// not make) can then neither move the cursor, recolour or retitle the
// terminal, nor hide text. Newlines inside a value are escaped where the
// value is printed (Clean).
func Safe(w io.Writer) io.Writer { return termSafe{w} }

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
