package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/strictjson"
)

// Directory and file names under <common-dir>/wt.
const (
	DirName          = "wt"
	lockName         = "lock"
	repositoryName   = "repository.json"
	policyName       = "policy.json"
	allocationsDir   = "allocations"
	bindingsDir      = "bindings"
	registrationsDir = "registrations"
	leasesDir        = "leases"
	runtimeDir       = "runtime"
	handoffsDir      = "handoffs"
	waitersDir       = "waiters"
	journalDir       = "journal"
	receiptsDir      = "receipts"
	eventsName       = "events.jsonl"
	// MarkerName is the registration marker inside git's admin dir.
	MarkerName = "wt-registration"
)

// WaitersDir is the line of wt-exec --wait runs for the worktree key in
// the store at root: a ticket file a waiter, held under flock.
func WaitersDir(root, key string) string { return filepath.Join(root, waitersDir, key) }

// LandersDir is the line of wt-admin land runs waiting for the
// publication lease in the store at root: a ticket file a lander, held
// under flock (core/waitline); they watch the store's root, where the
// lease (publication.json) is.
func LandersDir(root string) string { return filepath.Join(root, "landers") }

// LeasesDir is the directory of the lease files in the store at root,
// which a waiter watches.
func LeasesDir(root string) string { return filepath.Join(root, leasesDir) }

var subdirs = []string{allocationsDir, bindingsDir, registrationsDir, leasesDir, journalDir, receiptsDir}

// Store is the state of one repository. It holds no open files between calls.
type Store struct {
	commonDir string
	root      string
	// ctx ends a wait for the lock (see WithContext).
	ctx context.Context
	// wait bounds a wait for the lock (0: $WT_LOCK_WAIT or
	// DefaultLockWait; see WithLockWait).
	wait time.Duration
}

// WithLockWait returns the store with waits for its lock bounded by d
// instead of the default: a lease's release waits longer than a command
// would, since giving up leaves the lease to be ended by the next one.
func (s *Store) WithLockWait(d time.Duration) *Store {
	c := *s
	c.wait = d
	return &c
}

// WithContext returns the store with ctx bounding every wait for its lock:
// when ctx ends (wt-exec cancels it at a signal that arrives before its
// command starts), the wait ends with INTERRUPTED and nothing is done.
func (s *Store) WithContext(ctx context.Context) *Store {
	c := *s
	c.ctx = ctx
	return &c
}

// ErrNotFound is returned (wrapped) when a record does not exist.
var ErrNotFound = errors.New("not found")

// Root is the store directory for a common dir.
func Root(commonDir string) string { return filepath.Join(commonDir, DirName) }

// Open opens an existing store. A missing store is NOT_INITIALIZED; a store
// directory, subdirectory or lock file that is a symlink or of the wrong type
// is INVALID_METADATA. It reads no record.
func Open(commonDir string) (*Store, error) {
	s := &Store{commonDir: commonDir, root: Root(commonDir)}
	fi, err := os.Lstat(s.root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, decision.Say(decision.NotInitialized, "wt-not").
			WithHint("run wt-admin init")
	}
	if err != nil {
		return nil, invalid(s.root, err)
	}
	if !fi.IsDir() {
		return nil, invalid(s.root, errors.New("not a directory (a symlink?)"))
	}
	if err := s.checkLockFile(); err != nil {
		return nil, err
	}
	for _, d := range subdirs {
		p := filepath.Join(s.root, d)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, invalid(p, err)
		}
		if !fi.IsDir() {
			return nil, invalid(p, errors.New("not a directory (a symlink?)"))
		}
	}
	return s, nil
}

func (s *Store) checkLockFile() error {
	p := filepath.Join(s.root, lockName)
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return invalid(p, errors.New("the store lock is missing")).
			WithHint("the store is damaged; recreate the empty file with: touch %s", shell.Word(p))
	}
	if err != nil {
		return invalid(p, err)
	}
	if !fi.Mode().IsRegular() {
		return invalid(p, errors.New("the store lock is not a regular file (a symlink?)"))
	}
	return nil
}

// Create makes the store directories and lock file where missing and opens
// the store. It writes no record; existing files are left as they are.
func Create(commonDir string) (*Store, error) {
	root := Root(commonDir)
	if err := mkdirNoFollow(root); err != nil {
		return nil, err
	}
	for _, d := range append(subdirs, runtimeDir) {
		if err := mkdirNoFollow(filepath.Join(root, d)); err != nil {
			return nil, err
		}
	}
	lp := filepath.Join(root, lockName)
	fd, err := unix.Open(lp, unix.O_RDONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, invalid(lp, err)
	}
	unix.Close(fd) // Best effort: only created, never written.
	if err := syncDir(root); err != nil {
		return nil, err
	}
	return Open(commonDir)
}

func mkdirNoFollow(p string) error {
	err := os.Mkdir(p, 0o755)
	if err == nil || errors.Is(err, fs.ErrExist) {
		fi, lerr := os.Lstat(p)
		if lerr != nil {
			return invalid(p, lerr)
		}
		if !fi.IsDir() {
			return invalid(p, errors.New("not a directory (a symlink?)"))
		}
		return nil
	}
	return invalid(p, err)
}

// CommonDir is the git common dir the store lives in.
func (s *Store) CommonDir() string { return s.commonDir }

// Root is the store directory.
func (s *Store) Root() string { return s.root }

// Read runs fn under the shared lock.
func (s *Store) Read(fn func(*Tx) error) error { return s.with(false, fn) }

// Write runs fn under the exclusive lock. fn is the whole read-modify-write.
func (s *Store) Write(fn func(*Tx) error) error { return s.with(true, fn) }

// ConfinedEnv marks the environment of a command wt-exec confined: its
// view of the repository, wt's store included, is its own, so a write of
// the store there would change nothing anyone else reads. It is refused
// instead (STORE_NOT_WRITABLE); wt-exec passes on the store changes a
// confined agent may ask for (wt-admin lease handoff and transfer).
const ConfinedEnv = "WT_CONFINED"

// BrokerEnv names, in a confined command's environment, the socket of the
// wt-exec that runs it, which makes those changes on its behalf.
const BrokerEnv = "WT_EXEC_BROKER"

// RefusalsEnv names, in a confined command's environment, the file in its
// private TMPDIR (RefusalsName, made empty by wt-exec) where wt's hooks
// note the code of each refusal they make in the run, so that the run's
// end can say what was refused, with counts. Only an existing regular
// file of that name, the caller's own, is written.
const RefusalsEnv = "WT_RUN_REFUSALS"

// RefusalsName is the base name of the file RefusalsEnv names.
const RefusalsName = ".wt-refusals"

func (s *Store) with(exclusive bool, fn func(*Tx) error) error {
	if exclusive && os.Getenv(ConfinedEnv) != "" {
		top := s.commonDir
		if filepath.Base(top) == ".git" {
			top = filepath.Dir(top)
		}
		return decision.Say(decision.StoreNotWritable, "wt-store").
			WithHint("run it outside the run, e.g. wt-admin --repo %s status; the run's own lease handoff and transfer go through wt-exec", shell.Word(top))
	}
	if err := s.checkLockFile(); err != nil {
		return err
	}
	lp := filepath.Join(s.root, lockName)
	fd, err := unix.Open(lp, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return invalid(lp, fmt.Errorf("lock: open: %w", err))
	}
	defer unix.Close(fd) // Best effort: closing the fd drops the lock.
	ctx := s.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	if err := lock(ctx, fd, lp, exclusive, s.wait); err != nil {
		return err
	}
	// The lock is only worth something on the file that is really there: a
	// swap between our check and our open would leave us locking another
	// inode (or a FIFO put there, which the open did not block on only
	// because checkLockFile saw a regular file a moment before).
	var held, now unix.Stat_t
	err1 := unix.Fstat(fd, &held)
	err2 := unix.Lstat(lp, &now)
	if err1 != nil || err2 != nil || held.Mode&unix.S_IFMT != unix.S_IFREG || held.Dev != now.Dev || held.Ino != now.Ino {
		return invalid(lp, errors.New("the store lock changed while it was taken"))
	}
	tx := &Tx{s: s, exclusive: exclusive}
	err = fn(tx)
	if cerr := tx.closeEvents(); err == nil {
		err = cerr
	}
	return err
}

// Tx is access to the store under its lock. It is valid only inside the
// function passed to Read or Write.
type Tx struct {
	s         *Store
	exclusive bool
	// durable is set once the section made a durable write; its events are
	// then fsynced before the lock is dropped.
	durable bool
	// events is events.jsonl, opened by the section's first AppendEvent.
	// events is events.jsonl opened for the section's appends (eventsOpen),
	// a bare descriptor: one write(2) a line, nothing of os.File's poller.
	events     int
	eventsOpen bool
	// records are the allocation records this section has read: under the
	// lock only the section itself writes them (PutAllocation forgets its
	// own), so a second look (PutAllocationRuntime's) reads no file again.
	records map[string]Allocation
}

func (tx *Tx) path(parts ...string) string {
	return filepath.Join(append([]string{tx.s.root}, parts...)...)
}

// readRecord strictly reads a record. ok is false when the file is absent.
func readRecord(path string, rec Record) (ok bool, err error) {
	data, ok, err := readRecordFile(path)
	if err != nil || !ok {
		return false, err
	}
	if err := decodeStrict(data, rec); err != nil {
		return false, invalid(path, err)
	}
	return true, nil
}

// readRecordFile reads a record file's bytes: ok is false when it is
// absent, and any other failure to read it is INVALID_METADATA.
func readRecordFile(path string) (data []byte, ok bool, err error) {
	data, err = readNoFollow(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, invalid(path, err)
	}
	return data, true, nil
}

// MaxRecord is the largest record file wt reads (records are a few KiB): a
// larger one, a sparse 1 TiB policy.json say, is INVALID_METADATA before a
// byte of it is read.
const MaxRecord = 1 << 20

// readNoFollow reads a record file: a regular file of at most MaxRecord
// bytes, never through a symlink at its last element, never blocking on a
// FIFO planted there (see core/safefile).
func readNoFollow(path string) ([]byte, error) {
	return safefile.Read(path, MaxRecord, safefile.NoFollow)
}

func (tx *Tx) mustWrite() {
	if !tx.exclusive {
		panic("store: write inside Read")
	}
}

// Durability of a write (see the package doc).
type durability int

const (
	durable    durability = iota // data and directory fsynced
	dataOnly                     // data fsynced, directory not (the caller syncs it)
	bootScoped                   // nothing fsynced: a file about this boot's processes
)

// put writes rec at path atomically with its record_version incremented.
func (tx *Tx) put(path string, rec Record, d durability) error {
	tx.mustWrite()
	if d == durable {
		tx.durable = true
	}
	m := rec.meta()
	m.SchemaVersion = SchemaVersion
	m.RecordVersion++
	data, err := strictjson.MarshalIndent(rec)
	if err != nil {
		return err
	}
	return writeAtomic(path, append(data, '\n'), d)
}

func (tx *Tx) remove(path string, d durability) error {
	tx.mustWrite()
	err := os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	if d != durable {
		return nil
	}
	tx.durable = true
	return syncDir(filepath.Dir(path))
}

// list returns the ids of *.json files in a store directory, sorted. Temp
// files (leading dot) are skipped.
func (tx *Tx) list(dir string) ([]string, error) {
	ents, err := os.ReadDir(tx.path(dir))
	if err != nil {
		return nil, invalid(tx.path(dir), err)
	}
	var ids []string
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".json") {
			continue
		}
		ids = append(ids, strings.TrimSuffix(n, ".json"))
	}
	sort.Strings(ids)
	return ids, nil
}

// writeAtomic writes data to path: temp file in the same directory, fsync
// (but for a boot-scoped write), rename over path, and for a durable write
// fsync the directory. rename
// never follows a symlink at path: it replaces the link itself.
//
// A boot-scoped file that exists already is rewritten in place where it
// can be (safefile.Overwrite: one write of at most a page, which a killed
// process leaves whole or undone, padded with spaces to the old length).
// Its readers take the store's lock, as its writers do.
func writeAtomic(path string, data []byte, d durability) error {
	if d == bootScoped && safefile.Overwrite(path, data) {
		return nil
	}
	dir := filepath.Dir(path)
	fd, tmp, err := safefile.CreateTemp(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return notWritable(path, fmt.Errorf("write %s: %w", path, err))
	}
	ok, closed := false, false
	defer func() {
		if !closed {
			unix.Close(fd) // Best effort: already failing.
		}
		if !ok {
			os.Remove(tmp) // Best effort: a leftover temp file is skipped by readers.
		}
	}()
	if err := unix.Fchmod(fd, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := safefile.WriteAll(fd, data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d != bootScoped {
		if err := unix.Fsync(fd); err != nil {
			return fmt.Errorf("fsync %s: %w", path, err)
		}
	}
	closed = true
	if err := unix.Close(fd); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d == bootScoped && safefile.SwapIn(tmp, path) {
		ok = true
		return nil
	}
	if err := os.Rename(tmp, path); err != nil {
		return notWritable(path, fmt.Errorf("rename %s: %w", path, err))
	}
	ok = true
	if d != durable {
		return nil
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	defer d.Close() // Best effort: read-only directory handle.
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}

// CheckVersion refuses with RECORD_VERSION_CONFLICT when expect is set and
// differs from the record's version.
func CheckVersion(what string, rec Record, expect *int) error {
	if expect == nil || *expect == rec.meta().RecordVersion {
		return nil
	}
	return decision.Say(decision.RecordVersionConflict, "record-version", what, rec.meta().RecordVersion, *expect).
		WithHint("read it again with wt-admin status --json and retry with --expect-version %d", rec.meta().RecordVersion).
		WithFact("record_version", rec.meta().RecordVersion)
}
