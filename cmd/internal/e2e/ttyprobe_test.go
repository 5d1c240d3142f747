package e2e

import (
	"fmt"
	"os"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// ttyvictim DIR stands for another agent's pane: it opens a pty, writes
// the terminal's path to DIR/pts, and once DIR/stop exists prints what
// arrived on the terminal's input ("input: ..." or "input: none") and
// exits.
func ttyvictim() {
	dir := os.Args[1]
	ptmx, tty, err := pty.Open()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ttyvictim:", err)
		os.Exit(1)
	}
	defer ptmx.Close()
	// Written whole, then renamed: a waitfile that sees pts reads it all.
	if err := os.WriteFile(dir+"/pts.tmp", []byte(tty.Name()), 0o644); err != nil {
		os.Exit(1)
	}
	if err := os.Rename(dir+"/pts.tmp", dir+"/pts"); err != nil {
		os.Exit(1)
	}
	for {
		if _, err := os.Stat(dir + "/stop"); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// What TIOCSTI or a write to the master side would have queued for the
	// terminal's reader; the pty is in canonical mode, so a line needs its
	// newline, which TIOCSTI of "\n" gives.
	fd := int(tty.Fd())
	if n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0); n <= 0 {
		fmt.Println("input: none")
		os.Exit(0)
	}
	buf := make([]byte, 256)
	n, _ := unix.Read(fd, buf)
	if n <= 0 {
		fmt.Println("input: none")
	} else {
		fmt.Printf("input: %q\n", buf[:n])
	}
	os.Exit(0)
}

// ttyprobe PATH tries what an agent would do to another terminal: open it
// for writing, and push "id\n" into its input with TIOCSTI through a
// descriptor opened for reading. It prints one line per attempt.
func ttyprobe() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: ttyprobe PATH")
		os.Exit(2)
	}
	p := os.Args[1]
	if fd, err := unix.Open(p, unix.O_WRONLY|unix.O_NOCTTY, 0); err != nil {
		fmt.Println("write-open:", err)
	} else {
		unix.Close(fd)
		fmt.Println("write-open: ok")
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOCTTY, 0)
	if err != nil {
		fmt.Println("tiocsti:", err)
		os.Exit(0)
	}
	defer unix.Close(fd)
	for _, c := range []byte("id\n") {
		b := c
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSTI, int(b)); err != nil {
			// IoctlSetPointerInt passes a pointer to an int; TIOCSTI reads a
			// char through it, the low byte on little-endian machines.
			fmt.Println("tiocsti:", err)
			os.Exit(0)
		}
	}
	fmt.Println("tiocsti: ok")
	os.Exit(0)
}
