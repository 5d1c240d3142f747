package store

import (
	"strconv"
	"strings"
	"unicode"

	"github.com/wt-tool/wt/core/decision"
)

// ValidRole refuses a role that is not in store.Roles.
func ValidRole(role string) error {
	for _, r := range Roles {
		if r == role {
			return nil
		}
	}
	return decision.Say(decision.InvalidRole, "role-not", role, strings.Join(Roles, ", ")).
		WithHint("pass --role feature (the default) or one of %s", strings.Join(Roles, ", "))
}

// Task keys and owners have a character set (docs/decisions.md,
// "Allocation"): a letter or digit, then letters, digits and . _ - (task
// keys also /, owners also @ +), 128 bytes at most. Nothing in them can
// break a command line, a table or a terminal.
//
// They are checked by hand, not with a regexp: compiling `{0,127}` at
// package init cost every wt binary 0.6 ms at every start (a commit's gate
// included).
func inSet(s, extra string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || strings.IndexByte(extra, c) < 0) {
			return false
		}
	}
	return true
}

// ValidTaskKey refuses a task key outside its character set. The default
// branch wt/<KEY> must also be a valid ref name; Allocate checks that with
// git.
func ValidTaskKey(key string) error {
	if !inSet(key, "._/-") {
		return decision.Say(decision.InvalidTaskKey, "task-key", strconv.QuoteToASCII(key)).
			WithHint("pass --task KEY, e.g. --task T-12")
	}
	return nil
}

// ValidOwner refuses an owner outside its character set.
func ValidOwner(owner string) error {
	if !inSet(owner, "._@+-") {
		return decision.Say(decision.InvalidOwner, "owner-not", strconv.QuoteToASCII(owner)).
			WithHint("pass --owner NAME, e.g. --owner alice")
	}
	return nil
}

// ValidText refuses free text wt stores (a path, a reason) that holds a
// control character: a newline would forge lines in wt's output and an
// escape sequence would reach the terminal.
func ValidText(what, s string) error {
	for _, r := range s {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return decision.Say(decision.Usage, "holds-control", what, strconv.QuoteToASCII(s)).
				WithHint("give a %s of printable characters", what)
		}
	}
	return nil
}
