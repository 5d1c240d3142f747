package child

import (
	"os"
	"os/signal"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DieBy ends this process by sig, as its child died: with the signal's
// default action restored, the process sends sig to itself, so the parent
// (a shell, a supervisor) sees a death by that signal and not an exit
// status of 128+N. A shell running wt-exec in a loop stops the loop at
// the first Ctrl-C only for a signal death: for an exit status it assumes
// the command handled the interrupt. If the signal does not end the
// process (it is one whose default is to be ignored), DieBy returns and
// the caller exits with the status.
//
// Go's own default for SIGQUIT (a goroutine dump) is not the kernel's,
// and signal.Reset would give Go's, so the disposition is set with
// rt_sigaction directly: SIG_DFL, no flags, no mask (the struct's layout
// beyond the handler does not matter when it is all zero).
//
// With toGroup (see wrapper.Result.ToGroup) the signal goes to wt-exec's whole
// process group instead, which the terminal would have signalled had it
// not been in raw mode: a shell that runs wt-exec sees the interrupt as
// its own, and stops a loop at the first Ctrl-C as it does for any
// command.
func DieBy(sig unix.Signal, toGroup bool) {
	if sig == 0 {
		return
	}
	signal.Reset(sig)
	var act [4]uintptr // sa_handler = SIG_DFL (0), sa_flags, sa_restorer, sa_mask
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act[0])), 0, 8, 0, 0)
	if errno != 0 {
		return
	}
	// The signal goes to this very thread, unblocked on it: the kernel
	// delivers it before the system call returns, and its default action
	// ends the whole process.
	runtime.LockOSThread()
	var set unix.Sigset_t
	set.Val[0] = 1 << (uint(sig) - 1)
	_ = unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil) // Best effort: Go leaves it unblocked.
	if toGroup {
		_ = unix.Kill(0, sig) // Best effort: this process is in the group and dies of it.
	}
	_ = unix.Tgkill(os.Getpid(), unix.Gettid(), sig)
	runtime.UnlockOSThread()
}
