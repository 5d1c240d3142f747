package execcli

import (
	"bytes"
	"os"
	"os/signal"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// hold shows a refusal on the terminal until Enter is pressed (--hold).
//
// It is for launchers that run wt-exec in a pane and close the pane when
// the command ends: the refusal would be gone before anyone read it.
// Some of them (ccmanager 4.4) also drop what a session writes before its
// pane is attached, which is exactly when a refusal is written. So hold
// first asks the terminal where its cursor is (the ECMA-48 device status
// report, ESC [ 6 n), again every holdAsk, until an answer (or any key)
// comes back: a terminal that answers is one whose screen the output
// reaches. Then it prints, says how to close, and waits for Enter (or
// Ctrl-C, Ctrl-D, the terminal's end, SIGTERM or SIGHUP). A terminal that
// never answers is printed to after holdTries questions, so that hold
// cannot hide a refusal for good.
//
// in and out must both be terminals (show writes where out shows), else hold prints and returns at
// once, as without --hold. The terminal's modes are restored before
// hold returns.
func hold(in, out *os.File, show func()) {
	fd := int(in.Fd())
	saved, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil || !term.IsTerminal(int(out.Fd())) {
		show()
		return
	}
	raw := *saved
	raw.Lflag &^= unix.ICANON | unix.ECHO | unix.ISIG
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if unix.IoctlSetTermios(fd, unix.TCSETS, &raw) != nil {
		show()
		return
	}
	defer unix.IoctlSetTermios(fd, unix.TCSETS, saved)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, unix.SIGTERM, unix.SIGHUP)
	defer signal.Stop(stop)

	h := holder{fd: fd, stop: stop}
	for i := 0; i < holdTries && !h.ended; i++ {
		out.WriteString("\x1b[6n")
		if b := h.read(holdAsk); len(b) > 0 {
			break
		}
	}
	show()
	if h.ended {
		return
	}
	out.WriteString("wt-exec: press Enter to close\n")
	for !h.ended {
		b := h.read(holdAsk)
		// What the terminal still answers to earlier questions ends in 'R'
		// and holds no line end; Enter is CR (or LF), Ctrl-C and Ctrl-D
		// close too.
		if bytes.ContainsAny(b, "\r\n\x03\x04") {
			return
		}
	}
}

const (
	// holdAsk is how long hold waits for the terminal's answer before it
	// asks again, and how often it looks for a signal while it waits.
	holdAsk = 250 * time.Millisecond
	// holdTries is how many questions go unanswered before hold prints
	// regardless (about five seconds).
	holdTries = 20
)

// holder reads the terminal for hold.
type holder struct {
	fd    int
	stop  chan os.Signal
	ended bool // a signal came, or the terminal is gone
}

// read waits up to d for input and returns what came (nil on none).
func (h *holder) read(d time.Duration) []byte {
	select {
	case <-h.stop:
		h.ended = true
		return nil
	default:
	}
	fds := []unix.PollFd{{Fd: int32(h.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, int(d/time.Millisecond))
	switch {
	case err == unix.EINTR:
		return nil
	case err != nil:
		h.ended = true
		return nil
	case n == 0:
		return nil
	case fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 && fds[0].Revents&unix.POLLIN == 0:
		h.ended = true
		return nil
	}
	b := make([]byte, 256)
	m, err := unix.Read(h.fd, b)
	if err != nil || m == 0 {
		h.ended = true
		return nil
	}
	return b[:m]
}
