package decision

import (
	"fmt"
	"sync"
)

// Kind is how a code ends a command, which gives its exit status.
type Kind int

const (
	// Outcome: what a command did or showed (exit 0; DOCTOR_FINDINGS
	// exits 1: something needs action).
	Outcome Kind = iota
	// Refusal: the command refused or failed (wt-admin, wt-hook and
	// wt-gate exit 1; wt-exec 125, or 126 and 127 for a command it
	// cannot run or find).
	Refusal
	// UsageError: the command line is wrong (exit 2; wt-exec 125).
	UsageError
	// Notice: said on the way, the command goes on (its exit is the
	// command's).
	Notice
	// Finding: reported inside another outcome (status, doctor, audit, a
	// plan's blockers), never a command's exit of its own.
	Finding
)

func (k Kind) String() string {
	return [...]string{"outcome", "refusal", "usage", "notice", "finding"}[k]
}

// Section is a group of codes of one part of wt.
type Section struct {
	Title string
	// Note says what the section's refusals exit with, where that is
	// worth saying beside the title.
	Note  string
	Codes []Spec
}

// Spec is one code: its meaning (for a person reading the table, in
// Markdown), its kind, and the forms of its message.
type Spec struct {
	Code    string
	Kind    Kind
	Meaning string
	Words   []Form
}

// Form is one message of a code: Key names it where it is raised, Words
// is its text, a fmt format whose verbs are the values it takes.
type Form struct {
	Key   string
	Words string
}

// Exit is what wt-admin, wt-hook and wt-gate exit with when the code is
// a command's outcome (-1: it never is, being a notice or a finding).
func (s Spec) Exit() int {
	switch {
	case s.Code == DoctorFindings:
		return 1
	case s.Kind == Outcome:
		return 0
	case s.Kind == Refusal:
		return 1
	case s.Kind == UsageError:
		return 2
	}
	return -1
}

// ExecExit is what wt-exec exits with when it ends on the code (-1:
// wt-exec does not end on it). INTERRUPTED is 125 here, and 128+N when
// the refusal names signal N (its fact "signal"), as a shell's would be.
func (s Spec) ExecExit() int {
	switch {
	case s.Code == CommandNotFound:
		return 127
	case s.Code == CommandNotRunnable:
		return 126
	case s.Kind == Refusal || s.Kind == UsageError:
		return 125
	}
	return -1
}

// index holds each code's forms by key, and the shared forms under "".
var index = sync.OnceValue(func() map[string]map[string]string {
	m := make(map[string]map[string]string, len(codes)+1)
	add := func(code string, forms []Form) {
		byKey := make(map[string]string, len(forms))
		for _, f := range forms {
			byKey[f.Key] = f.Words
		}
		m[code] = byKey
	}
	for _, sec := range Table {
		for _, s := range sec.Codes {
			add(s.Code, s.Words)
		}
	}
	add("", Shared)
	return m
})

// Words is the text of code's form key (or of the shared form key) with args in its verbs. A key the
// table does not hold (a defect TestWordsInOnePlace finds first) is said
// as such rather than dropped.
func Words(code, key string, args ...any) string {
	format, ok := index()[code][key]
	if !ok {
		format, ok = index()[""][key]
	}
	if !ok {
		return fmt.Sprintf("(%s has no words %q) %v", code, key, args)
	}
	return fmt.Sprintf(format, args...)
}

// Say is a refusal with code, in the words of its form key.
func Say(code, key string, args ...any) *Error {
	return &Error{Code: code, Message: Words(code, key, args...)}
}

// SayWrap is Say with err as the cause, its text after the words.
func SayWrap(code string, err error, key string, args ...any) *Error {
	msg := Words(code, key, args...)
	if err != nil {
		msg += ": " + err.Error()
	}
	return &Error{Code: code, Message: msg, Err: err}
}

// Within is d's refusal said in a context: the words of context form key
// (Contexts), with args and then d's own words in its verbs. Code, hint,
// facts and cause stay d's.
func Within(d *Error, key string, args ...any) *Error {
	format := ""
	for _, f := range Contexts {
		if f.Key == key {
			format = f.Words
		}
	}
	if format == "" {
		format = "(no context words " + key + ") %v: %s"
		args = []any{args}
	}
	return &Error{Code: d.Code, Message: fmt.Sprintf(format, append(args, d.Message)...), Hint: d.Hint, Facts: d.Facts, Err: d.Err}
}

// Relay is a refusal whose words were said elsewhere: by another process
// of wt's (a helper's answer, a child's JSON), or by a summary of what a
// command did that carries its outcome's code. It is the one way to raise
// a code with a message not from the table, and each use is named in
// TestWordsInOnePlace.
func Relay(code, message string) *Error {
	return &Error{Code: code, Message: message}
}
