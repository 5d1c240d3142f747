// Package safefile reads the small files wt keeps, and git's admin files,
// so that nothing planted at their paths can hang, mislead or exhaust the
// reader: a FIFO or device is never opened for a blocking read (O_NONBLOCK,
// then fstat), anything but a regular file is refused, a file larger than
// the caller's limit is refused before it is read, and, where asked, a
// symlink at the last element is refused instead of followed (O_NOFOLLOW).
package safefile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Errors a caller may branch on. fs.ErrNotExist is returned for a missing
// file.
var (
	ErrNotRegular = errors.New("not a regular file (a FIFO, device, socket or directory)")
	ErrSymlink    = errors.New("a symlink where a file must be")
	ErrTooLarge   = errors.New("larger than any file wt writes there")
)

// Follow says whether a symlink at the last element is followed.
type Follow bool

// Symlink policies.
const (
	NoFollow Follow = false // wt's own store: a symlink is refused
	Follows  Follow = true  // git's admin files: git follows them too
)

// Open opens path for reading as a regular file (see the package doc) and
// returns it with its size. The caller closes it.
func Open(path string, follow Follow) (*os.File, int64, error) {
	fd, size, err := openRegular(path, follow)
	if err != nil {
		return nil, 0, err
	}
	return os.NewFile(uintptr(fd), path), size, nil
}

// openRegular is Open's descriptor.
func openRegular(path string, follow Follow) (int, int64, error) {
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC
	if follow == NoFollow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Open(path, flags, 0)
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
			return -1, 0, fs.ErrNotExist
		case errors.Is(err, unix.ELOOP) && follow == NoFollow:
			return -1, 0, ErrSymlink
		}
		return -1, 0, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd) // Best effort: already failing.
		return -1, 0, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd) // Best effort: already failing.
		return -1, 0, ErrNotRegular
	}
	return fd, st.Size, nil
}

// Read reads the whole of path, a regular file of at most limit bytes. It
// uses four system calls (open, fstat, read, close) for a file that does not
// grow while it is read: the buffer is one byte larger than the file, so a
// short read is the whole file. A file that grows past limit while it is
// read is refused too. It reads through the bare descriptor: an os.File
// would ask the descriptor's flags and offer it to the runtime's poller
// (which refuses a regular file) at every read.
func Read(path string, limit int64, follow Follow) ([]byte, error) {
	fd, size, err := openRegular(path, follow)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd) // Best effort: read only.
	if size > limit {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, size, limit)
	}
	buf := make([]byte, size+1)
	n := 0
	for {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		n += m
		if m == 0 || n < len(buf) {
			return buf[:n], nil
		}
		if int64(len(buf)) > limit {
			return nil, fmt.Errorf("%w: it grew past %d bytes while read", ErrTooLarge, limit)
		}
		buf = append(buf, make([]byte, len(buf))...) // it grew since fstat
	}
}

// SwapIn puts tmp in place of an existing file at path by swapping the
// two names (renameat2 RENAME_EXCHANGE) and removing tmp, which then names
// the old file; path names a whole file, old or new, at every moment, as
// with rename. It reports false, having changed nothing, where there is no
// regular file to swap with (rename then refuses a directory, as before)
// or the file system cannot swap. A rename over an existing file makes
// ext4 (auto_da_alloc) write the new file's data out at once, 0.15-0.5 ms
// here: a file that describes this boot's processes (a lease, a runtime
// file, the commit gate's pass) needs no such care. Temporary files are
// named with a leading dot or a .tmp suffix, which readers skip: one left
// by a crash between the swap and the removal is harmless.
func SwapIn(tmp, path string) bool {
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE); err != nil {
		return false
	}
	os.Remove(tmp) // Best effort: see above.
	return true
}

// Overwrite writes data over the regular file at path in place, with one
// pwrite at offset 0, and reports whether it did. It does so only where
// the file and data each fit in the first page: the kernel checks for a
// fatal signal between the pages of a write, not within one, so a process
// killed at any moment leaves the old bytes or the new, never a mix. Data
// shorter than the file is followed by spaces up to the file's length
// (white space after a JSON value, or after the first line, which is all
// a reader of these files reads), so no truncation is needed. Where it
// reports false (no such file, a larger one, a short write) nothing that
// the caller must undo happened but, for a short write, a mix of old and
// new bytes, which the caller's whole-file replacement then puts right.
// It is for files that describe processes of this boot (not fsynced), and
// only where a reader in the middle of a write, which may read a mix, is
// kept out (the store's records, under its lock) or is harmless (the
// commit gate's pass: see hooks.writePass). A file rewritten in place costs an open and
// a write, where a temporary file, a swap and a removal cost ten times
// that on ext4.
func Overwrite(path string, data []byte) bool {
	page := unix.Getpagesize()
	if len(data) > page {
		return false
	}
	// Nothing but a regular file is opened for writing (a device's open
	// may act), and it must still be the one opened.
	var lst, st unix.Stat_t
	if unix.Lstat(path, &lst) != nil || lst.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd) // Best effort: the data is in the page cache once written.
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Ino != lst.Ino || st.Dev != lst.Dev || st.Size > int64(page) {
		return false
	}
	if pad := int(st.Size) - len(data); pad > 0 {
		data = append(data[:len(data):len(data)], bytes.Repeat([]byte{' '}, pad)...)
	}
	n, err := unix.Pwrite(fd, data, 0)
	return err == nil && n == len(data)
}

// CreateTemp creates a new file in dir named prefix followed by a random
// number, as os.CreateTemp does (mode 0600, never an existing name, never
// through a symlink), and returns its bare descriptor and path: wt's
// writers write it whole and close it, and an os.File would ask the
// descriptor's flags and offer it to the runtime's poller first. The
// caller closes the descriptor.
func CreateTemp(dir, prefix string) (fd int, path string, err error) {
	for try := 0; try < 10000; try++ {
		path = filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10))
		fd, err = unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == unix.EEXIST {
			continue
		}
		if err != nil {
			return -1, "", &fs.PathError{Op: "createtemp", Path: path, Err: err}
		}
		return fd, path, nil
	}
	return -1, "", &fs.PathError{Op: "createtemp", Path: filepath.Join(dir, prefix+"*"), Err: fs.ErrExist}
}

// WriteAll writes data to fd, as many write(2) calls as it takes.
func WriteAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// Replace writes data as the whole file at path with mode: a temporary
// file beside it (CreateTemp: never through a symlink), written whole,
// then renamed over path, so a reader meets the old file or the new one.
// Not fsynced: for files that may be lost in a crash, never torn.
func Replace(path string, data []byte, mode os.FileMode) error {
	fd, tmp, err := CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	err = WriteAll(fd, data)
	if err == nil {
		err = unix.Fchmod(fd, uint32(mode.Perm()))
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp) // Best effort: already failing.
		return &fs.PathError{Op: "replace", Path: path, Err: err}
	}
	return nil
}
