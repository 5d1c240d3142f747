package liveness

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

// HolderLockName is the file in a worktree's admin dir whose exclusive
// flock(2) wt-exec holds while it holds the worktree's lease, with the
// lease id written in it: one file per worktree (one holder at a time),
// taken and let go at every run without a file to make or remove.
const HolderLockName = "wt-holder"

// HolderLockPath is the holder lock of the worktree whose admin dir is
// gitDir.
func HolderLockPath(gitDir string) string { return filepath.Join(gitDir, HolderLockName) }

// HolderLocked reports whether the holder of lease leaseID holds its lock
// now: true only when the lock file names that lease and cannot be locked.
// A file that cannot be opened, read or tested is no proof of life.
func HolderLocked(gitDir, leaseID string) bool {
	fd, err := unix.Open(HolderLockPath(gitDir), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	buf := make([]byte, 64)
	n, err := unix.Pread(fd, buf, 0)
	if err != nil || string(buf[:n]) != leaseID {
		return false
	}
	err = unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
	if err == nil {
		unix.Flock(fd, unix.LOCK_UN) // Best effort: closing drops it too.
		return false
	}
	return err == unix.EWOULDBLOCK
}
