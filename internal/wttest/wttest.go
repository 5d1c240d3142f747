// Package wttest is what wt's unit tests share that needs no repository:
// the check of a decision code, and lease holders live and dead. It
// imports nothing above core/decision and core/proc, so every package's
// tests may use it (internal/wtfixture, which makes governed
// repositories, imports core/alloc and core/policy, whose own tests cannot).
package wttest

import (
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/proc"
)

// WantCode fails the test at once unless err carries decision code.
func WantCode(t testing.TB, err error, code string) {
	t.Helper()
	if got := decision.CodeOf(err); got != code {
		t.Fatalf("got %q (%v), want %s", got, err, code)
	}
}

// DeadIdentity is a process of another boot: never live.
var DeadIdentity = proc.Identity{BootID: "00000000-0000-4000-8000-000000000000", PID: 4242, StartTicks: 1}

// DeadHolder is a lease holder on another boot: never live.
var DeadHolder = proc.Holder{ClientID: "gone", PID: DeadIdentity.PID, BootID: DeadIdentity.BootID, StartTicks: DeadIdentity.StartTicks}

// Self is this process as a lease holder (client "test"): live while the
// test runs. A process that cannot be described skips the test.
func Self(t testing.TB) proc.Holder {
	t.Helper()
	id, err := proc.Self()
	if err != nil {
		t.Skip("this process cannot be described:", err)
	}
	return proc.Holder{ClientID: "test", PID: id.PID, BootID: id.BootID, StartTicks: id.StartTicks}
}
