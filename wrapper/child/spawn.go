package child

import (
	"errors"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/shell"
)

// start forks and execs the child in its own process group: with a pty as
// the leader of a new session on it, without one in a new group that takes
// over the terminal's foreground when wt-exec has it. The returned function
// restores the terminal.
func (p *Proc) start(path string, argv, env []string) (restore func(), err error) {
	restore = func() {}
	p.fgTTY = -1
	in, out := p.cfg.Stdin, p.cfg.Stdout
	usePTY := p.cfg.PTY == PTYOn || p.cfg.PTY == PTYAuto && isTerminal(in) && isTerminal(out)
	attr := &syscall.ProcAttr{Dir: p.cfg.Dir, Env: env}
	if !usePTY {
		attr.Files = []uintptr{in.Fd(), out.Fd(), p.cfg.Stderr.Fd()}
		// Setpgid: the child leads a new group, so signals reach all of it
		// with kill(-pid) and the terminal can be handed to it alone.
		attr.Sys = &syscall.SysProcAttr{Setpgid: true}
		pid, err := p.forkExec(path, argv, attr)
		if err != nil {
			return restore, execError(path, err)
		}
		p.pid = pid
		p.handTerminal(in)
		return restore, nil
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		return restore, decision.SayWrap(decision.Internal, err, "open-pty")
	}
	if isTerminal(in) {
		// The window size once at start; SIGWINCH copies it again later.
		_ = pty.InheritSize(in, ptmx) // Best effort: the pty keeps its default size.
		if isForeground(int(in.Fd())) {
			// Raw mode (cfmakeraw): keys, ^C included, go to the child's pty
			// as bytes, and its line discipline turns them into signals.
			old, err := term.MakeRaw(int(in.Fd()))
			if err == nil {
				p.setRaw(true)
				restore = func() {
					_ = term.Restore(int(in.Fd()), old) // Best effort: nothing else to do.
					p.setRaw(false)
				}
			}
		}
	}
	// stderr goes straight through when it is not a terminal (2>err.log,
	// a pipe to a logger): a pty has one output stream, which would mix
	// the command's errors into its screen output and leave err.log empty.
	errFd := tty.Fd()
	if !isTerminal(p.cfg.Stderr) {
		errFd = p.cfg.Stderr.Fd()
	}
	attr.Files = []uintptr{tty.Fd(), tty.Fd(), errFd}
	p.ownTTY = tty.Name()
	// Setsid + Setctty: the child leads a new session whose controlling
	// terminal is the pty (fd 0 in the child). Its group is its pid, so no
	// Setpgid, which would conflict with Setsid.
	attr.Sys = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	pid, err := p.forkExec(path, argv, attr)
	tty.Close() // Best effort: only the child needs its side now; EIO on ptmx then means every holder is gone.
	if err != nil {
		ptmx.Close() // Best effort: unused.
		restore()
		return func() {}, execError(path, err)
	}
	p.pid, p.ptmx = pid, ptmx
	p.outDone = make(chan struct{})
	go func() {
		_, _ = io.Copy(out, ptmx) // Ends with EIO when the last holder of the pty's other side is gone.
		close(p.outDone)
	}()
	go func() { _, _ = io.Copy(ptmx, in) }() // Best effort: ends with stdin or with the process.
	raw := restore
	return func() { raw(); ptmx.Close() }, nil
}

// handTerminal makes the child's group the foreground group of the terminal
// on stdin, if wt-exec holds it: the child can then read it and gets the
// keyboard's signals directly. This is tcsetpgrp done by the parent, not
// SysProcAttr.Foreground, which can hang (golang/go#37217).
func (p *Proc) handTerminal(in *os.File) {
	fd := int(in.Fd())
	if !isTerminal(in) || !isForeground(fd) {
		return
	}
	// From now on wt-exec is a background process of its terminal: without
	// ignoring SIGTTOU, giving the terminal back (tcsetpgrp) or a message
	// with TOSTOP set would stop it.
	signal.Ignore(unix.SIGTTOU)
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, p.pid); err != nil {
		return
	}
	p.fgTTY, p.ownPgrp = fd, unix.Getpgrp()
	// The child may have read the terminal before it was its foreground and
	// been stopped by SIGTTIN: continue it. A running group ignores SIGCONT.
	_ = unix.Kill(-p.pid, unix.SIGCONT) // Best effort: ESRCH means it is gone already.
}

// giveTerminalBack returns the terminal's foreground to wt-exec's group.
func (p *Proc) giveTerminalBack() {
	if p.fgTTY < 0 {
		return
	}
	_ = unix.IoctlSetPointerInt(p.fgTTY, unix.TIOCSPGRP, p.ownPgrp) // Best effort: the terminal may be gone (hangup).
	p.fgTTY = -1
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool { return isTerminal(f) }

// IsForeground reports whether this process's group is the terminal's
// foreground group.
func IsForeground(fd int) bool { return isForeground(fd) }

// isForeground reports whether this process's group is the terminal's
// foreground group.
func isForeground(fd int) bool {
	pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	return err == nil && pg == unix.Getpgrp()
}

// execError maps a failed exec to exit 127 (not found) or 126 (found but
// not runnable).
func execError(path string, err error) error {
	if errors.Is(err, unix.ENOENT) {
		return decision.SayWrap(decision.CommandNotFound, err, "as-given", path)
	}
	return decision.SayWrap(decision.CommandNotRunnable, err, "as-given", path).
		WithHint("check that %s is an executable file with a valid #! line", shell.Word(path))
}

// forkExec starts the child, in the command's cgroup when there is one
// (clone3 into it: the child is never outside). A kernel that refuses the
// cgroup gets the child without one, as before cgroups.
func (p *Proc) forkExec(path string, argv []string, attr *syscall.ProcAttr) (int, error) {
	fork := func() (int, error) { return syscall.ForkExec(path, argv, attr) }
	if conf := p.conf; conf != nil {
		terminals := p.ownTerminals(attr.Files)
		// Each attempt forks from a new thread confined for it alone.
		fork = func() (int, error) {
			return conf.Fork(terminals, path, argv, attr)
		}
	}
	if p.cg == nil {
		return fork()
	}
	attr.Sys.UseCgroupFD, attr.Sys.CgroupFD = true, p.cg.FD
	pid, err := fork()
	if err == nil || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOEXEC) {
		return pid, err
	}
	if p.cfg.Verbose {
		p.cfg.Notify("no cgroup for the command: the kernel refused to start it in " + p.cg.Path + ": " + err.Error())
	}
	p.DropCgroup()
	attr.Sys.UseCgroupFD, attr.Sys.CgroupFD = false, 0
	return fork()
}

// ownTerminals are the terminals the command's standard descriptors are
// (by their /dev/pts or /dev/tty* path), and its pty: the only ones a
// confined command may open for writing and use ioctls on.
func (p *Proc) ownTerminals(fds []uintptr) []string {
	var out []string
	if p.ownTTY != "" {
		out = append(out, p.ownTTY)
	}
	for _, fd := range fds {
		if !term.IsTerminal(int(fd)) {
			continue
		}
		dev, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(fd)))
		if err == nil && (strings.HasPrefix(dev, "/dev/pts/") || strings.HasPrefix(dev, "/dev/tty")) && !slices.Contains(out, dev) {
			out = append(out, dev)
		}
	}
	return out
}
