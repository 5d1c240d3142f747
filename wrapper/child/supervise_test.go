package child

import (
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/decision/decisiontest"
)

// run runs argv as a Proc (no lease, no pty, no terminal) to its end and
// returns the Proc. Not parallel: reaping waits for any child of the test
// process.
func run(t *testing.T, argv ...string) *Proc {
	t.Helper()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	s := &Proc{status: -1, restore: func() {},
		cfg: Config{PTY: PTYOff, Stdin: null, Stdout: null, Stderr: null, Notify: func(m string) { t.Errorf("notice: %s", m) }}}
	s.Catch()
	defer func() { signal.Stop(s.sigs); signal.Stop(s.stops) }()
	path, err := exec.LookPath(argv[0])
	if err != nil {
		t.Fatal(err)
	}
	restore, err := s.start(path, argv, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	s.restore = restore
	s.Supervise()
	return s
}

// TestSuperviseChild: wt-exec's status is its child's exit status, or
// 128+N when it died of signal N (which Result.Died then names).
func TestSuperviseChild(t *testing.T) {
	if s := run(t, "true"); s.status != 0 || s.died != 0 {
		t.Errorf("true: status %d died %v", s.status, s.died)
	}
	if s := run(t, "sh", "-c", "exit 3"); s.status != 3 || s.died != 0 {
		t.Errorf("exit 3: status %d died %v", s.status, s.died)
	}
	if s := run(t, "sh", "-c", "kill -TERM $$"); s.status != 128+int(unix.SIGTERM) || s.died != unix.SIGTERM {
		t.Errorf("killed: status %d died %v", s.status, s.died)
	}
}

// TestStartFails: a command that cannot be exec'd is COMMAND_NOT_FOUND or
// COMMAND_NOT_EXECUTABLE, and nothing runs.
func TestStartFails(t *testing.T) {
	t.Parallel()
	null, _ := os.Open(os.DevNull)
	defer null.Close()
	s := &Proc{cfg: Config{PTY: PTYOff, Stdin: null, Stdout: null, Stderr: null}}
	_, err := s.start("/nonexistent/cmd", []string{"cmd"}, nil)
	decisiontest.Want(t, err, decision.CommandNotFound)
	_, err = s.start(t.TempDir(), []string{"dir"}, nil)
	decisiontest.Want(t, err, decision.CommandNotRunnable)
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
	s := &Proc{cfg: Config{Notify: n.notify}}
	s.setRaw(true)
	s.Notify("one")
	s.Notify("two")
	if n.said != nil {
		t.Fatalf("said while raw: %q", n.said)
	}
	s.setRaw(false)
	s.Notify("three")
	if len(n.said) != 3 || n.said[0] != "one" || n.said[2] != "three" {
		t.Errorf("notices: %q", n.said)
	}
}

// TestStopped: the refusal for a stop signal that came before the child
// started names the signal.
func TestStopped(t *testing.T) {
	t.Parallel()
	s := New(Config{})
	s.stopSig.Store(unix.SIGTERM)
	d := decisiontest.Want(t, s.Stopped(), decision.Interrupted)
	if d.Facts["signal"] != int(unix.SIGTERM) || !strings.Contains(d.Message, "SIGTERM") {
		t.Errorf("%+v", d)
	}
}

// notes collects what a Proc says through Notify.
type notes struct{ said []string }

func (n *notes) notify(s string) { n.said = append(n.said, s) }
