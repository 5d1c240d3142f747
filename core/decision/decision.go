// Package decision holds wt's stable decision codes, the table of what each
// means and the words it is said in (table.go), and the typed error that
// carries one from core/ to the command line.
//
// Decision codes are API: tests assert them, scripts branch on them, and
// renaming one is a breaking change. Every refusal in core/ is an *Error with a
// code from this package, raised through Say, SayWrap or Within in the
// words of the table, the facts that led to it, and (where the user can fix
// it) a hint naming the exact command to run.
package decision

import (
	"errors"
	"fmt"
	"slices"
)

// Error is a refusal with a stable code. Message states the fact (lowercase,
// no trailing period); Hint, when set, is the next command to run.
type Error struct {
	Code    string
	Message string
	Hint    string
	// Facts are extra structured fields reported under "error" in --json output.
	Facts map[string]any
	// Err is an underlying cause, if any.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Code + ": " + e.Err.Error()
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// WithHint sets the hint and returns e, for chaining at the call site.
func (e *Error) WithHint(format string, args ...any) *Error {
	e.Hint = fmt.Sprintf(format, args...)
	return e
}

// WithFact records one structured fact and returns e.
func (e *Error) WithFact(key string, value any) *Error {
	if e.Facts == nil {
		e.Facts = map[string]any{}
	}
	e.Facts[key] = value
	return e
}

// CodeOf returns the decision code carried by err, or "" if there is none.
func CodeOf(err error) string {
	var d *Error
	if errors.As(err, &d) {
		return d.Code
	}
	return ""
}

// As returns the *Error inside err, if any.
func As(err error) (*Error, bool) {
	var d *Error
	ok := errors.As(err, &d)
	return d, ok
}

// Codes lists every decision code this build knows, sorted. wt-admin version
// reports it so scripts can check what a binary speaks.
func Codes() []string {
	out := slices.Clone(codes[:])
	slices.Sort(out)
	return out
}

// Plural is n with the noun for it: "1 change", "3 changes".
func Plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
