package maint

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/ledger"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// AuditResult is `wt-admin audit`: per live task, the moves of its branch
// the gate approved (by lease) and those it never saw.
type AuditResult struct {
	Code  string      `json:"code"`
	Tasks []TaskAudit `json:"tasks"`
	// Ungated counts UNGATED_REF_MOVE entries over every task, and Missing
	// the task branches gone from git (TASK_BRANCH_MISSING).
	Ungated int `json:"ungated"`
	Missing int `json:"missing"`
}

// TaskAudit is one task's branch.
type TaskAudit struct {
	TaskKey string `json:"task_key"`
	// Publication marks the publication branch (no task).
	Publication bool   `json:"publication,omitempty"`
	Branch      string `json:"branch"`
	Tip         string `json:"tip"`
	// Recorded is the tip wt's ledger records (the last move wt approved
	// or made), "" when it has none (an allocation older than ledgers).
	Recorded string `json:"recorded_tip,omitempty"`
	// ByLease counts the approved moves per lease id.
	ByLease map[string]int `json:"approved_by_lease"`
	Ungated []UngatedMove  `json:"ungated"`
	// Missing is set when the branch is gone from git while the ledger
	// records a tip (TASK_BRANCH_MISSING).
	Missing *MissingBranch `json:"missing,omitempty"`
	// BadApprovals counts ledger lines that did not parse (never trusted).
	BadApprovals int `json:"bad_approvals,omitempty"`
	// Unseen says what audit could not read for this branch ("" when it
	// read everything): its reflog, its ledger.
	Unseen string `json:"unseen,omitempty"`
	// Symref is set for the publication branch when it, or another ref
	// naming it, is a symbolic ref (PUBLICATION_BRANCH_SYMREF): an update
	// of one moves the other past the lander.
	Symref *SymrefFinding `json:"symref,omitempty"`
	// entries is how many reflog entries were read (MarkAudit).
	entries int
}

// MissingBranch is a task branch gone from git.
type MissingBranch struct {
	Code     string `json:"code"`
	Recorded string `json:"recorded_tip"`
	Message  string `json:"message"`
	Restore  string `json:"restore"`
}

// SymrefFinding is the publication branch made a symbolic ref (Target),
// or other refs made symbolic refs to it (Aliases), and the commands that
// make them plain refs again where they point now.
type SymrefFinding struct {
	Code    string   `json:"code"`
	Target  string   `json:"target,omitempty"`
	Aliases []string `json:"aliases,omitempty"`
	Message string   `json:"message"`
	Repair  []string `json:"repair"`
}

// UngatedMove is a move of a task branch that no gate approval covers.
type UngatedMove struct {
	Code string `json:"code"`
	Old  string `json:"old"`
	New  string `json:"new"`
	// Time is the reflog entry's (RFC 3339), "" for a move with no entry.
	Time    string `json:"time,omitempty"`
	Message string `json:"message"`
	// Holder is the task's writer lease live at the move's time ("" when
	// no lease was held then, or the move has no time).
	Holder string `json:"holder,omitempty"`
	// NoLease is set when the move has a time and no lease of the task
	// was live then.
	NoLease bool `json:"no_lease,omitempty"`
	// Restore is the command that puts the branch back on the tip wt last
	// approved, keeping what it holds now under refs/wt/ungated/: every
	// ungated move from there on undone at once. "" when a move wt
	// approved came after (undoing would drop it).
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

// Audit holds every live task branch, and the publication branch, against
// wt's ledger of the moves it approved or made (store.ReadLedger): a
// reflog entry no ledger line covers exactly (same ref, old and new) is a
// move no gate saw (hooks off, an update-ref by a process that is not the
// writer); a tip the ledger does not account for is one too, whatever the
// reflog says (expired, deleted, the ref written by hand); a branch gone
// while the ledger records a tip is TASK_BRANCH_MISSING. Each move is put
// to the task's writer lease live at its time (from the leases' history
// in the store), or to none. Moves before since are not listed, nor, when
// seen is given (doctor), those audit showed already. It reads only.
func Audit(r *alloc.Repo, since time.Time, seen map[string]AuditMark) (AuditResult, error) {
	res := AuditResult{Code: decision.AuditShown, Tasks: []TaskAudit{}}
	var allocs []store.Allocation
	var created string
	err := r.Store.Read(func(tx *store.Tx) error {
		if repo, err := tx.Repository(); err == nil {
			created = repo.CreatedAt
		}
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
	leases, err := lease.List(r, true)
	if err != nil {
		return res, err
	}
	top := shell.Word(r.Git.TopLevel)
	if pol, err := policy.Read(r.Store); err == nil && pol.PublicationBranch != "" {
		t, err := auditPublication(r, pol.PublicationBranch, since, seen, created)
		if err != nil {
			return res, err
		}
		res.add(t)
	}
	for _, a := range allocs {
		t := TaskAudit{TaskKey: a.TaskKey, Branch: *a.Branch}
		ref := "refs/heads/" + t.Branch
		led, err := store.ReadLedger(r.Store.Root(), a.AllocationID, ref)
		if err != nil {
			t.Unseen = "its ledger: " + err.Error()
		}
		t.BadApprovals = led.Bad
		holderAt := leaseAt(leases, a.AllocationID)
		b := branchAudit{commonDir: r.Git.CommonDir, t: &t, led: led, since: since, seen: seen, holder: holderAt}
		b.run()
		if t.Missing != nil {
			t.Missing.Restore = ledger.RestoreBranch(a.WorktreePath, ref, t.Missing.Recorded)
		} else if b.restoreTo != "" && len(t.Ungated) > 0 {
			t.Ungated[len(t.Ungated)-1].Restore = restore(top, a.WorktreePath, a.TaskKey, b.restoreTo, t.Tip, len(t.Ungated))
		}
		res.add(t)
	}
	return res, nil
}

func (res *AuditResult) add(t TaskAudit) {
	res.Ungated += len(t.Ungated)
	if t.Missing != nil {
		res.Missing++
	}
	res.Tasks = append(res.Tasks, t)
}

// leaseAt tells who held allocation id's writer lease at a move's time,
// from the leases' history (lease.List): ok is false when no lease of it
// was live in that second. A lease is live from its grant until it ended
// or expired, whichever came first (past its expiry its holder has no
// entitlement; lease expire records that later). A reflog keeps whole
// seconds: a lease that began or ended within the move's second is named
// with that said (the reflog cannot tell whether the move came before or
// after).
func leaseAt(leases []lease.Entry, id string) func(time.Time) (string, bool) {
	return func(when time.Time) (string, bool) {
		sec := when.Truncate(time.Second)
		end := sec.Add(time.Second)
		partial := ""
		for _, e := range leases {
			if e.AllocationID != id {
				continue
			}
			from, err := time.Parse(time.RFC3339Nano, e.From)
			if err != nil || !from.Before(end) {
				continue
			}
			to, open := time.Time{}, e.To == ""
			if !open {
				if to, err = time.Parse(time.RFC3339Nano, e.To); err != nil {
					continue
				}
			}
			if x, err := time.Parse(time.RFC3339Nano, e.ExpiresAt); err == nil && (open || x.Before(to)) {
				to, open = x, false
			}
			if !open && !to.After(sec) {
				continue
			}
			who := fmt.Sprintf("client %s, pid %d (lease %s, generation %d)", e.Holder.ClientID, e.Holder.PID, e.LeaseID, e.Generation)
			if !from.After(sec) && (open || !to.Before(end)) {
				return who, true
			}
			if partial == "" {
				partial = who + ", which began or ended within the second of the move: the reflog cannot tell whether the move came before or after"
			}
		}
		return partial, partial != ""
	}
}

// branchAudit is one branch's audit (Audit, auditPublication).
type branchAudit struct {
	commonDir string
	t         *TaskAudit
	led       store.Ledger
	since     time.Time
	seen      map[string]AuditMark
	// baseline leaves out the entries before wt watched the branch.
	baseline func(int, gitrepo.ReflogEntry) bool
	// holder names the lease live at a time (nil: not asked).
	holder func(time.Time) (string, bool)
	// restoreTo is, after run, the tip to restore the branch to (the
	// ledger's) when the branch's last moves are ungated; "" when not.
	restoreTo string
}

// run fills t (whose Branch is set) from the branch's reflog, its tip
// and its ledger.
func (b *branchAudit) run() {
	t := b.t
	ref := "refs/heads/" + t.Branch
	t.ByLease, t.Ungated = map[string]int{}, []UngatedMove{}
	tip, tipErr := gitrepo.ReadRef(b.commonDir, ref)
	t.Tip = tip
	if tipErr != nil {
		t.Unseen = join(t.Unseen, "its tip: "+tipErr.Error())
		return // a branch that cannot be read is not audited as gone
	}
	if len(b.led.Lines) > 0 {
		t.Recorded = b.led.Tip()
	}
	entries, err := gitrepo.ReadReflog(b.commonDir, ref)
	if err != nil {
		t.Unseen = join(t.Unseen, "its reflog: "+err.Error())
	}
	t.entries = len(entries)
	skip := func(i int, e gitrepo.ReflogEntry) bool {
		// before --since (a reflog keeps whole seconds), shown already, or before wt watched it;
		// or a write that moved nothing (a reset --hard to the tip it had): not a move
		return e.When.Before(b.since.Truncate(time.Second)) || b.seen != nil && i < b.seen[ref].Entries || b.baseline != nil && b.baseline(i, e) ||
			e.Old == e.New && !ledger.IsZeroOID(e.New)
	}
	if b.baseline == nil {
		if bl, ok := b.led.Baseline(); ok {
			b.baseline = baselineAt(bl.When(), bl.Entries)
		}
	}
	b.judgeTip(ref, tip, entries, b.walk(entries, skip))
}

// walk counts the reflog's moves the ledger covers by lease and lists
// the ones it does not (ungated); lastApproved is the number of ungated
// moves listed before the last covered one (-1: none covered).
func (b *branchAudit) walk(entries []gitrepo.ReflogEntry, skip func(int, gitrepo.ReflogEntry) bool) (lastApproved int) {
	t := b.t
	cover := ledger.Cover(entries, b.led.Lines, skip)
	lastApproved = -1
	for i, e := range entries {
		switch {
		case skip(i, e):
		case cover[i] >= 0:
			if l := b.led.Lines[cover[i]]; l.Via != store.ViaAllocate {
				t.ByLease[l.LeaseID]++ // "" for a move a gate saw with no lease (the publication branch)
			}
			lastApproved = len(t.Ungated)
		default:
			t.Ungated = append(t.Ungated, b.move(UngatedMove{Code: decision.UngatedRefMove, Old: e.Old, New: e.New,
				Time: e.When.UTC().Format(time.RFC3339), Message: e.Msg}, e.When))
		}
	}
	return lastApproved
}

// judgeTip judges the branch's tip against the ledger: a tip wt did not
// put there is an ungated move (restoreTo set), a branch gone from git
// that the ledger records is missing; with no ledger, a tip the reflog
// does not end at.
func (b *branchAudit) judgeTip(ref, tip string, entries []gitrepo.ReflogEntry, lastApproved int) {
	t := b.t
	shownTip := b.seen != nil && b.seen[ref].Tip == tip && tip != ""
	if !b.led.Exists || len(b.led.Lines) == 0 {
		// No ledger (a branch wt recorded before ledgers): the reflog
		// alone, and a tip it does not end at.
		if last := ledger.LastNew(entries); tip != "" && last != "" && tip != last && !(b.seen != nil && b.seen[ref].Tip == tip && len(entries) == b.seen[ref].Entries) {
			t.Ungated = append(t.Ungated, b.move(UngatedMove{Code: decision.UngatedRefMove, Old: last, New: tip,
				Message: decision.Words(decision.UngatedRefMove, "moved-no")}, time.Time{}))
		}
		return
	}
	if rec, gone := b.led.Gone(tip); gone {
		t.Missing = &MissingBranch{Code: decision.TaskBranchMissing, Recorded: rec,
			Message: decision.Words(decision.TaskBranchMissing, "gone-from", ref, gitrepo.Short(rec))}
		return
	}
	if tip == "" {
		return
	}
	if b.led.Accounts(tip) {
		return // where wt last put it: an ungated move before was built on, or undone
	}
	// The tip is not where wt last put it: every move from the ledger's
	// tip on went ungated. Undone at once by a restore to it.
	b.restoreTo = b.led.Tip()
	if n := len(t.Ungated); n > 0 && lastApproved < n && t.Ungated[n-1].New == tip && ledger.LastNew(entries) == tip {
		return // the reflog shows the moves
	}
	if shownTip {
		b.restoreTo = ""
		return
	}
	t.Ungated = append(t.Ungated, b.move(UngatedMove{Code: decision.UngatedRefMove, Old: b.led.Tip(), New: tip,
		Message: decision.Words(decision.UngatedRefMove, "moved-from")}, time.Time{}))
}

// baselineAt leaves out the reflog entries before a baseline taken at
// when, which counted n entries (n < 0: not known). A reflog keeps whole
// seconds: an entry of the baseline's own second is before it when the
// baseline counted it.
func baselineAt(when time.Time, n int) func(int, gitrepo.ReflogEntry) bool {
	sec := when.Truncate(time.Second)
	return func(i int, e gitrepo.ReflogEntry) bool {
		return e.When.Before(sec) || e.When.Before(sec.Add(time.Second)) && (n < 0 || i < n)
	}
}

// move fills m's lease at when (a zero when: the move's time is unknown).
func (b *branchAudit) move(m UngatedMove, when time.Time) UngatedMove {
	if b.holder == nil || when.IsZero() {
		return m
	}
	h, ok := b.holder(when)
	m.Holder, m.NoLease = h, !ok
	return m
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// restore is the command that keeps the branch's tip (new) under
// refs/wt/ungated/<task>/<n> and puts the branch back on old, the tip wt
// last approved, as the task's writer (wt-exec in its worktree; the gate refuses anyone else)
// with git reset --keep, which keeps uncommitted changes and refuses if
// they would be lost.
func restore(top, wt, task, old, new string, n int) string {
	keep := fmt.Sprintf("refs/wt/ungated/%s/%d", task, n)
	return fmt.Sprintf("git -C %s update-ref %s %s && wt-exec -C %s -- git reset -q --keep %s",
		top, shell.Word(keep), new, shell.Word(wt), old)
}

// auditPublication is Audit for the publication branch, against its
// ledger: wt does not gate it, but every move a gate saw is recorded
// there, so a move none saw was made with hooks off or written by hand.
// Its history before wt watched it (the ledger's baseline, written by
// init; for a store older than ledgers, before the store was made) is
// not a finding. No restore is offered: the publication branch is the
// operator's.
func auditPublication(r *alloc.Repo, branch string, since time.Time, seen map[string]AuditMark, created string) (TaskAudit, error) {
	t := TaskAudit{Branch: branch, Publication: true}
	ref := "refs/heads/" + branch
	led, err := store.ReadLedger(r.Store.Root(), store.PublicationLedger, ref)
	if err != nil {
		t.Unseen = "its ledger: " + err.Error()
	}
	t.BadApprovals = led.Bad
	b := branchAudit{commonDir: r.Git.CommonDir, t: &t, led: led, since: since, seen: seen}
	if _, ok := led.Baseline(); !ok {
		if c, err := time.Parse(time.RFC3339Nano, created); err == nil {
			b.baseline = baselineAt(c, -1) // a store older than ledgers: from its creation
		}
	}
	raw, _ := gitrepo.ReadRef(r.Git.CommonDir, ref) // unreadable: run says so
	target, symbolic := strings.CutPrefix(raw, "ref:")
	if symbolic {
		// A symbolic ref: its history is the ref's it names, and its tip
		// what that ref holds.
		t.Tip, _ = gitrepo.ReadRef(r.Git.CommonDir, target)
	} else {
		target = ""
		b.run()
	}
	t.Missing = nil // the operator's: no restore of it is wt's to offer
	aliases, err := symrefsTo(r, ref)
	if err != nil {
		t.Unseen = join(t.Unseen, "its symbolic refs: "+err.Error())
	}
	if target != "" || len(aliases) > 0 {
		t.Symref = symrefFinding(r.Git.TopLevel, branch, target, aliases)
	}
	return t, nil
}

// symrefsTo are the refs that are symbolic refs to ref.
func symrefsTo(r *alloc.Repo, ref string) ([]string, error) {
	all, err := r.Git.Symrefs(context.Background())
	if err != nil {
		return nil, err
	}
	var out []string
	for name, target := range all {
		if target == ref {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// symrefFinding says what is wrong with the publication branch branch
// (a symbolic ref to target, or named by aliases) and how each is made a
// plain ref again where it points now (git update-ref --no-deref, with
// hooks on: the gate lets a write that moves nothing through).
func symrefFinding(top, branch, target string, aliases []string) *SymrefFinding {
	f := &SymrefFinding{Code: decision.PublicationSymref, Target: target, Aliases: aliases}
	repo := shell.Word(top)
	var what []string
	if target != "" {
		what = append(what, fmt.Sprintf("%s is a symbolic ref to %s: every update of %s moves %s, and no hook of git before 2.46 sees it", branch, target, target, branch))
		f.Repair = append(f.Repair, fmt.Sprintf("git -C %s update-ref --no-deref refs/heads/%s $(git -C %s rev-parse refs/heads/%s)", repo, branch, repo, branch))
	}
	for _, a := range aliases {
		what = append(what, fmt.Sprintf("%s is a symbolic ref to %s: an update of it moves %s", a, branch, branch))
		f.Repair = append(f.Repair, fmt.Sprintf("git -C %s symbolic-ref --delete %s", repo, shell.Word(a)))
	}
	f.Message = strings.Join(what, "; ")
	return f
}
