package alloc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/store"
)

// ApprovalsFile is the file, in a checkout's own git dir, to which the gate
// appends each ref update of a task branch it approves (one JSON object a
// line): what `wt-admin audit` tells apart from the moves no gate saw. It
// is in the checkout's git dir because the gate runs in the writer's
// process, which a confined one may write only there; so it is the
// writer's evidence, not proof against a writer that forges it (audit
// trusts it as far as the writer's own hooks: it finds what hooks off and
// direct writes did, not what the holder hides).
const ApprovalsFile = "wt-approvals"

// Approval is one approved update.
type Approval struct {
	// Time is Unix nanoseconds.
	Time int64 `json:"t"`
	// Hook is pre-commit (New unknown yet: the commit's parent is Old) or
	// reference-transaction (Old and New as git gave them).
	Hook       string `json:"hook"`
	Ref        string `json:"ref"`
	Old        string `json:"old"`
	New        string `json:"new,omitempty"`
	LeaseID    string `json:"lease_id,omitempty"`
	Generation int    `json:"generation,omitempty"`
	ClientID   string `json:"client_id,omitempty"`
}

// RecordApproval appends a to the approvals of the checkout whose git dir
// is gitDir. Best effort: an approval that cannot be written makes the
// move look ungated to audit, never a commit fail.
func RecordApproval(gitDir string, a Approval, l *store.Lease) {
	a.Time = time.Now().UnixNano()
	if l != nil {
		a.LeaseID, a.Generation, a.ClientID = l.LeaseID, l.Generation, l.Holder.ClientID
	}
	line, err := json.Marshal(a)
	if err != nil {
		return
	}
	fd, err := unix.Open(filepath.Join(gitDir, ApprovalsFile), unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	unix.Write(fd, append(line, '\n')) // one write: O_APPEND keeps lines whole
}

// ReadApprovals reads the approvals in gitDir; lines that do not parse are
// skipped (and counted), never trusted.
func ReadApprovals(gitDir string) (out []Approval, bad int) {
	// Read as every file a writer can plant is: a regular file, never
	// blocking on a FIFO, never through a symlink.
	b, err := safefile.Read(filepath.Join(gitDir, ApprovalsFile), 64<<20, safefile.NoFollow)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			bad++ // unreadable: nothing in it is trusted
		}
		return nil, bad
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var a Approval
		if err := dec.Decode(&a); err != nil {
			return out, bad + 1
		}
		if a.Ref == "" || a.Old == "" || a.Time <= 0 {
			bad++
			continue
		}
		out = append(out, a)
	}
	return out, bad
}

// TipOf is the commit ref names now in commonDir ("" when unknown).
func TipOf(commonDir, ref string) string {
	v, _ := gitrepo.ReadRef(commonDir, ref) // unreadable reads as unknown
	return v
}

// Cover tells, for each of ref's reflog entries that skip does not leave
// out, the approval that covers it (its index, -1 for none); each approval
// covers one entry. An entry is covered by the reference transaction's own
// approval (old and new), or by a pre-commit's of the same parent made
// about when the move was: a reflog entry carries the committer's time,
// which git takes when the command starts, before its hooks run (10
// minutes before the approval are allowed: a loaded machine), and a commit
// message takes its time (up to an hour after).
func Cover(entries []gitrepo.ReflogEntry, approvals []Approval, ref string, skip func(int, gitrepo.ReflogEntry) bool) []int {
	used := make([]bool, len(approvals))
	out := make([]int, len(entries))
	for i, e := range entries {
		out[i] = -1
		if skip != nil && skip(i, e) {
			continue
		}
		if j := matchApproval(approvals, used, ref, e); j >= 0 {
			used[j] = true
			out[i] = j
		}
	}
	return out
}

func matchApproval(approvals []Approval, used []bool, ref string, e gitrepo.ReflogEntry) int {
	for j, ap := range approvals {
		if !used[j] && ap.Ref == ref && ap.Hook == "reference-transaction" && ap.Old == e.Old && ap.New == e.New {
			return j
		}
	}
	for j, ap := range approvals {
		at := time.Unix(0, ap.Time)
		if !used[j] && ap.Ref == ref && ap.Hook == "pre-commit" && ap.Old == e.Old &&
			!e.When.Before(at.Add(-10*time.Minute)) && e.When.Before(at.Add(time.Hour)) {
			return j
		}
	}
	return -1
}

// IsZeroOID reports whether oid is all zeros (a ref created or deleted).
func IsZeroOID(oid string) bool { return oid != "" && strings.Trim(oid, "0") == "" }

// LastNew is the value the last entry gave the ref ("" for none).
func LastNew(entries []gitrepo.ReflogEntry) string {
	if len(entries) == 0 {
		return ""
	}
	return entries[len(entries)-1].New
}
