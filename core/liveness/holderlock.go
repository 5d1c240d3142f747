package liveness

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

// HolderLockPrefix names the lock files of leases in a worktree's admin
// dir (wt-holder-<lease id>).
const HolderLockPrefix = "wt-holder-"

// HolderLockPath is the file whose exclusive flock(2) wt-exec holds while
// it holds the lease leaseID of the worktree whose admin dir is gitDir.
func HolderLockPath(gitDir, leaseID string) string {
	return filepath.Join(gitDir, HolderLockPrefix+leaseID)
}

// HolderLocked reports whether the holder of lease leaseID holds its lock
// now: true only when the lock file exists and cannot be locked. A file
// that cannot be opened or tested is no proof of life.
func HolderLocked(gitDir, leaseID string) bool {
	fd, err := unix.Open(HolderLockPath(gitDir, leaseID), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	err = unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
	if err == nil {
		unix.Flock(fd, unix.LOCK_UN) // Best effort: closing drops it too.
		return false
	}
	return err == unix.EWOULDBLOCK
}
