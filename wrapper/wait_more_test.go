package wrapper

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/decision/decisiontest"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/core/waitline"
	"github.com/wt-tool/wt/wrapper/child"
)

func TestWaitable(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]bool{decision.WriterLeaseHeld: true, decision.FleetLeaseHeld: true, decision.FleetUnreachable: true,
		decision.WriterLeaseReserved: true, decision.RuntimeOccupied: true, decision.OwnerMismatch: false, decision.Internal: false} {
		if got := waitable(decision.Relay(code, "x")); got != want {
			t.Errorf("waitable(%s) = %v", code, got)
		}
	}
	if waitable(errors.New("plain")) || waitable(nil) {
		t.Error("waitable of a plain error or none")
	}
}

// waiter is a supervisor ready for waitAndAcquire, whose signal catching
// ends with the test (the watch's end stops the stop signals', stopCatching
// the rest). With a timeout, its clock reads the deadline as
// passed at its second reading: the wait times out after one try, however
// long that try took.
func waiter(t *testing.T, f fixture, timeout time.Duration) (*supervisor, *[]string, context.CancelFunc) {
	var told []string
	ctx, cancel := context.WithCancel(context.Background())
	s := &supervisor{repo: f.repo, startCtx: ctx, child: child.New(child.Config{}), opts: Options{Timeout: timeout, Waiting: func(m string) { told = append(told, m) }}}
	_, endWatch := s.child.WatchStart()
	start, readings := time.Unix(1_000_000, 0), 0
	s.now = func() time.Time {
		readings++
		if readings == 1 {
			return start
		}
		return start.Add(timeout)
	}
	t.Cleanup(func() {
		cancel()
		endWatch()
		s.stopCatching()
	})
	return s, &told, cancel
}

// TestWaitAndAcquire: --wait tries again after each refusal it may wait
// out (woken by a change of the leases), says once whom it waits on, and
// ends at a grant, at a refusal it may not wait out, at its timeout
// (WRITER_LEASE_WAIT_TIMEOUT) or at a stop signal (INTERRUPTED); its
// ticket leaves the line with it.
func TestWaitAndAcquire(t *testing.T) {
	f := newFixture(t)
	root := f.repo.Store.Root()
	held := decision.Relay(decision.WriterLeaseHeld, "held by pid 1")
	t.Run("granted after two refusals", func(t *testing.T) {
		s, told, _ := waiter(t, f, 0)
		tries := 0
		err := s.waitAndAcquire(root, f.c, "claude", func() error {
			tries++
			if tries < 3 {
				// The lease changes: what wakes the waiter.
				os.WriteFile(filepath.Join(store.LeasesDir(root), "wake"), nil, 0o644)
				return held
			}
			return nil
		})
		if err != nil || tries != 3 || len(*told) != 1 || (*told)[0] != "WRITER_LEASE_HELD: held by pid 1" {
			t.Fatalf("err %v, tries %d, told %q", err, tries, *told)
		}
		if ents, _ := os.ReadDir(store.WaitersDir(root, "w1")); len(ents) != 0 {
			t.Errorf("tickets left: %v", ents)
		}
	})
	t.Run("a refusal not waited out", func(t *testing.T) {
		s, _, _ := waiter(t, f, 0)
		tries := 0
		err := s.waitAndAcquire(root, f.c, "claude", func() error { tries++; return decision.Relay(decision.OwnerMismatch, "x") })
		if decision.CodeOf(err) != decision.OwnerMismatch || tries != 1 {
			t.Errorf("err %v, tries %d", err, tries)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		s, _, _ := waiter(t, f, time.Hour)
		err := s.waitAndAcquire(root, f.c, "claude", func() error { return held })
		d := decisiontest.Want(t, err, decision.WriterLeaseWaitTimeout)
		if !strings.Contains(d.Message, "held by pid 1") || !strings.Contains(d.Hint, "wt-admin lease inspect") {
			t.Errorf("%+v", d)
		}
	})
	t.Run("stopped", func(t *testing.T) {
		// The refusal's naming of the signal: child's TestStopped.
		s, _, cancel := waiter(t, f, 0)
		err := s.waitAndAcquire(root, f.c, "claude", func() error { cancel(); return held })
		decisiontest.Want(t, err, decision.Interrupted)
	})
	t.Run("behind an earlier waiter", func(t *testing.T) {
		first, err := waitline.Join(root, "w1")
		if err != nil {
			t.Fatal(err)
		}
		s, told, _ := waiter(t, f, time.Hour)
		tries := 0
		err = s.waitAndAcquire(root, f.c, "claude", func() error { tries++; return nil })
		first.Leave()
		d := decisiontest.Want(t, err, decision.WriterLeaseWaitTimeout)
		if tries != 0 || !strings.Contains(d.Message, "earlier waiters were still in line") || len(*told) != 1 || !strings.Contains((*told)[0], "1 earlier wt-exec --wait run(s)") {
			t.Errorf("tries %d, %+v, told %q", tries, d, *told)
		}
	})
}
