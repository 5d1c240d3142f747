package maint

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// AuditResult is `wt-admin audit`: per live task, the moves of its branch
// the gate approved (by lease) and those it never saw.
type AuditResult struct {
	Code  string      `json:"code"`
	Tasks []TaskAudit `json:"tasks"`
	// Ungated counts UNGATED_REF_MOVE entries over every task.
	Ungated int `json:"ungated"`
}

// TaskAudit is one task's branch.
type TaskAudit struct {
	TaskKey string `json:"task_key"`
	// Publication marks the publication branch (no task).
	Publication bool   `json:"publication,omitempty"`
	Branch      string `json:"branch"`
	Tip         string `json:"tip"`
	// ByLease counts the approved moves per lease id.
	ByLease map[string]int `json:"approved_by_lease"`
	Ungated []UngatedMove  `json:"ungated"`
	// BadApprovals counts approval lines that did not parse (never trusted).
	BadApprovals int `json:"bad_approvals,omitempty"`
	// entries is how many reflog entries were read (MarkAudit).
	entries int
}

// UngatedMove is a move of a task branch that no gate approval covers.
type UngatedMove struct {
	Code string `json:"code"`
	Old  string `json:"old"`
	New  string `json:"new"`
	// Time is the reflog entry's (RFC 3339), "" for a move with no entry.
	Time    string `json:"time,omitempty"`
	Message string `json:"message"`
	// Holder is who held the task's lease then, as far as the approvals
	// around it tell ("" when none did).
	Holder string `json:"holder,omitempty"`
	// Restore is the command that puts the branch back on Old while
	// keeping New under refs/wt/ungated/ ("" when later moves built on it:
	// restoring would drop them).
	Restore string `json:"restore,omitempty"`
}

// AuditMarkName is the file in the common dir in which wt-admin audit
// notes how far it has shown each task branch's reflog (and its tip):
// doctor reports only the ungated moves after that.
const AuditMarkName = "wt-audit-seen"

// AuditMark is how far audit has shown a branch: its reflog's entries and
// its tip then.
type AuditMark struct {
	Entries int    `json:"entries"`
	Tip     string `json:"tip"`
}

// LastAudit is what wt-admin audit last showed, by ref (empty when never,
// or when the mark cannot be read: then every move counts).
func LastAudit(commonDir string) map[string]AuditMark {
	out := map[string]AuditMark{}
	b, err := safefile.Read(filepath.Join(commonDir, AuditMarkName), 1<<20, safefile.NoFollow)
	if err == nil {
		_ = json.Unmarshal(b, &out) // Best effort: unreadable is as never.
	}
	return out
}

// MarkAudit notes what res showed. Best effort: without the mark doctor
// reports the moves audit has shown already.
func MarkAudit(commonDir string, res AuditResult) {
	m := map[string]AuditMark{}
	for _, t := range res.Tasks {
		m["refs/heads/"+t.Branch] = AuditMark{Entries: t.entries, Tip: t.Tip}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	_ = safefile.Replace(filepath.Join(commonDir, AuditMarkName), append(b, '\n'), 0o644) // Best effort, as above.
}

// Audit reads the reflog of every live task branch and the approvals its
// worktree's gate recorded (alloc.ApprovalsFile), and lists every move
// that no approval covers: a commit made with hooks off, a ref written by
// hand (no reflog entry at all), an update-ref by a process that is not
// the writer. Moves before since are not listed, nor those seen already
// (the first seen[ref].Entries reflog entries, and a hand-written tip
// equal to the one seen). It reads only.
func Audit(r *alloc.Repo, since time.Time, seen map[string]AuditMark) (AuditResult, error) {
	res := AuditResult{Code: decision.AuditShown, Tasks: []TaskAudit{}}
	var allocs []store.Allocation
	err := r.Store.Read(func(tx *store.Tx) error {
		all, err := tx.Allocations()
		for _, a := range all {
			if a.Branch != nil && a.Role == store.RoleFeature && (a.Lifecycle == store.Active || a.Lifecycle == store.Retained) {
				allocs = append(allocs, a)
			}
		}
		return err
	})
	if err != nil {
		return res, err
	}
	top := shell.Word(r.Git.TopLevel)
	if pol, err := r.Policy(); err == nil && pol.PublicationBranch != "" {
		t, err := auditPublication(r, pol.PublicationBranch, since, seen)
		if err != nil {
			return res, err
		}
		res.Ungated += len(t.Ungated)
		res.Tasks = append(res.Tasks, t)
	}
	for _, a := range allocs {
		t := TaskAudit{TaskKey: a.TaskKey, Branch: *a.Branch}
		approvals, bad := alloc.ReadApprovals(gitrepo.AdminDir(r.Git.CommonDir, a.WorktreeKey))
		t.BadApprovals = bad
		holderAt := func(when time.Time) string {
			best := ""
			for _, ap := range approvals {
				if ap.ClientID != "" && time.Unix(0, ap.Time).Before(when.Add(time.Second)) {
					best = fmt.Sprintf("client %s (lease %s, generation %d)", ap.ClientID, ap.LeaseID, ap.Generation)
				}
			}
			return best
		}
		born := func(_ int, e gitrepo.ReflogEntry) bool { // allocate's own git worktree add -b
			return alloc.IsZeroOID(e.Old) && e.New == a.BaseCommit && strings.HasPrefix(e.Msg, "branch: Created from")
		}
		latest, err := auditBranch(r.Git.CommonDir, &t, approvals, since, seen, born, holderAt)
		if err != nil {
			return res, err
		}
		if latest {
			m := &t.Ungated[len(t.Ungated)-1]
			m.Restore = restore(top, a.WorktreePath, a.TaskKey, m.Old, m.New, len(t.Ungated))
		}
		res.Ungated += len(t.Ungated)
		res.Tasks = append(res.Tasks, t)
	}
	return res, nil
}

// auditBranch fills t (whose Branch is set) from the branch's reflog and
// tip: the moves approvals cover, by lease, and those they do not, leaving
// out the entries before since, those seen already, and the branch's own
// creation (born). holder, when not nil, names who held the lease at a
// move. latest reports that the last ungated move is the branch's last
// move, from a commit that was there before (it can be undone alone).
func auditBranch(commonDir string, t *TaskAudit, approvals []alloc.Approval, since time.Time, seen map[string]AuditMark,
	born func(int, gitrepo.ReflogEntry) bool, holder func(time.Time) string) (latest bool, err error) {
	ref := "refs/heads/" + t.Branch
	t.ByLease, t.Ungated = map[string]int{}, []UngatedMove{}
	t.Tip = alloc.TipOf(commonDir, ref)
	entries, err := gitrepo.ReadReflog(commonDir, ref)
	if err != nil {
		return false, decision.Wrap(decision.InvalidMetadata, err, "read the reflog of %s", ref)
	}
	t.entries = len(entries)
	skip := func(i int, e gitrepo.ReflogEntry) bool {
		// before --since (a reflog keeps whole seconds), shown already, or the birth
		return e.When.Before(since.Truncate(time.Second)) || i < seen[ref].Entries || born(i, e)
	}
	holderAt := func(when time.Time) string {
		if holder == nil {
			return ""
		}
		return holder(when)
	}
	cover := alloc.Cover(entries, approvals, ref, skip)
	for i, e := range entries {
		switch {
		case skip(i, e):
		case cover[i] >= 0:
			t.ByLease[approvals[cover[i]].LeaseID]++
		default:
			t.Ungated = append(t.Ungated, UngatedMove{Code: decision.UngatedRefMove, Old: e.Old, New: e.New,
				Time: e.When.UTC().Format(time.RFC3339), Message: e.Msg, Holder: holderAt(e.When)})
			latest = i == len(entries)-1 && e.New == t.Tip && !alloc.IsZeroOID(e.Old)
		}
	}
	// A ref file written by hand moves the branch with no reflog entry.
	if last := alloc.LastNew(entries); t.Tip != "" && last != "" && t.Tip != last && !(t.Tip == seen[ref].Tip && len(entries) == seen[ref].Entries) {
		t.Ungated = append(t.Ungated, UngatedMove{Code: decision.UngatedRefMove, Old: last, New: t.Tip,
			Message: "moved with no reflog entry (the ref written directly)", Holder: holderAt(time.Now())})
		latest = true
	}
	return latest, nil
}

// restore is the command that keeps the moved-to commit under
// refs/wt/ungated/<task>/<n> and puts the branch back on old, as the
// task's writer (wt-exec in its worktree; the gate refuses anyone else)
// with git reset --keep, which keeps uncommitted changes and refuses if
// they would be lost.
func restore(top, wt, task, old, new string, n int) string {
	keep := fmt.Sprintf("refs/wt/ungated/%s/%d", task, n)
	return fmt.Sprintf("git -C %s update-ref %s %s && wt-exec -C %s -- git reset -q --keep %s",
		top, shell.Word(keep), new, shell.Word(wt), old)
}

// auditPublication is Audit for the publication branch: wt does not gate
// it, so a move counts as seen when any gate saw it (an approval recorded
// in the canonical checkout's or any worktree's git dir); one no gate saw
// was made with hooks off or written by hand. No restore is offered: the
// publication branch is the operator's.
func auditPublication(r *alloc.Repo, branch string, since time.Time, seen map[string]AuditMark) (TaskAudit, error) {
	t := TaskAudit{Branch: branch, Publication: true}
	approvals, bad := alloc.ReadApprovals(r.Git.CommonDir)
	dirs, _ := os.ReadDir(filepath.Join(r.Git.CommonDir, "worktrees"))
	for _, d := range dirs {
		more, b := alloc.ReadApprovals(gitrepo.AdminDir(r.Git.CommonDir, d.Name()))
		approvals, bad = append(approvals, more...), bad+b
	}
	t.BadApprovals = bad
	born := func(i int, e gitrepo.ReflogEntry) bool { return i == 0 && alloc.IsZeroOID(e.Old) } // before wt
	_, err := auditBranch(r.Git.CommonDir, &t, approvals, since, seen, born, nil)
	return t, err
}
