package hooks

import (
	"bufio"
	"io"
	"strings"

	"github.com/wt-tool/wt/core/decision"
)

// RefUpdate is one line of the reference-transaction hook's stdin.
type RefUpdate struct {
	Old, New, Ref string
}

// ParseRefUpdates reads the reference-transaction hook's stdin (githooks(5)):
// one line per ref update, "<old-value> SP <new-value> SP <ref-name> LF".
// The values are object names, or the zero id for a ref created or deleted;
// a symbolic-ref update may name "ref:<target>" instead. A line that does not
// have exactly three fields, or a ref name that is empty, is
// INVALID_HOOK_INPUT: the transaction is refused rather than half judged.
func ParseRefUpdates(r io.Reader) ([]RefUpdate, error) {
	var out []RefUpdate
	err := eachLine(r, func(n int, line string) error {
		f := strings.Split(line, " ")
		if len(f) != 3 || f[0] == "" || f[1] == "" || f[2] == "" {
			return decision.Say(decision.InvalidHookInput, "reference-transaction", n, line)
		}
		out = append(out, RefUpdate{Old: f[0], New: f[1], Ref: f[2]})
		return nil
	})
	return out, err
}

// PushUpdate is one line of the pre-push hook's stdin.
type PushUpdate struct {
	LocalRef, LocalOID, RemoteRef, RemoteOID string
}

// Deletes reports whether the line deletes the remote ref.
func (p PushUpdate) Deletes() bool { return p.LocalRef == "(delete)" }

// ParsePushUpdates reads the pre-push hook's stdin (githooks(5)): one line
// per ref to update, "<local ref> SP <local object name> SP <remote ref> SP
// <remote object name> LF". A deletion has "(delete)" as its local ref and the
// zero id. Anything else is INVALID_HOOK_INPUT.
func ParsePushUpdates(r io.Reader) ([]PushUpdate, error) {
	var out []PushUpdate
	err := eachLine(r, func(n int, line string) error {
		f := strings.Split(line, " ")
		if len(f) != 4 || f[0] == "" || f[1] == "" || f[2] == "" || f[3] == "" || !isOID(f[1]) || !isOID(f[3]) {
			return decision.Say(decision.InvalidHookInput, "pre-push", n, line)
		}
		out = append(out, PushUpdate{LocalRef: f[0], LocalOID: f[1], RemoteRef: f[2], RemoteOID: f[3]})
		return nil
	})
	return out, err
}

func eachLine(r io.Reader, fn func(n int, line string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	for sc.Scan() {
		n++
		if err := fn(n, sc.Text()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return decision.SayWrap(decision.InvalidHookInput, err, "hook-input")
	}
	return nil
}

// isOID accepts a hex object name of SHA-1 or SHA-256 length.
func isOID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
