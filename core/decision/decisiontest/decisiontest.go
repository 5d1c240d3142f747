// Package decisiontest is what tests say of a decision: one helper, not a
// copy in each package's tests.
package decisiontest

import (
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
)

// Want fails t unless err is a decision with code, and returns it.
func Want(t testing.TB, err error, code string) *decision.Error {
	t.Helper()
	d, ok := decision.As(err)
	if !ok || d.Code != code {
		t.Fatalf("got %v, want %s", err, code)
	}
	return d
}

// WantHint is Want, and the decision's hint holds hint.
func WantHint(t testing.TB, err error, code, hint string) *decision.Error {
	t.Helper()
	d := Want(t, err, code)
	if !strings.Contains(d.Hint, hint) {
		t.Fatalf("got %v (hint %q), want %s with a hint holding %q", err, d.Hint, code, hint)
	}
	return d
}
