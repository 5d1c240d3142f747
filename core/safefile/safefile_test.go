package safefile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// plant lays out, in a fresh directory, a regular file, a symlink to it,
// a dangling symlink, a FIFO, a directory and a Unix socket, and returns
// the directory.
func plant(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "file"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "fifo"), filepath.Join(dir, "fifolink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	sock, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sock)
	if err := unix.Bind(sock, &unix.SockaddrUnix{Name: filepath.Join(dir, "sock")}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReadDecidesByWhatIsAtThePath: Read returns a regular file's bytes,
// refuses a FIFO (without blocking: no writer ever opens it) and a
// directory as not regular, a symlink as a symlink where it must not
// follow, a socket with open's own error, and reports a missing file, or
// one under a file, as not existing.
func TestReadDecidesByWhatIsAtThePath(t *testing.T) {
	t.Parallel()
	dir := plant(t)
	for _, c := range []struct {
		name   string
		follow Follow
		want   string
		err    error
	}{
		{"file", NoFollow, "hello\n", nil},
		{"file", Follows, "hello\n", nil},
		{"link", Follows, "hello\n", nil},
		{"link", NoFollow, "", ErrSymlink},
		{"dangling", NoFollow, "", ErrSymlink},
		{"dangling", Follows, "", fs.ErrNotExist},
		{"fifo", NoFollow, "", ErrNotRegular},
		{"fifo", Follows, "", ErrNotRegular},
		{"fifolink", Follows, "", ErrNotRegular},
		{"fifolink", NoFollow, "", ErrSymlink},
		{"dir", NoFollow, "", ErrNotRegular},
		{"sock", NoFollow, "", unix.ENXIO}, // open(2) of a socket fails
		{"missing", NoFollow, "", fs.ErrNotExist},
		{"file/under", NoFollow, "", fs.ErrNotExist},
	} {
		got, err := Read(filepath.Join(dir, c.name), 100, c.follow)
		if c.err == nil {
			if err != nil || string(got) != c.want {
				t.Errorf("Read(%s, %v): %q, %v; want %q", c.name, c.follow, got, err, c.want)
			}
			continue
		}
		if !errors.Is(err, c.err) || got != nil {
			t.Errorf("Read(%s, %v): %q, %v; want %v", c.name, c.follow, got, err, c.err)
		}
	}
	// The refusals left everything as it was: the FIFO is still a FIFO.
	if fi, err := os.Lstat(filepath.Join(dir, "fifo")); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO after Read: %v %v", fi, err)
	}
}

// TestReadRefusesAFileLargerThanTheLimitBeforeReadingIt: a file of limit
// bytes is read whole; one byte more is ErrTooLarge, naming both sizes.
func TestReadRefusesAFileLargerThanTheLimitBeforeReadingIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	data := bytes.Repeat([]byte("x"), 64)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Read(p, 64, NoFollow)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Read at the limit: %d bytes, %v", len(got), err)
	}
	got, err = Read(p, 63, NoFollow)
	if !errors.Is(err, ErrTooLarge) || got != nil {
		t.Fatalf("Read past the limit: %d bytes, %v; want ErrTooLarge", len(got), err)
	}
	if !strings.Contains(err.Error(), "64 bytes, at most 63") {
		t.Errorf("the refusal does not name the sizes: %v", err)
	}
}

// TestReadOfAnEmptyFile: an empty regular file reads as no bytes, not an
// error.
func TestReadOfAnEmptyFile(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Read(p, 0, NoFollow)
	if err != nil || len(got) != 0 {
		t.Fatalf("Read(empty): %q, %v", got, err)
	}
}

// TestReadOfAFileThatGrowsPastTheLimit: /proc files report size 0 on
// fstat but have content; Read must grow its buffer for them, and refuse
// when what it reads passes the limit.
func TestReadOfAFileThatGrowsPastTheLimit(t *testing.T) {
	t.Parallel()
	// /proc/self/status is a regular file of size 0 that reads as more
	// than a hundred bytes.
	const p = "/proc/self/status"
	got, err := Read(p, 1<<16, Follows)
	if err != nil || !bytes.HasPrefix(got, []byte("Name:")) {
		t.Fatalf("Read(%s): %d bytes, %v", p, len(got), err)
	}
	got, err = Read(p, 8, Follows)
	if !errors.Is(err, ErrTooLarge) || got != nil {
		t.Fatalf("Read(%s, 8): %d bytes, %v; want ErrTooLarge as it grows", p, len(got), err)
	}
	if !strings.Contains(err.Error(), "grew past 8 bytes") {
		t.Errorf("the refusal does not say it grew: %v", err)
	}
}

// TestOpenReturnsTheFileAndItsSize: Open gives a readable *os.File and the
// size fstat reported, and applies Read's refusals.
func TestOpenReturnsTheFileAndItsSize(t *testing.T) {
	t.Parallel()
	dir := plant(t)
	f, size, err := Open(filepath.Join(dir, "link"), Follows)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if size != int64(len("hello\n")) {
		t.Errorf("size %d", size)
	}
	if b, err := io.ReadAll(f); err != nil || string(b) != "hello\n" {
		t.Errorf("read %q, %v", b, err)
	}
	for name, want := range map[string]error{
		"link":    ErrSymlink,
		"fifo":    ErrNotRegular,
		"dir":     ErrNotRegular,
		"missing": fs.ErrNotExist,
	} {
		f, size, err := Open(filepath.Join(dir, name), NoFollow)
		if !errors.Is(err, want) || f != nil || size != 0 {
			t.Errorf("Open(%s): %v, %d, %v; want %v", name, f, size, err, want)
		}
	}
}

// TestSwapInReplacesAnExistingRegularFile: the new bytes are at the path,
// the temporary name is gone, and the path's inode is the temporary
// file's.
func TestSwapInReplacesAnExistingRegularFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, tmp := filepath.Join(dir, "r.json"), filepath.Join(dir, ".r.json.tmp")
	mustWrite(t, p, "old\n")
	mustWrite(t, tmp, "new\n")
	var st unix.Stat_t
	if err := unix.Stat(tmp, &st); err != nil {
		t.Fatal(err)
	}
	if !SwapIn(tmp, p) {
		t.Fatal("SwapIn refused a regular file")
	}
	if got := mustRead(t, p); got != "new\n" {
		t.Errorf("after SwapIn the file reads %q", got)
	}
	var after unix.Stat_t
	if err := unix.Stat(p, &after); err != nil || after.Ino != st.Ino {
		t.Errorf("the path is not the temporary file's inode: %v", err)
	}
	if _, err := os.Lstat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the temporary file (the old one after the swap) is still there: %v", err)
	}
}

// TestSwapInRefusesWhereThereIsNoRegularFileToSwapWith: a missing path, a
// symlink, a directory or a FIFO is left as it was, and so is the
// temporary file, so the caller can rename instead.
func TestSwapInRefusesWhereThereIsNoRegularFileToSwapWith(t *testing.T) {
	t.Parallel()
	dir := plant(t)
	for _, name := range []string{"missing", "link", "dir", "fifo"} {
		tmp := filepath.Join(dir, ".tmp-"+name)
		mustWrite(t, tmp, "new\n")
		before, _ := os.Lstat(filepath.Join(dir, name))
		if SwapIn(tmp, filepath.Join(dir, name)) {
			t.Errorf("SwapIn over %s swapped", name)
			continue
		}
		if got := mustRead(t, tmp); got != "new\n" {
			t.Errorf("SwapIn over %s changed the temporary file: %q", name, got)
		}
		after, _ := os.Lstat(filepath.Join(dir, name))
		if (before == nil) != (after == nil) || before != nil && before.Mode() != after.Mode() {
			t.Errorf("SwapIn over %s changed it: %v -> %v", name, before, after)
		}
	}
	if got := mustRead(t, filepath.Join(dir, "file")); got != "hello\n" {
		t.Errorf("the symlink's target changed: %q", got)
	}
	// A missing temporary file: the exchange fails, the file stays.
	if SwapIn(filepath.Join(dir, "no-tmp"), filepath.Join(dir, "file")) {
		t.Error("SwapIn of a missing temporary file swapped")
	}
	if got := mustRead(t, filepath.Join(dir, "file")); got != "hello\n" {
		t.Errorf("a failed swap changed the file: %q", got)
	}
}

// TestCreateTempMakesANewPrivateFileNeverThroughASymlink: the file is new,
// mode 0600, named by the prefix, in dir; a missing directory is a
// PathError naming the attempted path.
func TestCreateTempMakesANewPrivateFileNeverThroughASymlink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fd, p, err := CreateTemp(dir, ".x.tmp-")
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteAll(fd, []byte("data")); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	if filepath.Dir(p) != dir || !strings.HasPrefix(filepath.Base(p), ".x.tmp-") {
		t.Errorf("path %s", p)
	}
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode() != 0o600 {
		t.Errorf("mode %v, %v; want a regular file of 0600", fi.Mode(), err)
	}
	if got := mustRead(t, p); got != "data" {
		t.Errorf("read %q", got)
	}
	// Two calls never return the same name.
	fd2, p2, err := CreateTemp(dir, ".x.tmp-")
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd2)
	if p2 == p {
		t.Errorf("CreateTemp returned %s twice", p)
	}

	_, _, err = CreateTemp(filepath.Join(dir, "missing"), "p")
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "createtemp" || !errors.Is(err, unix.ENOENT) {
		t.Errorf("CreateTemp in a missing directory: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the directory holds %d entries, want the 2 created", len(entries))
	}
}

// TestWriteAllWritesEveryByteThroughAPipe: data larger than a pipe's
// buffer takes several writes; every byte arrives in order.
func TestWriteAllWritesEveryByteThroughAPipe(t *testing.T) {
	t.Parallel()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r := os.NewFile(uintptr(p[0]), "r")
	defer r.Close()
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB, past a pipe's 64 KiB
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	err := WriteAll(p[1], data)
	unix.Close(p[1])
	if err != nil {
		t.Fatal(err)
	}
	if got := <-done; !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, want %d the same", len(got), len(data))
	}
	// A closed descriptor: the write's error.
	if err := WriteAll(p[1], []byte("x")); !errors.Is(err, unix.EBADF) {
		t.Errorf("WriteAll to a closed descriptor: %v, want EBADF", err)
	}
}

// TestReplaceWritesTheWholeFileWithItsMode: a new file and a replaced one
// read as the data with the mode asked, and no temporary file is left.
func TestReplaceWritesTheWholeFileWithItsMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "rec.json")
	if err := Replace(p, []byte("first\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, p); got != "first\n" {
		t.Errorf("read %q", got)
	}
	var before unix.Stat_t
	if err := unix.Stat(p, &before); err != nil {
		t.Fatal(err)
	}
	if err := Replace(p, []byte("second, longer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, p); got != "second, longer\n" {
		t.Errorf("read %q", got)
	}
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	var after unix.Stat_t
	if err := unix.Stat(p, &after); err != nil || after.Ino == before.Ino {
		t.Error("Replace wrote in place, not through a new file")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %v, want only the file", entries)
	}
}

// TestReplaceRefusals: a missing directory, and a directory at the path
// (rename refuses it), fail as a replace PathError; the directory is left
// as it was and no temporary file is left beside it.
func TestReplaceRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	err := Replace(filepath.Join(dir, "missing", "f"), []byte("x"), 0o644)
	var pe *fs.PathError
	if !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Replace in a missing directory: %v", err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(filepath.Join(sub, "inner"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(sub, "inner", "keep"), "kept")
	err = Replace(filepath.Join(sub, "inner"), []byte("x"), 0o644)
	if !errors.As(err, &pe) || pe.Op != "replace" || pe.Path != filepath.Join(sub, "inner") {
		t.Fatalf("Replace over a directory: %v; want a replace PathError", err)
	}
	if got := mustRead(t, filepath.Join(sub, "inner", "keep")); got != "kept" {
		t.Errorf("the directory's file reads %q", got)
	}
	if entries, _ := os.ReadDir(sub); len(entries) != 1 {
		t.Errorf("after the refusal %s holds %v, want only inner", sub, entries)
	}
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
