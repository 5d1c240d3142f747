package execcli

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// terminal opens a pty pair: the terminal side hold reads and writes, and
// the side the test plays the person (and the terminal emulator) on.
func terminal(t *testing.T) (screen, tty *os.File) {
	t.Helper()
	screen, tty, err := pty.Open()
	if err != nil {
		t.Skip("no pty here:", err)
	}
	t.Cleanup(func() { screen.Close(); tty.Close() })
	return screen, tty
}

// readUntil reads the screen side until what it read holds want.
func readUntil(t *testing.T, screen io.Reader, want string) string {
	t.Helper()
	var got []byte
	b := make([]byte, 256)
	for !bytes.Contains(got, []byte(want)) {
		n, err := screen.Read(b)
		if err != nil {
			t.Fatalf("read %q, then %v; want %q", got, err, want)
		}
		got = append(got, b[:n]...)
	}
	return string(got)
}

// holdOn runs hold in the background on tty and returns a channel closed
// once it returned, and how often show ran.
func holdOn(tty *os.File) (done chan struct{}, shown *int) {
	done, shown = make(chan struct{}), new(int)
	go func() {
		defer close(done)
		hold(tty, tty, func() { *shown++ })
	}()
	return done, shown
}

// TestHoldAsksTheTerminalThenWaitsForEnter: hold asks where the cursor is,
// shows the refusal once the terminal answers, says how to close and
// returns on Enter (or Ctrl-D) with the terminal's modes as they were.
func TestHoldAsksTheTerminalThenWaitsForEnter(t *testing.T) {
	for _, key := range []string{"\r", "\x04"} {
		screen, tty := terminal(t)
		before, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		done, shown := holdOn(tty)
		readUntil(t, screen, "\x1b[6n")
		screen.WriteString("\x1b[24;1R") // the terminal's answer
		readUntil(t, screen, "wt-exec: press Enter to close")
		screen.WriteString("\x1b[24;1R") // a late answer closes nothing
		screen.WriteString(key)
		<-done
		if *shown != 1 {
			t.Errorf("key %q: shown %d times", key, *shown)
		}
		after, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if *after != *before {
			t.Errorf("key %q: the terminal's modes are not restored:\n%+v\nwant\n%+v", key, *after, *before)
		}
	}
}

// TestHoldEndsWithTheTerminal: a terminal that goes away before it
// answers still gets the refusal shown, and hold does not wait for Enter.
func TestHoldEndsWithTheTerminal(t *testing.T) {
	screen, tty := terminal(t)
	done, shown := holdOn(tty)
	readUntil(t, screen, "\x1b[6n")
	screen.Close()
	<-done
	if *shown != 1 {
		t.Errorf("shown %d times", *shown)
	}
}

// TestHoldEndsOnSIGTERM: SIGTERM while hold waits ends the wait; the
// refusal is shown first.
func TestHoldEndsOnSIGTERM(t *testing.T) {
	screen, tty := terminal(t)
	done, shown := holdOn(tty)
	out := readUntil(t, screen, "\x1b[6n")
	if strings.Contains(out, "press Enter") {
		t.Fatalf("hold said how to close before the terminal answered: %q", out)
	}
	if err := unix.Kill(os.Getpid(), unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-done
	if *shown != 1 {
		t.Errorf("shown %d times", *shown)
	}
}

// TestHoldWithoutATerminalShowsAtOnce: when stdin or the output is not a
// terminal, hold shows the refusal and returns, as without --hold.
func TestHoldWithoutATerminalShowsAtOnce(t *testing.T) {
	t.Parallel()
	_, tty := terminal(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, c := range []struct {
		name    string
		in, out *os.File
	}{{"stdin a pipe", r, tty}, {"output a pipe", tty, w}} {
		shown := 0
		hold(c.in, c.out, func() { shown++ })
		if shown != 1 {
			t.Errorf("%s: shown %d times", c.name, shown)
		}
	}
}

// TestHoldFlagStillReports: --hold where stdin is no terminal (a test's)
// reports the refusal on stderr at once with its usual exit status.
func TestHoldFlagStillReports(t *testing.T) {
	t.Parallel()
	code, _, stderr := execute(t, "--hold", "--pty", "--no-pty", "ls")
	if code != ExitRefused || !strings.Contains(stderr, "--pty and --no-pty exclude each other") {
		t.Errorf("exit %d:\n%s", code, stderr)
	}
}
