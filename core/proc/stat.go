package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Stat is the part of /proc/<pid>/stat that wt uses.
type Stat struct {
	PID        int
	Comm       string
	State      byte
	PPID       int
	PGRP       int
	Session    int
	StartTicks uint64 // field 22: clock ticks after boot at which the process started
}

// Running reports whether the process has not exited: a zombie (Z) or a
// dead (X) process has, even while its /proc entry remains.
func (st Stat) Running() bool { return st.State != 'Z' && st.State != 'X' }

// ErrNoProcess reports that a process does not exist (any more).
var ErrNoProcess = errors.New("no such process")

// ParseStat parses the content of /proc/<pid>/stat.
//
// The second field is the command name in parentheses, and the name itself may
// contain spaces and ')' characters, so the fixed fields are read after the
// last ')' in the line.
func ParseStat(b []byte) (Stat, error) {
	var st Stat
	open := -1
	for i, c := range b {
		if c == '(' {
			open = i
			break
		}
	}
	closing := -1
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' {
			closing = i
			break
		}
	}
	if open < 1 || closing < open {
		return st, fmt.Errorf("malformed stat: no command name")
	}
	pid, err := strconv.Atoi(string(trimSpace(b[:open])))
	if err != nil || pid < 1 {
		return st, fmt.Errorf("malformed stat: pid")
	}
	st.PID = pid
	st.Comm = string(b[open+1 : closing])

	// Fields after ") " start at field 3 (state). We need 3, 4, 5, 6 and 22.
	rest := b[closing+1:]
	field := 2
	i := 0
	for field < 22 {
		for i < len(rest) && rest[i] == ' ' {
			i++
		}
		if i >= len(rest) || rest[i] == '\n' {
			return st, fmt.Errorf("malformed stat: only %d fields", field)
		}
		start := i
		for i < len(rest) && rest[i] != ' ' && rest[i] != '\n' {
			i++
		}
		field++
		tok := rest[start:i]
		switch field {
		case 3:
			if len(tok) != 1 {
				return st, fmt.Errorf("malformed stat: state %q", tok)
			}
			st.State = tok[0]
		case 4:
			st.PPID, err = atoi(tok)
		case 5:
			st.PGRP, err = atoi(tok)
		case 6:
			st.Session, err = atoi(tok)
		case 22:
			var v uint64
			v, err = strconv.ParseUint(string(tok), 10, 64)
			st.StartTicks = v
		}
		if err != nil {
			return st, fmt.Errorf("malformed stat: field %d: %w", field, err)
		}
	}
	return st, nil
}

func atoi(tok []byte) (int, error) {
	n := 0
	neg := false
	if len(tok) > 0 && tok[0] == '-' {
		neg = true
		tok = tok[1:]
	}
	if len(tok) == 0 || len(tok) > 18 {
		return 0, fmt.Errorf("bad integer")
	}
	for _, c := range tok {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad integer")
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\n') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\n') {
		b = b[:len(b)-1]
	}
	return b
}

// Reader reads small /proc files into one reused buffer: open, read, close,
// three system calls a file (os.ReadFile makes about ten). A Reader is not safe
// for concurrent use; make one per goroutine.
type Reader struct {
	buf  []byte
	path []byte
	// walked is what the last HasAncestor read, a stat a hop.
	walked []Stat
}

// NewReader returns a Reader with a buffer large enough for any stat line.
func NewReader() *Reader { return &Reader{buf: make([]byte, 4096), path: make([]byte, 0, 64)} }

// procPath builds "/proc/<pid>/<name>\x00" in the reader's path buffer, so
// that opening it allocates nothing.
func (r *Reader) procPath(pid int, name string) []byte {
	r.path = append(r.path[:0], "/proc/"...)
	r.path = strconv.AppendInt(r.path, int64(pid), 10)
	r.path = append(r.path, '/')
	r.path = append(r.path, name...)
	return append(r.path, 0)
}

// openat opens a NUL-terminated path without converting it to a string.
func openat(path []byte) (int, error) {
	atFDCWD := unix.AT_FDCWD // a variable: the negative constant cannot convert to uintptr directly
	fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&path[0])),
		uintptr(unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW), 0, 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// readFile reads the whole of a /proc file (path NUL-terminated) into the
// reused buffer. The returned slice is valid until the next call.
//
// /proc files are generated whole on the first read of a seq_file, so a
// small file (stat) arrives in one read that does not fill the buffer: we stop
// there instead of paying a second read for the EOF. Three system calls: open,
// read, close. Large files (maps) are read until EOF.
func (r *Reader) readFile(path []byte, small bool) ([]byte, error) {
	fd, err := openat(path)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd) // Best effort: a read-only /proc fd.
	n := 0
	for {
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
		m, err := unix.Read(fd, r.buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		n += m
		if m == 0 || (small && n < len(r.buf)) {
			return r.buf[:n], nil
		}
	}
}

// Stat reads and parses /proc/<pid>/stat. A process that does not exist
// yields ErrNoProcess.
func (r *Reader) Stat(pid int) (Stat, error) {
	if pid < 1 {
		return Stat{}, ErrNoProcess
	}
	b, err := r.readFile(r.procPath(pid, "stat"), true)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
			return Stat{}, ErrNoProcess
		}
		return Stat{}, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	st, err := ParseStat(b)
	if err != nil {
		return Stat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

// ReadStat reads /proc/<pid>/stat with a fresh buffer.
func ReadStat(pid int) (Stat, error) { return NewReader().Stat(pid) }

// ReadFile reads the whole of a small kernel file (/proc, /sys) as a
// Reader does, open, read until the end, close, into a buffer of its own.
// os.ReadFile would also ask the descriptor's flags and register it with
// the runtime's poller (procfs and cgroupfs files can be polled), which
// then starts up for a process that polls nothing.
func ReadFile(path string) ([]byte, error) {
	r := Reader{buf: make([]byte, 512)}
	b, err := r.readFile(append([]byte(path), 0), false)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return b, nil
}
