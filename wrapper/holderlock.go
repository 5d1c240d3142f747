package wrapper

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/liveness"
)

// holderLock is the lock wt-exec holds on its lease for as long as it
// lives (liveness.HolderLockPath): the evidence that the holder is alive which
// a writer in a pid namespace of its own can read, where the holder's /proc
// entry is out of its sight. The kernel drops it when wt-exec dies, however
// it dies; its descriptor is close-on-exec, so no child keeps it.
type holderLock struct {
	path string
	fd   int
}

// takeHolderLock takes the lock of lease leaseID in the admin dir gitDir,
// or does without (the evidence is then missing, and a writer in another
// pid namespace is refused, as before).
func takeHolderLock(gitDir, leaseID string) *holderLock {
	p := liveness.HolderLockPath(gitDir, leaseID)
	fd, err := unix.Open(p, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil
	}
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		unix.Close(fd) // Best effort: held by someone else; do without.
		return nil
	}
	return &holderLock{path: p, fd: fd}
}

// release removes the lock file and drops the lock (in that order: a
// reader never finds the file unlocked while the lease is held).
func (h *holderLock) release() {
	if h == nil {
		return
	}
	os.Remove(h.path) // Best effort: a leftover file, unlocked, proves nothing.
	unix.Close(h.fd)
}

// sweepHolderLocks removes the lock files in gitDir that nobody holds:
// those of holders that died.
func sweepHolderLocks(gitDir string) {
	m, _ := filepath.Glob(filepath.Join(gitDir, liveness.HolderLockPrefix+"*"))
	for _, p := range m {
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
			os.Remove(p) // Best effort: stale.
		}
		unix.Close(fd)
	}
}
