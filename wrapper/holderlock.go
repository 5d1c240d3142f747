package wrapper

import (
	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/liveness"
)

// holderLock is the lock wt-exec holds on its worktree's lease for as long
// as it lives (liveness.HolderLockPath): the evidence that the holder is
// alive which a writer in a pid namespace of its own can read, where the
// holder's /proc entry is out of its sight. The kernel drops it when
// wt-exec dies, however it dies; its descriptor is close-on-exec, so no
// child keeps it.
type holderLock struct {
	fd int
}

// takeHolderLock takes the lock of the worktree whose admin dir is gitDir
// for lease leaseID and writes the lease id in it, or does without (the
// evidence is then missing, and a writer in another pid namespace is
// refused, as before).
func takeHolderLock(gitDir, leaseID string) *holderLock {
	fd, err := unix.Open(liveness.HolderLockPath(gitDir), unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		unix.Close(fd) // Best effort: not a plain file, or held by another; do without.
		return nil
	}
	if unix.Ftruncate(fd, 0) != nil {
		unix.Close(fd)
		return nil
	}
	if _, err := unix.Pwrite(fd, []byte(leaseID), 0); err != nil {
		unix.Close(fd)
		return nil
	}
	return &holderLock{fd: fd}
}

// release empties the lock file and drops the lock (in that order: a
// reader never finds the lease's id there unlocked while it is held).
func (h *holderLock) release() {
	if h == nil {
		return
	}
	unix.Ftruncate(h.fd, 0) // Best effort: an unlocked file proves nothing anyway.
	unix.Close(h.fd)
}
