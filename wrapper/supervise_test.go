package wrapper

import (
	"errors"
	"os"
	"os/signal"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// child runs argv under a supervisor (no lease, no pty, no terminal) to
// its end and returns the supervisor. Not parallel: reaping waits for any
// child of the test process.
func child(t *testing.T, argv ...string) *supervisor {
	t.Helper()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	s := &supervisor{grant: &lease.Grant{}, status: -1, restore: func() {},
		opts: Options{Args: argv, PTY: PTYOff, Stdin: null, Stdout: null, Stderr: null, Notify: func(m string) { t.Errorf("notice: %s", m) }}}
	s.catch()
	defer func() { signal.Stop(s.sigs); signal.Stop(s.stops) }()
	path, err := LookPath(argv[0], "", os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	restore, err := s.start(path, argv, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	s.restore = restore
	s.supervise()
	return s
}

// TestSuperviseChild: wt-exec's status is its child's exit status, or
// 128+N when it died of signal N (which Result.Died then names).
func TestSuperviseChild(t *testing.T) {
	if s := child(t, "true"); s.status != 0 || s.died != 0 {
		t.Errorf("true: status %d died %v", s.status, s.died)
	}
	if s := child(t, "sh", "-c", "exit 3"); s.status != 3 || s.died != 0 {
		t.Errorf("exit 3: status %d died %v", s.status, s.died)
	}
	if s := child(t, "sh", "-c", "kill -TERM $$"); s.status != 128+int(unix.SIGTERM) || s.died != unix.SIGTERM {
		t.Errorf("killed: status %d died %v", s.status, s.died)
	}
}

// TestStartFails: a command that cannot be exec'd is COMMAND_NOT_FOUND or
// COMMAND_NOT_EXECUTABLE, and nothing runs.
func TestStartFails(t *testing.T) {
	t.Parallel()
	null, _ := os.Open(os.DevNull)
	defer null.Close()
	s := &supervisor{opts: Options{PTY: PTYOff, Stdin: null, Stdout: null, Stderr: null}}
	_, err := s.start("/nonexistent/cmd", []string{"cmd"}, nil)
	wantCode(t, err, decision.CommandNotFound)
	_, err = s.start(t.TempDir(), []string{"dir"}, nil)
	wantCode(t, err, decision.CommandNotRunnable)
	if s.pid != 0 {
		t.Errorf("a pid for nothing started: %d", s.pid)
	}
}

func TestExitStatus(t *testing.T) {
	t.Parallel()
	for ws, want := range map[unix.WaitStatus]int{0: 0, 3 << 8: 3, unix.WaitStatus(unix.SIGKILL): 128 + 9, 0x137f: 1} {
		if got := exitStatus(ws); got != want {
			t.Errorf("exitStatus(%#x) = %d, want %d", uint32(ws), got, want)
		}
	}
}

// TestNotifyWhileRaw: notices wait while the terminal is raw and come out
// in order once it is restored.
func TestNotifyWhileRaw(t *testing.T) {
	t.Parallel()
	var n notes
	s := &supervisor{opts: Options{Notify: n.notify}}
	s.setRaw(true)
	s.notify("one")
	s.notify("two")
	if n.said != nil {
		t.Fatalf("said while raw: %q", n.said)
	}
	s.setRaw(false)
	s.notify("three")
	if len(n.said) != 3 || n.said[0] != "one" || n.said[2] != "three" {
		t.Errorf("notices: %q", n.said)
	}
}

// TestDeadPrevious: a fleet refusal is the grant's own dead predecessor's
// lease only when it names the same local lease, boot and pid.
func TestDeadPrevious(t *testing.T) {
	t.Parallel()
	prev := &store.Lease{LeaseID: "L0", Holder: proc.Holder{BootID: "b", PID: 7}}
	g := lease.Grant{Previous: prev}
	held := func(h fleet.Holder) error {
		return decision.New(decision.FleetLeaseHeld, "held").WithFact("fleet_holder", h).WithFact("fleet_revision", int64(12))
	}
	same := fleet.Holder{LeaseID: "L0", BootID: "b", PID: 7, ClientID: "c"}
	if d, ok := deadPrevious(held(same), g); !ok || d.revision != 12 || d.ClientID != "c" {
		t.Errorf("the predecessor's: %+v %v", d, ok)
	}
	for name, tc := range map[string]struct {
		err error
		g   lease.Grant
	}{
		"another lease":     {held(fleet.Holder{LeaseID: "L9", BootID: "b", PID: 7}), g},
		"another boot":      {held(fleet.Holder{LeaseID: "L0", BootID: "x", PID: 7}), g},
		"another pid":       {held(fleet.Holder{LeaseID: "L0", BootID: "b", PID: 8}), g},
		"no predecessor":    {held(same), lease.Grant{}},
		"another refusal":   {decision.New(decision.FleetUnreachable, "x"), g},
		"not a decision":    {errors.New("x"), g},
		"no holder in fact": {decision.New(decision.FleetLeaseHeld, "x"), g},
	} {
		if _, ok := deadPrevious(tc.err, tc.g); ok {
			t.Errorf("%s: taken for the predecessor's", name)
		}
	}
	// Without fleet mode, or for another role, no fleet lease is taken.
	s := &supervisor{}
	if fl, err := s.fence(lease.Grant{Role: store.RoleFeature}, store.Policy{}); fl != nil || err != nil {
		t.Errorf("fence without fleet mode: %v %v", fl, err)
	}
	if fl, err := s.fence(lease.Grant{Role: store.RoleIntegration}, store.Policy{Coordinator: store.CoordinatorEtcd}); fl != nil || err != nil {
		t.Errorf("fence of an integration worktree: %v %v", fl, err)
	}
	wantCode(t, func() error {
		_, err := s.fence(lease.Grant{Role: store.RoleFeature}, store.Policy{Coordinator: store.CoordinatorEtcd, FleetTTL: "bogus"})
		return err
	}(), decision.InvalidPolicy)
	s.releaseFleet() // nothing to release
}
