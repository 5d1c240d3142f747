package gitrepo

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wt-tool/wt/core/gitrepo/reftable"
	"github.com/wt-tool/wt/core/safefile"
)

// ReflogEntry is one entry of a ref's reflog.
type ReflogEntry struct {
	Old, New, Msg string
	When          time.Time
}

// maxReflog bounds a reflog file wt reads whole (git appends a line of
// about 150 bytes per update).
const maxReflog = 256 << 20

// ReadReflog reads ref's reflog in the repository with common dir
// commonDir, oldest entry first, from logs/<ref> or the reftable stack. A
// ref without a reflog has no entries.
func ReadReflog(commonDir, ref string) ([]ReflogEntry, error) {
	if err := checkSharedRef(ref); err != nil {
		return nil, err
	}
	if Reftable(commonDir) {
		return readTableLog(commonDir, ref, 0)
	}
	return readLogFile(filepath.Join(commonDir, "logs", filepath.FromSlash(ref)), 0)
}

// ReflogMark is where a ref and its reflog stand at one moment: its value,
// and the reflog's length (files backend) or the stack's newest update
// index (reftable). Compared with a later mark, it tells whether the ref
// or its reflog changed in between without reading the reflog.
type ReflogMark struct {
	Ref string
	// Tip is the ref's value ("" when absent or unreadable).
	Tip    string
	size   int64
	update uint64
	// table is true in a reftable repository.
	table bool
}

// MarkReflog notes where ref and its reflog stand now: a ref read and a
// stat (or the stack's newest table header), whatever the reflog's length.
// What cannot be read marks as empty.
func MarkReflog(commonDir, ref string) ReflogMark {
	m := ReflogMark{Ref: ref}
	if Reftable(commonDir) {
		// The value and the index from one reading of the stack: read
		// apart, an update between them would be in the index and not in
		// the value.
		m.table = true
		if s, err := reftable.Open(filepath.Join(commonDir, "reftable")); err == nil {
			if checkSharedRef(ref) == nil {
				m.Tip, _ = tableRef(s, ref) // unreadable marks as unknown
			}
			m.update = s.MaxUpdateIndex()
			s.Close()
		}
		return m
	}
	m.Tip, _ = ReadRef(commonDir, ref) // unreadable marks as unknown
	if f, size, err := safefile.Open(filepath.Join(commonDir, "logs", filepath.FromSlash(ref)), safefile.NoFollow); err == nil {
		f.Close()
		m.size = size
	}
	return m
}

// Same reports whether nothing moved between mark m and a later mark n of
// the same ref: the same value and no reflog entry added or removed.
func (m ReflogMark) Same(n ReflogMark) bool {
	return m.Tip == n.Tip && m.size == n.size && m.update == n.update
}

// ReflogSince reads the reflog entries of m's ref added after m, oldest
// first. ok is false when the reflog lost entries meanwhile (expired or
// removed), and then what was added cannot be told from what was there.
func ReflogSince(commonDir string, m ReflogMark) (entries []ReflogEntry, ok bool, err error) {
	if m.table {
		entries, err = readTableLog(commonDir, m.Ref, m.update)
		return entries, err == nil, err
	}
	path := filepath.Join(commonDir, "logs", filepath.FromSlash(m.Ref))
	f, size, err := safefile.Open(path, safefile.NoFollow)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read reflog %s: %w", path, err)
	}
	defer f.Close() // Best effort: read only.
	if size < m.size {
		return nil, false, nil
	}
	entries, err = parseLog(f, path, size, m.size)
	return entries, err == nil, err
}

// readTableLog reads ref's reflog from the stack in dir/reftable, oldest
// first, keeping entries of update index above after.
func readTableLog(dir, ref string, after uint64) ([]ReflogEntry, error) {
	s, err := reftable.Open(filepath.Join(dir, "reftable"))
	if err != nil {
		return nil, err
	}
	defer s.Close()
	logs, err := s.Log(ref)
	if err != nil {
		return nil, err
	}
	var out []ReflogEntry
	for _, e := range slices.Backward(logs) {
		if e.UpdateIndex <= after {
			continue
		}
		out = append(out, ReflogEntry{Old: e.Old, New: e.New, Msg: strings.TrimSuffix(e.Message, "\n"), When: time.Unix(int64(e.Time), 0)})
	}
	return out, nil
}

// readLogFile parses a reflog file from byte offset on (a reflog only
// grows, until git expires it): "<old> <new> <name> <<email>> <unix>
// <tz>\t<message>" a line. A missing reflog has no entries.
func readLogFile(path string, offset int64) ([]ReflogEntry, error) {
	f, size, err := safefile.Open(path, safefile.NoFollow)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read reflog %s: %w", path, err)
	}
	defer f.Close() // Best effort: read only.
	return parseLog(f, path, size, offset)
}

// parseLog parses the open reflog f (of size bytes, at path) from byte
// offset on.
func parseLog(f *os.File, path string, size, offset int64) ([]ReflogEntry, error) {
	if size > maxReflog {
		return nil, fmt.Errorf("read reflog %s: %w", path, safefile.ErrTooLarge)
	}
	if _, err := f.Seek(offset, 0); err != nil {
		return nil, err
	}
	var out []ReflogEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		head, msg, _ := strings.Cut(sc.Text(), "\t")
		fl := strings.Fields(head)
		if len(fl) < 4 {
			continue
		}
		ts, err := strconv.ParseInt(fl[len(fl)-2], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, ReflogEntry{Old: fl[0], New: fl[1], Msg: msg, When: time.Unix(ts, 0)})
	}
	return out, sc.Err()
}
