package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/safefile"
)

// The branch ledger: wt's own record of every move of a governed branch it
// approved or made (docs/format.md, "Records": the branch ledger). One file a
// branch, ledger/<allocation id>.jsonl for a task branch and
// ledger/publication.jsonl for the publication branch, one JSON object a
// line, appended with O_APPEND in one write. Its last line for a ref names
// the tip wt last approved; the views compare git's real tip against it,
// so a branch deleted, rewound or moved with hooks off shows whatever its
// reflog says (a reflog can be expired or deleted; the ledger is in wt's
// store, which a confined agent cannot write).
//
// Who appends: allocate (the branch's first tip), the gate (every move it
// approves, in the reference transaction's "prepared" state, after judging
// the whole transaction), the reference-transaction shim for a commit
// pre-commit approved (from the pass, in shell), wt-exec for a confined
// run's publication, init (the publication branch's baseline), adopt. It is
// not one of subdirs: stores made before it have none.
const ledgerDir = "ledger"

// PublicationLedger is the ledger name of the publication branch.
const PublicationLedger = "publication"

// Ways a ledger line was written.
const (
	ViaAllocate = "allocate"
	ViaGate     = "gate"
	ViaPass     = "pass" // the reference-transaction shim, from pre-commit's pass
	ViaPublish  = "publish"
	ViaLand     = "land" // the publication branch moved by wt-admin land
	ViaInit     = "init"
	ViaAdopt    = "adopt"
	ViaFinish   = "finish" // the branch deleted by wt-admin finish
	// ViaConfined: a move a confined command's gate approved where the
	// command had no private view (Landlock alone), written by its gate to
	// the checkout's git dir (PendingLedgerName) and brought into the
	// ledger by wt-exec at the run's end, when the reflog shows the move.
	ViaConfined = "confined"
)

// ViewEnv marks the environment of a confined command that runs in a
// private view (its store is the view's: wt-exec records its moves as it
// publishes them); ConfinedEnv without it is a command confined by
// Landlock alone.
const ViewEnv = "WT_VIEW"

// PendingLedgerName is the file, in a checkout's own git dir, to which the
// gate of a command confined by Landlock alone (which may not write wt's
// store) appends the moves it approves, in the ledger's format; wt-exec
// brings those the reflog shows into the ledger when the run ends.
const PendingLedgerName = "wt-ledger-pending"

// LedgerLine is one line of a branch ledger.
type LedgerLine struct {
	// Time is Unix nanoseconds (0 from the shim, which has no clock).
	Time int64  `json:"t,omitempty"`
	Via  string `json:"via"`
	Ref  string `json:"ref"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new"`
	// The lease the move was approved under, if any.
	LeaseID    string `json:"lease_id,omitempty"`
	Generation int    `json:"generation,omitempty"`
	ClientID   string `json:"client_id,omitempty"`
	// Entries is, for a baseline (init), how many reflog entries the
	// branch had then: the history before it is not a finding.
	Entries int `json:"reflog_entries,omitempty"`
}

// When is the line's time (zero when the shim wrote it).
func (l LedgerLine) When() time.Time {
	if l.Time == 0 {
		return time.Time{}
	}
	return time.Unix(0, l.Time)
}

// LedgerPath is the file of ledger name (an allocation id, or
// PublicationLedger) in the store at root.
func LedgerPath(root, name string) string {
	return filepath.Join(root, ledgerDir, name+".jsonl")
}

// AppendLedger appends l to ledger name of the store at root, stamping
// its time when unset. One write with O_APPEND keeps lines whole; no fsync
// (a move lost with the page cache leaves the ledger one move behind,
// which the views report as a move no gate saw: never the other way).
func AppendLedger(root, name string, l LedgerLine) error {
	return AppendLedgerAt(LedgerPath(root, name), l)
}

// AppendLedgerAt is AppendLedger to the ledger file at p (a ledger of the
// store, or a confined run's pending lines, PendingLedgerName).
func AppendLedgerAt(p string, l LedgerLine) error {
	if l.Time == 0 {
		l.Time = time.Now().UnixNano()
	}
	line, err := json.Marshal(l)
	if err != nil {
		return err
	}
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o644)
	if errors.Is(err, unix.ENOENT) {
		if err = mkdirNoFollow(filepath.Dir(p)); err == nil {
			fd, err = unix.Open(p, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o644)
		}
	}
	if err != nil {
		return &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return invalid(p, errors.New("not a regular file"))
	}
	_, err = unix.Write(fd, append(line, '\n'))
	return err
}

// HasLedger reports whether ledger name has a file in the store at root
// (one stat: the gate asks it at every commit).
func HasLedger(root, name string) bool {
	_, err := os.Lstat(LedgerPath(root, name))
	return err == nil
}

// EnsureLedgerDir makes the ledgers' directory in the store at root where
// it is missing (a store older than ledgers), for the shim's appends.
func EnsureLedgerDir(root string) error {
	p := filepath.Join(root, ledgerDir)
	if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
		return nil
	}
	return mkdirNoFollow(p)
}

// ledgerTail is how much of a ledger's end ReadLedgerTail reads: the last
// lines are what the views need, whatever the branch's history.
const ledgerTail = 64 << 10

// Ledger is what a ledger says of one ref.
type Ledger struct {
	// Lines are the ref's lines, oldest first (ReadLedger: all of them;
	// ReadLedgerTail: those in the file's last 64 KiB).
	Lines []LedgerLine
	// Bad counts lines that did not parse (never trusted).
	Bad int
	// Exists is false when the ledger has no file (a store older than
	// ledgers, an allocation made before them).
	Exists bool
}

// Tip is the ref's recorded tip: the last line's new value ("" when the
// ledger has none).
func (l Ledger) Tip() string {
	if len(l.Lines) == 0 {
		return ""
	}
	return l.Lines[len(l.Lines)-1].New
}

// Last is the ref's last line (ok false when none).
func (l Ledger) Last() (LedgerLine, bool) {
	if len(l.Lines) == 0 {
		return LedgerLine{}, false
	}
	return l.Lines[len(l.Lines)-1], true
}

// Deleted reports whether the ledger's last line for the ref is finish's
// deletion of the branch: its absence is not a loss. (A deletion the gate
// approved leaves a live task without its branch: still a loss to raise.)
func (l Ledger) Deleted() bool {
	last, ok := l.Last()
	return ok && last.Via == ViaFinish
}

// Gone reports whether the ref, whose value in git is tip, is gone while
// the ledger records a tip for it that finish did not delete: recorded is
// the tip to restore it to.
func (l Ledger) Gone(tip string) (recorded string, gone bool) {
	if tip != "" || l.Deleted() {
		return "", false
	}
	recorded = l.LastExisting()
	return recorded, recorded != ""
}

// Baseline is the last baseline line (init: where wt began to watch the
// branch), ok false when none.
func (l Ledger) Baseline() (LedgerLine, bool) {
	for i := len(l.Lines) - 1; i >= 0; i-- {
		if l.Lines[i].Via == ViaInit {
			return l.Lines[i], true
		}
	}
	return LedgerLine{}, false
}

// LastExisting is the last value the ledger recorded for the ref that was
// not a deletion ("" when none): where a missing branch is restored to.
func (l Ledger) LastExisting() string {
	for i := len(l.Lines) - 1; i >= 0; i-- {
		if n := l.Lines[i].New; n != "" && strings.Trim(n, "0") != "" {
			return n
		}
	}
	return ""
}

// Accounts reports whether tip (git's value of the ref, "" for none) is
// what the ledger accounts for: its recorded tip, or, for the move
// recorded last, the value before it (that move is recorded before git
// makes it, in the transaction's "prepared" state: in flight, or aborted
// by a later hook).
func (l Ledger) Accounts(tip string) bool {
	last, ok := l.Last()
	if !ok {
		return false
	}
	norm := func(s string) string {
		if strings.Trim(s, "0") == "" {
			return ""
		}
		return s
	}
	return norm(tip) == norm(last.New) || last.Via != ViaAllocate && last.Via != ViaInit && norm(tip) == norm(last.Old)
}

// ReadLedger reads every line of ledger name about ref.
func ReadLedger(root, name, ref string) (Ledger, error) {
	return readLedger(root, name, ref, 0)
}

// ReadLedgerTail reads the lines about ref in the last 64 KiB of ledger
// name: enough for its recorded tip, at a cost that does not grow with the
// branch's history.
func ReadLedgerTail(root, name, ref string) (Ledger, error) {
	return readLedger(root, name, ref, ledgerTail)
}

func readLedger(root, name, ref string, tail int64) (Ledger, error) {
	return ReadLedgerFile(LedgerPath(root, name), ref, tail)
}

// ReadLedgerFile reads the lines about ref in the ledger file at p (its
// last tail bytes; 0: all of it).
func ReadLedgerFile(p, ref string, tail int64) (Ledger, error) {
	var out Ledger
	f, _, err := safefile.Open(p, safefile.NoFollow)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, invalid(p, err)
	}
	defer f.Close() // Best effort: read only.
	out.Exists = true
	skipFirst := false
	if tail > 0 {
		if fi, err := f.Stat(); err == nil && fi.Size() > tail {
			if _, err := f.Seek(fi.Size()-tail, io.SeekStart); err != nil {
				return out, invalid(p, err)
			}
			skipFirst = true // begins mid-line
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return out, invalid(p, err)
	}
	if skipFirst {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	for len(data) > 0 {
		line := data
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			// A last line without its newline: being written, or cut by
			// a power loss; not trusted either way.
			out.Bad++
			break
		}
		line, data = data[:i], data[i+1:]
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var l LedgerLine
		if err := json.Unmarshal(line, &l); err != nil || l.Ref == "" || l.Via == "" {
			out.Bad++
			continue
		}
		if l.Ref == ref {
			if l.LeaseID == "-" { // the shim's pass without a lease
				l.LeaseID, l.ClientID = "", ""
			}
			out.Lines = append(out.Lines, l)
		}
	}
	return out, nil
}
