// Package shell is wt's one shell quoter: every value that goes into a
// command wt prints for a person to run (a hint, a doctor fix, a next
// step) goes through Word, and every path recorded in a hook shim through
// Quote, so that no value can end the command early or start another
// (a path "../my w1", an owner "bob; touch PWNED").
package shell

import "strings"

// Word returns s as one sh word: unchanged when it holds only characters
// that sh never treats specially, else single-quoted.
func Word(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == ':' || r == '+' || r == ',' || r == '@' || r == '=' ||
			r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return Quote(s)
}

// Quote returns s single-quoted for sh, always: each single quote in s is
// written as close quote, backslash and quote, open quote. Nothing inside
// single quotes is special to sh ($, `, \, spaces, ").
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Unquote inverts Quote exactly; ok is false for anything Quote did not
// write.
func Unquote(q string) (string, bool) {
	if len(q) < 2 || q[0] != '\'' || q[len(q)-1] != '\'' {
		return "", false
	}
	s := strings.ReplaceAll(q[1:len(q)-1], `'\''`, "'")
	if Quote(s) != q {
		return "", false
	}
	return s, true
}

// Words joins Word of each argument with spaces: a whole command.
func Words(args ...string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = Word(a)
	}
	return strings.Join(out, " ")
}
