// Package reftable reads git's reftable ref storage: the stack of tables
// under a repository's reftable/ directory (extensions.refStorage =
// reftable, git 2.45 and later), for the few lookups wt makes on paths
// where a git process per question would cost more than the answer (the
// commit gate reads a worktree's HEAD and one branch). It never writes:
// refs are git's to store.
//
// The format is git's Documentation/technical/reftable.adoc: a stack of
// immutable tables listed oldest first in tables.list; each table has a
// header, ref blocks (prefix-compressed records with restart points), an
// optional ref index, optional object blocks, zlib-deflated log blocks and
// a footer with a CRC. A reader takes a consistent snapshot by reading
// tables.list, then opening every table it names, and starting again if
// one of them is gone (a compaction replaced it).
//
// Only what wt asks is here: one ref by name (newest table first, a
// deletion record hides the older ones) and one ref's reflog. Object
// blocks are skipped. Anything malformed is an error, never an absence:
// an unreadable ref is not a missing one.
package reftable

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/zlib"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wt-tool/wt/core/safefile"
)

// ErrFormat is wrapped by every error about a table's content.
var ErrFormat = errors.New("reftable: malformed table")

// Value types of a ref record.
const (
	valDeletion = 0
	valOne      = 1
	valTwo      = 2
	valSymref   = 3
)

// Block types.
const (
	blockRef   = 'r'
	blockIndex = 'i'
	blockObj   = 'o'
	blockLog   = 'g'
)

// maxBlock bounds a block's length (the format's own limit).
const maxBlock = 1<<24 - 1

// Ref is one ref's value in a stack.
type Ref struct {
	// Name is the full ref name.
	Name string
	// Target is the ref a symbolic ref names ("" otherwise).
	Target string
	// OID is the object name in hex ("" for a symbolic ref).
	OID string
	// UpdateIndex is the transaction that last wrote the ref.
	UpdateIndex uint64
}

// LogEntry is one reflog entry.
type LogEntry struct {
	// UpdateIndex is the entry's transaction.
	UpdateIndex uint64
	// Old and New are the object names before and after, in hex.
	Old, New string
	// Name and Email are the committer's.
	Name, Email string
	// Time is seconds since the epoch; TZOffset minutes east of UTC.
	Time     uint64
	TZOffset int16
	// Message is the reflog message (git keeps it with its newline).
	Message string
}

// Stack is a consistent snapshot of one reftable directory: its tables,
// open, oldest first. Close releases them.
type Stack struct {
	tables []*table
}

// maxList bounds tables.list (a line per table; git compacts the stack
// to a handful).
const maxList = 1 << 20

// maxReloads bounds how often Open starts again when a table named in
// tables.list vanished before it was opened (a concurrent compaction).
const maxReloads = 32

// Open takes a snapshot of the stack in dir (a repository's or a linked
// worktree's reftable/ directory). A missing tables.list is an error
// (fs.ErrNotExist): every reftable directory git makes has one.
func Open(dir string) (*Stack, error) {
	for try := 0; ; try++ {
		names, err := readList(filepath.Join(dir, "tables.list"))
		if err != nil {
			return nil, err
		}
		s := &Stack{}
		var gone bool
		for _, n := range names {
			t, err := openTable(filepath.Join(dir, n))
			if errors.Is(err, fs.ErrNotExist) {
				gone = true
				break
			}
			if err != nil {
				s.Close()
				return nil, err
			}
			s.tables = append(s.tables, t)
		}
		if !gone {
			return s, nil
		}
		s.Close()
		if try == maxReloads {
			return nil, fmt.Errorf("reftable %s: tables keep vanishing while being opened", dir)
		}
	}
}

func readList(path string) ([]string, error) {
	b, err := safefile.Read(path, maxList, safefile.Follows)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range strings.Split(string(b), "\n") {
		if n == "" {
			continue
		}
		if strings.ContainsAny(n, "/\x00") || n == "." || n == ".." {
			return nil, fmt.Errorf("%w: %s names %q", ErrFormat, path, n)
		}
		names = append(names, n)
	}
	return names, nil
}

// Close closes the stack's tables.
func (s *Stack) Close() {
	for _, t := range s.tables {
		t.f.Close() // Best effort: read only.
	}
	s.tables = nil
}

// MaxUpdateIndex is the newest transaction in the stack (0 when empty): it
// grows with every ref update, so an unchanged value means no ref and no
// reflog changed.
func (s *Stack) MaxUpdateIndex() uint64 {
	if len(s.tables) == 0 {
		return 0
	}
	return s.tables[len(s.tables)-1].maxUpdate
}

// Ref looks name up, newest table first. ok is false when no table has it
// or the newest record of it is a deletion.
func (s *Stack) Ref(name string) (r Ref, ok bool, err error) {
	for i := len(s.tables) - 1; i >= 0; i-- {
		r, found, err := s.tables[i].ref(name)
		if err != nil {
			return Ref{}, false, fmt.Errorf("reftable %s: %w", s.tables[i].name, err)
		}
		if found {
			return r, r.OID != "" || r.Target != "", nil
		}
	}
	return Ref{}, false, nil
}

// Log returns ref's reflog entries, newest first, as the stack holds them
// now: the newest table's record of an update index wins, and a deletion
// record removes the entry.
func (s *Stack) Log(ref string) ([]LogEntry, error) {
	seen := map[uint64]bool{}
	var out []LogEntry
	for i := len(s.tables) - 1; i >= 0; i-- {
		var entries []LogEntry
		var dels []uint64
		err := s.tables[i].logs(ref, func(e LogEntry, deleted bool) {
			if deleted {
				dels = append(dels, e.UpdateIndex)
			} else {
				entries = append(entries, e)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("reftable %s: %w", s.tables[i].name, err)
		}
		for _, e := range entries {
			if seen[e.UpdateIndex] {
				continue
			}
			seen[e.UpdateIndex] = true
			// Both names null: git's marker that the reflog exists,
			// written when expiry emptied it; not an entry.
			if isNull(e.Old) && isNull(e.New) {
				continue
			}
			out = append(out, e)
		}
		for _, u := range dels {
			seen[u] = true
		}
	}
	// Newest first: tables were merged newest table first, and an older
	// table can hold newer entries of no ref (compaction keeps order per
	// table only), so sort by update index.
	sortLogs(out)
	return out, nil
}

func sortLogs(es []LogEntry) {
	slices.SortStableFunc(es, func(a, b LogEntry) int { return cmp.Compare(b.UpdateIndex, a.UpdateIndex) })
}

// table is one open reftable file.
type table struct {
	name       string
	f          *os.File
	size       int64
	version    byte
	headerLen  int
	blockSize  uint32
	minUpdate  uint64
	maxUpdate  uint64
	hashLen    int
	refIndex   uint64
	objOffset  uint64
	logOffset  uint64
	logIndex   uint64
	firstType  byte
	footerSize int64
}

func openTable(path string) (*table, error) {
	// As every file a writer of the repository can plant: a regular file,
	// never blocking on a FIFO put in its place.
	f, size, err := safefile.Open(path, safefile.Follows)
	if err != nil {
		return nil, err
	}
	t, err := readTable(f, path, size)
	if err != nil {
		f.Close()
		return nil, err
	}
	return t, nil
}

func readTable(f *os.File, path string, size int64) (*table, error) {
	t := &table{name: filepath.Base(path), f: f, size: size}
	var head [32]byte
	if _, err := f.ReadAt(head[:5], 0); err != nil {
		return nil, fmt.Errorf("%w: %s: header: %v", ErrFormat, path, err)
	}
	if string(head[:4]) != "REFT" {
		return nil, fmt.Errorf("%w: %s: bad magic", ErrFormat, path)
	}
	t.version = head[4]
	switch t.version {
	case 1:
		t.headerLen, t.footerSize = 24, 68
	case 2:
		t.headerLen, t.footerSize = 28, 72
	default:
		return nil, fmt.Errorf("%w: %s: version %d", ErrFormat, path, t.version)
	}
	if t.size < int64(t.headerLen)+t.footerSize {
		return nil, fmt.Errorf("%w: %s: %d bytes is too short", ErrFormat, path, t.size)
	}
	if _, err := f.ReadAt(head[:t.headerLen+1], 0); err != nil {
		return nil, fmt.Errorf("%w: %s: header: %v", ErrFormat, path, err)
	}
	footer := make([]byte, t.footerSize)
	if _, err := f.ReadAt(footer, t.size-t.footerSize); err != nil {
		return nil, fmt.Errorf("%w: %s: footer: %v", ErrFormat, path, err)
	}
	if !bytes.Equal(footer[:t.headerLen], head[:t.headerLen]) {
		return nil, fmt.Errorf("%w: %s: footer does not repeat the header", ErrFormat, path)
	}
	if crc32.ChecksumIEEE(footer[:len(footer)-4]) != binary.BigEndian.Uint32(footer[len(footer)-4:]) {
		return nil, fmt.Errorf("%w: %s: footer checksum", ErrFormat, path)
	}
	t.blockSize = be24(footer[5:])
	t.minUpdate = binary.BigEndian.Uint64(footer[8:])
	t.maxUpdate = binary.BigEndian.Uint64(footer[16:])
	t.hashLen = 20
	p := 24
	if t.version == 2 {
		switch string(footer[24:28]) {
		case "sha1":
		case "s256":
			t.hashLen = 32
		default:
			return nil, fmt.Errorf("%w: %s: hash id %q", ErrFormat, path, footer[24:28])
		}
		p = 28
	}
	t.refIndex = binary.BigEndian.Uint64(footer[p:])
	t.objOffset = binary.BigEndian.Uint64(footer[p+8:]) >> 5
	t.logOffset = binary.BigEndian.Uint64(footer[p+24:])
	t.logIndex = binary.BigEndian.Uint64(footer[p+32:])
	if t.size > int64(t.headerLen)+t.footerSize {
		t.firstType = head[t.headerLen]
	}
	return t, nil
}

func be24(b []byte) uint32 { return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]) }

// block is one decoded block: data holds the block from its start (for the
// first block, from the file's start, so that its restart offsets, which
// count the file header, apply as they are), records run from start to
// restartOff.
type block struct {
	typ        byte
	data       []byte
	start      int
	restartOff int
	// next is the file offset of the block after this one.
	next int64
}

// end is where the table's blocks end and the footer begins.
func (t *table) end() int64 { return t.size - t.footerSize }

// readBlock reads the block at off; want, when not 0, is the type the
// caller expects (another type ends the section: ok false).
func (t *table) readBlock(off int64, want byte) (b block, ok bool, err error) {
	if off >= t.end() {
		return block{}, false, nil
	}
	hdr := 0
	if off == 0 {
		hdr = t.headerLen
	}
	var h [4]byte
	if _, err := t.f.ReadAt(h[:], off+int64(hdr)); err != nil {
		return block{}, false, fmt.Errorf("%w: block at %d: %v", ErrFormat, off, err)
	}
	typ := h[0]
	switch typ {
	case blockRef, blockIndex, blockObj, blockLog:
	default:
		return block{}, false, fmt.Errorf("%w: block type %q at %d", ErrFormat, typ, off)
	}
	if want != 0 && typ != want {
		return block{}, false, nil
	}
	length := int64(be24(h[1:]))
	if length < int64(hdr)+4+2 || length > maxBlock {
		return block{}, false, fmt.Errorf("%w: block length %d at %d", ErrFormat, length, off)
	}
	b = block{typ: typ, start: hdr + 4}
	if typ == blockLog {
		if err := t.inflate(&b, off, hdr, length); err != nil {
			return block{}, false, err
		}
	} else {
		if off+length > t.end() {
			return block{}, false, fmt.Errorf("%w: block at %d runs past the footer", ErrFormat, off)
		}
		b.data = make([]byte, length)
		if _, err := t.f.ReadAt(b.data, off); err != nil {
			return block{}, false, fmt.Errorf("%w: block at %d: %v", ErrFormat, off, err)
		}
		full := length
		if t.blockSize != 0 && length < int64(t.blockSize) {
			// Aligned tables pad a block with NULs up to the block size;
			// a block that is not followed by padding is followed
			// directly by the next (git writes both).
			var nb [1]byte
			if off+length < t.end() {
				if _, err := t.f.ReadAt(nb[:], off+length); err == nil && nb[0] == 0 {
					full = int64(t.blockSize)
				}
			}
		}
		b.next = off + full
	}
	n := len(b.data)
	restarts := int(binary.BigEndian.Uint16(b.data[n-2:]))
	b.restartOff = n - 2 - 3*restarts
	if restarts == 0 || b.restartOff < b.start {
		return block{}, false, fmt.Errorf("%w: block at %d: %d restart points", ErrFormat, off, restarts)
	}
	return b, true, nil
}

// inflate reads a log block: its 4-byte header is stored as it is, the
// rest deflated; length is the inflated length, header included.
func (t *table) inflate(b *block, off int64, hdr int, length int64) error {
	// zlib reads through a bufio.Reader (an io.ByteReader: flate then
	// takes no byte past the stream's end from it).
	src := io.NewSectionReader(t.f, off+int64(hdr)+4, t.end()-off-int64(hdr)-4)
	br := bufio.NewReader(src)
	zr, err := zlib.NewReader(br)
	if err != nil {
		return fmt.Errorf("%w: log block at %d: %v", ErrFormat, off, err)
	}
	// The first block's length counts the file header, and its offsets
	// are file-relative, as for refs: keep room for the header in front.
	b.data = make([]byte, length)
	if _, err := t.f.ReadAt(b.data[hdr:hdr+4], off+int64(hdr)); err != nil {
		return fmt.Errorf("%w: log block at %d: %v", ErrFormat, off, err)
	}
	if _, err := io.ReadFull(zr, b.data[hdr+4:]); err != nil {
		return fmt.Errorf("%w: log block at %d: %v", ErrFormat, off, err)
	}
	// The block ends where the deflate stream does: read it to its end
	// (its checksum) and count what it took.
	var one [1]byte
	if n, err := zr.Read(one[:]); n != 0 || err != io.EOF {
		return fmt.Errorf("%w: log block at %d is longer than it says", ErrFormat, off)
	}
	read, _ := src.Seek(0, io.SeekCurrent) // a SectionReader's Seek cannot fail here
	b.next = off + int64(hdr) + 4 + read - int64(br.Buffered())
	return nil
}

// varint decodes the format's varint (pack files' offset encoding).
func varint(b []byte, p *int) (uint64, error) {
	if *p >= len(b) {
		return 0, ErrFormat
	}
	c := b[*p]
	*p++
	v := uint64(c & 0x7f)
	for c&0x80 != 0 {
		v++
		if v == 0 || v&0xfe00000000000000 != 0 {
			return 0, ErrFormat
		}
		if *p >= len(b) {
			return 0, ErrFormat
		}
		c = b[*p]
		*p++
		v = v<<7 | uint64(c&0x7f)
	}
	return v, nil
}

// record is one decoded record's key and where its value starts.
type record struct {
	key   []byte
	extra byte // the low 3 bits of the suffix-length field
	val   int  // offset of the value in the block's data
}

// records calls fn with each record of b in order, until fn returns false.
// fn must advance p past the value of a record of the block's type.
func (t *table) records(b block, fn func(r record, p *int) (bool, error)) error {
	var key []byte
	p := b.start
	for p < b.restartOff {
		prefix, err := varint(b.data, &p)
		if err != nil {
			return err
		}
		sx, err := varint(b.data, &p)
		if err != nil {
			return err
		}
		suffix := sx >> 3
		if prefix > uint64(len(key)) || suffix > uint64(b.restartOff-p) {
			return fmt.Errorf("%w: record key", ErrFormat)
		}
		key = append(key[:prefix], b.data[p:p+int(suffix)]...)
		p += int(suffix)
		more, err := fn(record{key: key, extra: byte(sx & 7), val: p}, &p)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// skipValue advances p past a record's value of block type typ.
func (t *table) skipValue(typ byte, r record, data []byte, p *int) error {
	switch typ {
	case blockRef:
		if _, err := varint(data, p); err != nil {
			return err
		}
		switch r.extra {
		case valDeletion:
		case valOne:
			*p += t.hashLen
		case valTwo:
			*p += 2 * t.hashLen
		case valSymref:
			n, err := varint(data, p)
			if err != nil {
				return err
			}
			*p += int(n)
		default:
			return fmt.Errorf("%w: ref value type %d", ErrFormat, r.extra)
		}
	case blockIndex:
		if _, err := varint(data, p); err != nil {
			return err
		}
	case blockLog:
		if r.extra == 0 {
			return nil
		}
		*p += 2 * t.hashLen
		for i := 0; i < 2; i++ { // name, email
			n, err := varint(data, p)
			if err != nil {
				return err
			}
			*p += int(n)
		}
		if _, err := varint(data, p); err != nil {
			return err
		}
		*p += 2
		n, err := varint(data, p)
		if err != nil {
			return err
		}
		*p += int(n)
	default:
		return fmt.Errorf("%w: records of block type %q", ErrFormat, typ)
	}
	if *p > len(data) {
		return fmt.Errorf("%w: record value runs past its block", ErrFormat)
	}
	return nil
}

// seek finds the block of section typ (blockRef or blockLog) that may hold
// key: through the section's index when it has one, else by walking its
// blocks, keeping the last whose first key is not after key. ok is false
// when the table has no such section.
func (t *table) seek(typ byte, key []byte) (block, bool, error) {
	start, index := int64(0), t.refIndex
	if typ == blockLog {
		start, index = int64(t.logOffset), t.logIndex
		if t.logOffset == 0 && t.firstType != blockLog {
			return block{}, false, nil
		}
	} else if t.firstType != blockRef {
		return block{}, false, nil
	}
	if index != 0 {
		return t.seekIndexed(int64(index), typ, key)
	}
	cur, ok, err := t.readBlock(start, typ)
	if err != nil || !ok {
		return block{}, false, err
	}
	for {
		next, ok, err := t.readBlock(cur.next, typ)
		if err != nil {
			return block{}, false, err
		}
		if !ok {
			return cur, true, nil
		}
		first, err := t.firstKey(next)
		if err != nil {
			return block{}, false, err
		}
		if bytes.Compare(first, key) > 0 {
			return cur, true, nil
		}
		cur = next
	}
}

func (t *table) firstKey(b block) ([]byte, error) {
	var first []byte
	err := t.records(b, func(r record, _ *int) (bool, error) {
		first = append([]byte(nil), r.key...)
		return false, nil
	})
	if err == nil && first == nil {
		err = fmt.Errorf("%w: empty block", ErrFormat)
	}
	return first, err
}

// seekIndexed walks the index down from its root at off: in each index
// block the first record whose key (the last key of the block it points
// at) is not before key names the next block.
func (t *table) seekIndexed(off int64, typ byte, key []byte) (block, bool, error) {
	b, ok, err := t.readBlock(off, blockIndex)
	if err == nil && !ok {
		err = fmt.Errorf("%w: no index block at %d", ErrFormat, off)
	}
	if err != nil {
		return block{}, false, err
	}
	for depth := 0; depth < 64; depth++ {
		var next int64 = -1
		err = t.records(b, func(r record, p *int) (bool, error) {
			pos, err := varint(b.data, p)
			if err != nil {
				return false, err
			}
			if bytes.Compare(r.key, key) >= 0 {
				next = int64(pos)
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			return block{}, false, err
		}
		if next < 0 {
			// The top level may span several index blocks, one after
			// the other at the section's end: go on to the next one.
			nb, ok, err := t.readBlock(b.next, blockIndex)
			if err != nil || !ok {
				return block{}, false, err // !ok: after every key the table has
			}
			b = nb
			continue
		}
		if b, ok, err = t.readBlock(next, 0); err != nil {
			return block{}, false, err
		}
		if !ok {
			return block{}, false, fmt.Errorf("%w: index points past the table", ErrFormat)
		}
		if b.typ == typ {
			return b, true, nil
		}
		if b.typ != blockIndex {
			return block{}, false, fmt.Errorf("%w: index points at a block of type %q", ErrFormat, b.typ)
		}
	}
	return block{}, false, fmt.Errorf("%w: index too deep", ErrFormat)
}

// ref finds name in this table. found is true when the table has a record
// of it (a deletion included: Ref's OID and Target are then empty).
func (t *table) ref(name string) (Ref, bool, error) {
	key := []byte(name)
	b, ok, err := t.seek(blockRef, key)
	if err != nil || !ok {
		return Ref{}, false, err
	}
	var out Ref
	var found bool
	err = t.records(b, func(r record, p *int) (bool, error) {
		c := bytes.Compare(r.key, key)
		if c > 0 {
			return false, nil
		}
		if c < 0 {
			return true, t.skipValue(blockRef, r, b.data, p)
		}
		found = true
		out, err = t.decodeRef(r, b.data, p)
		return false, err
	})
	return out, found, err
}

func (t *table) decodeRef(r record, data []byte, p *int) (Ref, error) {
	delta, err := varint(data, p)
	if err != nil {
		return Ref{}, err
	}
	out := Ref{Name: string(r.key), UpdateIndex: t.minUpdate + delta}
	switch r.extra {
	case valDeletion:
	case valOne, valTwo:
		if *p+t.hashLen > len(data) {
			return Ref{}, fmt.Errorf("%w: ref value", ErrFormat)
		}
		out.OID = hex.EncodeToString(data[*p : *p+t.hashLen])
	case valSymref:
		n, err := varint(data, p)
		if err != nil {
			return Ref{}, err
		}
		if *p+int(n) > len(data) || n == 0 {
			return Ref{}, fmt.Errorf("%w: symref value", ErrFormat)
		}
		out.Target = string(data[*p : *p+int(n)])
	default:
		return Ref{}, fmt.Errorf("%w: ref value type %d", ErrFormat, r.extra)
	}
	return out, nil
}

// logs calls fn with each log record of ref in this table, newest first.
func (t *table) logs(ref string, fn func(e LogEntry, deleted bool)) error {
	prefix := append([]byte(ref), 0)
	b, ok, err := t.seek(blockLog, prefix)
	if err != nil || !ok {
		return err
	}
	for {
		done := false
		err := t.records(b, func(r record, p *int) (bool, error) {
			if bytes.Compare(r.key, prefix) < 0 {
				return true, t.skipValue(blockLog, r, b.data, p)
			}
			if !bytes.HasPrefix(r.key, prefix) {
				done = true
				return false, nil
			}
			if len(r.key) != len(prefix)+8 {
				return false, fmt.Errorf("%w: log key", ErrFormat)
			}
			e := LogEntry{UpdateIndex: ^binary.BigEndian.Uint64(r.key[len(prefix):])}
			if r.extra == 0 {
				fn(e, true)
				return true, nil
			}
			if r.extra != 1 {
				return false, fmt.Errorf("%w: log type %d", ErrFormat, r.extra)
			}
			if err := t.decodeLog(&e, b.data, p); err != nil {
				return false, err
			}
			fn(e, false)
			return true, nil
		})
		if err != nil || done {
			return err
		}
		next, ok, err := t.readBlock(b.next, blockLog)
		if err != nil || !ok {
			return err
		}
		b = next
	}
}

func (t *table) decodeLog(e *LogEntry, data []byte, p *int) error {
	if *p+2*t.hashLen > len(data) {
		return fmt.Errorf("%w: log value", ErrFormat)
	}
	e.Old = hex.EncodeToString(data[*p : *p+t.hashLen])
	e.New = hex.EncodeToString(data[*p+t.hashLen : *p+2*t.hashLen])
	*p += 2 * t.hashLen
	str := func() (string, error) {
		n, err := varint(data, p)
		if err != nil {
			return "", err
		}
		if *p+int(n) > len(data) {
			return "", fmt.Errorf("%w: log string", ErrFormat)
		}
		s := string(data[*p : *p+int(n)])
		*p += int(n)
		return s, nil
	}
	var err error
	if e.Name, err = str(); err != nil {
		return err
	}
	if e.Email, err = str(); err != nil {
		return err
	}
	if e.Time, err = varint(data, p); err != nil {
		return err
	}
	if *p+2 > len(data) {
		return fmt.Errorf("%w: log time zone", ErrFormat)
	}
	e.TZOffset = int16(binary.BigEndian.Uint16(data[*p:]))
	*p += 2
	e.Message, err = str()
	return err
}

func isNull(oid string) bool { return strings.Trim(oid, "0") == "" }
