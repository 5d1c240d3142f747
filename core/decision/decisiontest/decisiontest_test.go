package decisiontest

import (
	"errors"
	"testing"

	"github.com/wt-tool/wt/core/decision"
)

// fakeT records a failure instead of ending the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Fatalf(string, ...any) { f.failed = true; panic(f) }

func fails(t *testing.T, f func(tb testing.TB)) bool {
	t.Helper()
	ft := &fakeT{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != ft {
				panic(r)
			}
		}()
		f(ft)
	}()
	return ft.failed
}

func TestWant(t *testing.T) {
	d := decision.Relay(decision.Usage, "bad").WithHint("run this")
	if fails(t, func(tb testing.TB) { Want(tb, d, decision.Usage) }) {
		t.Error("Want failed on the code it was given")
	}
	if !fails(t, func(tb testing.TB) { Want(tb, d, decision.Internal) }) {
		t.Error("Want passed another code")
	}
	if !fails(t, func(tb testing.TB) { Want(tb, errors.New("plain"), decision.Usage) }) {
		t.Error("Want passed an error that is no decision")
	}
	if fails(t, func(tb testing.TB) { WantHint(tb, d, decision.Usage, "this") }) {
		t.Error("WantHint failed on its hint")
	}
	if !fails(t, func(tb testing.TB) { WantHint(tb, d, decision.Usage, "that") }) {
		t.Error("WantHint passed a hint it does not hold")
	}
}
