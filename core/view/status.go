// Package view holds wt-admin's read-only views of a repository: status
// (every worktree, its registration, gate and lease freshness, and the
// maintenance due) and ps (who is in each governed worktree). It reads the
// store under the shared lock and /proc once; it changes nothing.
package view

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/land"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/liveness"
	"github.com/wt-tool/wt/core/maint"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/core/waitline"
)

// Row is one worktree in the status view.
type Row struct {
	Path         string     `json:"path"`
	Key          string     `json:"key"`
	Managed      bool       `json:"managed"`
	Registration string     `json:"registration"` // registered, unregistered, canonical, none
	AllocationID string     `json:"allocation_id,omitempty"`
	TaskKey      string     `json:"task_key,omitempty"`
	Role         string     `json:"role,omitempty"`
	Owner        string     `json:"owner,omitempty"`
	Lifecycle    string     `json:"lifecycle,omitempty"`
	Branch       string     `json:"branch"`
	Head         string     `json:"head"`
	GitState     string     `json:"git_state"` // present, locked, prunable, missing
	Lease        *LeaseView `json:"lease"`
	// Gate says what gates writes there (see Gate).
	Gate string `json:"gate"`
	// Problems are gate problems, each with its decision code and the
	// command that ends it.
	Problems []Problem `json:"problems"`
	// Occupants are the processes a run left in the worktree that keep
	// every writer out until they end (RUNTIME_OCCUPIED).
	Occupants []lease.Occupant `json:"occupants,omitempty"`
	// Landing is where the task's work stands on its way onto the
	// publication branch (wt-admin ready, wt-admin land), and
	// LandingState what status calls it: READY, LANDED (while the branch
	// is still the tip that landed), LAND_CONFLICT or LAND_TEST_FAILED.
	Landing      *store.Landing `json:"landing,omitempty"`
	LandingState string         `json:"landing_state,omitempty"`
	// DisplayLifecycle is what the status table's LIFECYCLE column says:
	// an ACTIVE task's LandingState, if any, else its Lifecycle; for a
	// worktree wt does not manage, "canonical checkout", "unregistered"
	// or "unmanaged". (The table adds GitState when it is not present.)
	DisplayLifecycle string `json:"display_lifecycle"`
}

// displayLifecycle is row's DisplayLifecycle.
func (row *Row) displayLifecycle() string {
	switch {
	case !row.Managed && row.Registration == "canonical":
		return "canonical checkout"
	case !row.Managed && row.Registration == "unregistered":
		return "unregistered"
	case !row.Managed:
		return "unmanaged"
	case row.LandingState != "" && row.Lifecycle == store.Active:
		return row.LandingState // wt-admin ready and land
	}
	return row.Lifecycle
}

// Problem is something about a worktree that weakens or blocks its gate.
type Problem struct {
	// Alarm marks what needs a person now (status prints it first).
	Alarm   bool   `json:"alarm,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
	Hint    string `json:"hint,omitempty"`
}

// GateProblems are the gate problems of checkout wt, registered to
// allocation a (nil when it is not a registered worktree), on a repository
// whose task branches are looked up with guarded: a feature worktree whose
// HEAD left its task branch, and any other checkout that has a task branch
// checked out.
func GateProblems(tx *store.Tx, repoArg string, wt gitrepo.Worktree, gitDir string, a *store.Allocation) ([]Problem, error) {
	var out []Problem
	path := shell.Word(wt.Path)
	if a != nil && a.Role == store.RoleFeature && a.Branch != nil {
		if !gitrepo.OnBranch(wt.Detached, wt.Branch, gitDir, *a.Branch) {
			on := "a detached HEAD"
			if !wt.Detached {
				on = "branch " + wt.Branch
			}
			out = append(out, Problem{Code: decision.HeadOffTaskBranch,
				Message: decision.Words(decision.HeadOffTaskBranch, "task-worktree-not", a.TaskKey, on, *a.Branch),
				Fix:     fmt.Sprintf("git -C %s switch %s", path, shell.Word(*a.Branch))})
		}
	}
	if wt.Detached || wt.Branch == "" {
		return out, nil
	}
	g, ok, err := tx.BranchAllocation("refs/heads/" + wt.Branch)
	if err != nil || !ok || (a != nil && g.AllocationID == a.AllocationID) {
		return out, err
	}
	if g.Role != store.RoleFeature || (g.Lifecycle != store.Active && g.Lifecycle != store.Retained) {
		return out, nil
	}
	p := Problem{Code: decision.WriterLeaseRequired,
		Message: decision.Words(decision.WriterLeaseRequired, "has-task", g.TaskKey, wt.Branch, g.WorktreePath, g.TaskKey)}
	awaiting := ""
	if wt.Key != gitrepo.MainKey {
		if awaiting, _, err = alloc.AwaitingBackfill(tx, wt.Key); err != nil {
			return out, err
		}
	}
	switch {
	case wt.Key == gitrepo.MainKey:
		p.Hint = fmt.Sprintf("switch the canonical checkout back to its own branch: git -C %s switch BRANCH", path)
	case awaiting == g.AllocationID && wt.Path == g.WorktreePath:
		// The task's own worktree, bound but not (yet) registered.
		p.Hint = fmt.Sprintf("it is bound to the task but not registered: wt-admin --repo %s backfill proves and registers it", repoArg)
	default:
		p.Hint = fmt.Sprintf("if it holds nothing you need, remove it: git -C %s worktree remove %s (git refuses if it has changes)", repoArg, path)
	}
	return append(out, p), nil
}

// LeaseView is a lease as status shows it.
type LeaseView struct {
	LeaseID    string            `json:"lease_id"`
	Holder     proc.Holder       `json:"holder"`
	Generation int               `json:"generation"`
	Freshness  string            `json:"freshness"`
	ExpiresAt  *string           `json:"expires_at"`
	Child      *store.ChildGroup `json:"child"`
	// Fleet is the fleet side (fleet mode): task key and revision.
	Fleet *store.FleetLease `json:"fleet,omitempty"`
	// Confined is the Landlock confinement of its command, if any.
	Confined *store.Confinement `json:"confined,omitempty"`
}

// Pending is an operation in flight or interrupted.
type Pending struct {
	TransactionID string        `json:"transaction_id"`
	Operation     string        `json:"operation"`
	Phase         string        `json:"phase"`
	Target        string        `json:"target"`
	Actor         proc.Identity `json:"actor"`
	ActorLive     bool          `json:"actor_live"`
}

// StatusResult is the status view.
type StatusResult struct {
	Code    string       `json:"code"`
	Policy  store.Policy `json:"policy"`
	Rows    []Row        `json:"worktrees"`
	Pending []Pending    `json:"pending"`
	// Next lists registration maintenance that is due, each with the
	// exact command.
	Next []Next `json:"next"`
	// Publication is who holds the publication lease (nil: nobody), and
	// ReadyQueue the tasks wt-admin land --ready lands next, in order.
	Publication *PublicationView `json:"publication_lease"`
	ReadyQueue  []string         `json:"ready_queue"`
	// Behind are the checkouts of the publication branch a landing left
	// behind (their own changes kept them from following it).
	Behind   []BehindCheckout `json:"checkouts_behind,omitempty"`
	Warnings []string         `json:"-"`
}

// PublicationView is the publication lease as status and doctor show it:
// its holder, and whether that lander still runs ("" Unknown when that
// could be read).
type PublicationView struct {
	store.PublicationLease
	Live    bool   `json:"live"`
	Unknown string `json:"unknown,omitempty"`
	// Waiting are the pids of the landers in line for it (status only),
	// first come first.
	Waiting []int `json:"waiting,omitempty"`
}

// ReadPublication is the publication lease of the store tx reads, as a
// view (nil when no lander holds it).
func ReadPublication(tx *store.Tx) (*PublicationView, error) {
	l, ok, err := tx.PublicationLease()
	if err != nil || !ok {
		return nil, err
	}
	v := &PublicationView{PublicationLease: l}
	live, err := proc.IsLive(proc.NewReader(), l.Holder.Identity())
	if err != nil {
		v.Unknown = err.Error() // not taken for dead
	}
	v.Live = live
	return v, nil
}

// landings fills the rows' landing records, the problems of a task
// handed back, and the ready queue.
func (p *statusPass) landings() error {
	ls, err := p.tx.Landings()
	if err != nil {
		return err
	}
	byID := map[string]store.Landing{}
	for _, l := range ls {
		byID[l.AllocationID] = l
		if a, ok := p.byID[l.AllocationID]; ok && l.State == store.LandingReady && a.Lifecycle != store.Released {
			p.res.ReadyQueue = append(p.res.ReadyQueue, l.TaskKey)
		}
	}
	for i := range p.res.Rows {
		row := &p.res.Rows[i]
		l, ok := byID[row.AllocationID]
		if row.AllocationID == "" || !ok {
			continue
		}
		row.Landing, row.LandingState = &l, l.State
		switch l.State {
		case store.LandingLanded:
			if tip, err := gitrepo.ReadRef(p.r.Git.CommonDir, "refs/heads/"+row.Branch); err != nil || tip != l.Source {
				row.LandingState = "" // work since it landed
			}
		case store.LandingConflict, store.LandingTestFailed:
			what := "conflicts in " + strings.Join(l.Paths, ", ")
			if l.State == store.LandingTestFailed {
				what = fmt.Sprintf("its test failed (exit %d, output %s)", l.TestExit, l.TestLog)
			}
			row.Problems = append(row.Problems, Problem{Code: l.State,
				Message: fmt.Sprintf("wt-admin land handed task %s back to its owner: %s; the attempt is kept as %s", row.TaskKey, what, l.AttemptRef),
				Hint:    land.HandBackHint(p.repoArg, p.pol.PublicationBranch, row.Path, row.TaskKey, row.Owner, l.State, l.AttemptRef, l.TestLog)})
		}
	}
	return nil
}

// Next is maintenance status points at.
type Next struct {
	Path    string `json:"path"`
	Why     string `json:"why"`
	Command string `json:"command"`
}

// GateCheck tells what a commit in checkout c meets (install.GateState:
// core does not link the installer): by names what gates it, "" when
// nothing does, and then why says why and fix puts it back.
type GateCheck func(ctx context.Context, c gitrepo.Checkout) (by, why, fix string, err error)

// Status lists every worktree git knows (unmanaged ones too) and every live
// allocation whose worktree git no longer lists, with lease freshness from
// one /proc reading, and, with gate given, what a commit in each governed
// worktree meets.
func Status(ctx context.Context, r *alloc.Repo, gate GateCheck) (StatusResult, error) {
	return status(ctx, r, sync.OnceValues(proc.NewScan), gate)
}

// status is Status with the process reading given: Ps shares one reading
// between the freshness of the leases and the processes it lists.
func status(ctx context.Context, r *alloc.Repo, getScan func() (*proc.Scan, error), gate GateCheck) (StatusResult, error) {
	res := StatusResult{Code: decision.StatusShown, Rows: []Row{}, Pending: []Pending{}, Next: []Next{}, ReadyQueue: []string{}}
	inv, err := r.Git.Inventory(ctx)
	if err != nil {
		return res, gitrepo.ListFailed(err)
	}
	err = r.Store.Read(func(tx *store.Tx) error {
		p := statusPass{ctx: ctx, gate: gate, r: r, tx: tx, res: &res, repoArg: shell.Word(r.Git.TopLevel), seen: map[string]bool{}, byID: map[string]store.Allocation{}}
		pol, _, err := tx.Policy()
		if err != nil {
			return err
		}
		res.Policy, p.pol = pol, pol
		all, err := tx.Allocations()
		if err != nil {
			return err
		}
		for _, a := range all {
			p.byID[a.AllocationID] = a
		}
		for _, wt := range inv {
			if err := p.worktree(wt); err != nil {
				return err
			}
		}
		for _, a := range all {
			if !p.seen[a.AllocationID] && a.Lifecycle != store.Released {
				p.missing(a)
			}
		}
		if err := p.leases(getScan, time.Now()); err != nil {
			return err
		}
		if err := p.landings(); err != nil {
			return err
		}
		for i := range res.Rows {
			res.Rows[i].DisplayLifecycle = res.Rows[i].displayLifecycle()
		}
		p.adminDirs(all)
		if res.Publication, err = ReadPublication(tx); err != nil {
			return err
		}
		if res.Publication != nil {
			// The landers in line for it, in arrival order.
			ws, err := waitline.Waiters(store.LandersDir(r.Store.Root()))
			if err != nil {
				res.Warnings = append(res.Warnings, "the landers waiting for the publication lease cannot be listed: "+err.Error())
			}
			for _, w := range ws {
				res.Publication.Waiting = append(res.Publication.Waiting, w.PID)
			}
		}
		return p.pending()
	})
	if err == nil && res.Policy.PublicationBranch != "" {
		// Outside the store's lock: a git per checkout a landing left
		// behind (as a rule none).
		res.Behind = behindCheckouts(ctx, r, inv, res.Policy.PublicationBranch)
	}
	return res, err
}

// BehindCheckout is a checkout of the publication branch that a landing
// moved the branch under and left as it was (it had changes of its own):
// its files are those of From, its HEAD is the branch's tip; git status
// shows the landings as a staged reversal. Fix brings it forward.
type BehindCheckout struct {
	Path string `json:"path"`
	From string `json:"from"`
	Fix  string `json:"fix"`
}

// behindCheckouts are the checkouts a landing recorded as left behind
// that still are (their index still has the recorded tip's files).
func behindCheckouts(ctx context.Context, r *alloc.Repo, inv []gitrepo.Worktree, branch string) []BehindCheckout {
	var out []BehindCheckout
	for path, from := range land.Behind(r.Store.Root()) {
		if !land.StillBehind(ctx, inv, path, branch, from) {
			continue
		}
		out = append(out, BehindCheckout{Path: path, From: from,
			Fix: fmt.Sprintf("git -C %s read-tree -u -m %s %s", shell.Word(path), from, "refs/heads/"+branch)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// adminDirs raises an alarm on each row whose worktree's admin dir holds
// what git, or a program after it, would trip on or run
// (gitrepo.CheckAdmin, which runs no git).
func (p *statusPass) adminDirs(all []store.Allocation) {
	for _, a := range all {
		if a.Lifecycle == store.Released || a.WorktreeKey == "" || a.WorktreeKey == gitrepo.MainKey {
			continue
		}
		ps := gitrepo.CheckAdmin(p.r.Git.CommonDir, a.WorktreeKey, p.r.AdminExpect(a))
		if len(ps) == 0 {
			continue
		}
		var what []string
		for _, x := range ps {
			what = append(what, x.Rel+" "+x.Why)
		}
		for i := range p.res.Rows {
			if p.res.Rows[i].AllocationID == a.AllocationID {
				p.res.Rows[i].Problems = append([]Problem{{Alarm: true, Code: decision.AdminDirUnsafe,
					Message: decision.Words(decision.AdminDirUnsafe, "admin-dir-holds", strings.Join(what, "; ")),
					Fix:     fmt.Sprintf("wt-admin --repo %s quarantine %s", p.repoArg, shell.Word(a.WorktreePath))}}, p.res.Rows[i].Problems...)
			}
		}
	}
}

// statusPass is one status reading, inside one shared section.
type statusPass struct {
	ctx     context.Context
	gate    GateCheck
	r       *alloc.Repo
	tx      *store.Tx
	res     *StatusResult
	repoArg string
	pol     store.Policy
	byID    map[string]store.Allocation
	// seen are the allocations a worktree git lists stands for.
	seen map[string]bool
}

// worktree adds the row of a worktree git lists: its allocation when it
// is registered, what to do next about it, and its gate's problems.
func (p *statusPass) worktree(wt gitrepo.Worktree) error {
	row := Row{Path: wt.Path, Key: wt.Key, Branch: wt.Branch, Head: wt.Head, GitState: "present", Registration: "none"}
	switch {
	case wt.Prunable:
		row.GitState = "prunable"
	case wt.Locked:
		row.GitState = "locked"
	}
	row.Gate = alloc.GateUnmanaged
	var registeredTo *store.Allocation
	if wt.Key == "." {
		row.Registration = "canonical"
	} else if wt.Key != "" {
		var err error
		if registeredTo, err = p.registration(wt, &row); err != nil {
			return err
		}
	}
	gitDir := p.r.Git.CommonDir
	if wt.Key != gitrepo.MainKey {
		gitDir = gitrepo.AdminDir(p.r.Git.CommonDir, wt.Key)
	}
	gp, err := GateProblems(p.tx, p.repoArg, wt, gitDir, registeredTo)
	if err != nil {
		return err
	}
	row.Problems = append(row.Problems, gp...)
	if registeredTo == nil && p.pol.Unmanaged == store.UnmanagedRefuse {
		row.Gate = alloc.GateUnmanaged + " (refused by policy)"
	}
	for _, pr := range row.Problems {
		if pr.Code == decision.WriterLeaseRequired {
			row.Gate = alloc.GateLease + " (another task's branch)"
		}
	}
	if p.gate != nil && registeredTo != nil && registeredTo.Role == store.RoleFeature && !wt.Prunable {
		p.gateState(&row, wt, gitDir)
	}
	p.res.Rows = append(p.res.Rows, row)
	return nil
}

// gateState holds row's gate against what a commit there meets
// (GateCheck): a gate switched off in the worktree alone (its own
// core.hooksPath, its config.worktree) shows as off, with the fix.
func (p *statusPass) gateState(row *Row, wt gitrepo.Worktree, gitDir string) {
	c := gitrepo.Checkout{TopLevel: wt.Path, GitDir: gitDir, CommonDir: p.r.Git.CommonDir, Key: wt.Key}
	by, why, fix, err := p.gate(p.ctx, c)
	switch {
	case err != nil:
		row.Gate += " (not known: " + err.Error() + ")"
		row.Problems = append(row.Problems, Problem{Code: decision.HooksMissing, Message: decision.Words(decision.HooksMissing, "gate-unknown", err),
			Hint: fmt.Sprintf("ask git there: wt-hook -C %s check", shell.Word(wt.Path))})
	case by == "":
		row.Gate = "none: commits meet no gate"
		row.Problems = append(row.Problems, Problem{Alarm: true, Code: decision.HooksMissing,
			Message: decision.Words(decision.HooksMissing, "no-gate-here", why), Fix: fix})
	}
}

// registration fills row from the allocation a linked worktree is bound
// and registered to (returned; nil when none), and says what to do next
// about a gone checkout or a binding awaiting backfill.
func (p *statusPass) registration(wt gitrepo.Worktree, row *Row) (*store.Allocation, error) {
	b, ok, err := p.tx.Binding(wt.Key)
	if err != nil || !ok {
		return nil, err
	}
	reg, registered, err := p.tx.Registered(wt.Key)
	if err != nil {
		return nil, err
	}
	row.Registration = "unregistered"
	a, found := p.byID[b.AllocationID]
	if !found || !registered || reg.AllocationID != a.AllocationID {
		if _, _, hasDoc, err := p.tx.Registration(wt.Key); err != nil {
			return nil, err
		} else if !hasDoc {
			// Awaiting backfill (alloc.AwaitingBackfill): its task is not
			// without a worktree, and backfill, not finish, is what it
			// needs.
			p.seen[b.AllocationID] = true
			p.res.Next = append(p.res.Next, Next{Path: wt.Path, Why: "binding written before registrations existed: backfill proves and registers it",
				Command: fmt.Sprintf("wt-admin --repo %s backfill", p.repoArg)})
		}
		return nil, nil
	}
	row.Registration = "registered"
	row.fill(a)
	p.seen[a.AllocationID] = true
	if wt.Prunable && wt.Path != a.WorktreePath && gitrepo.PointsBack(p.r.Git.CommonDir, wt.Key, a.WorktreePath) {
		row.Problems = append(row.Problems, GitdirRewritten(p.repoArg, a, wt.Path))
		return &a, nil
	}
	if a.Role != store.RoleAudit && wt.Prunable {
		p.res.Next = append(p.res.Next, Next{Path: wt.Path, Why: "task " + a.TaskKey + "'s checkout is gone: finishing it frees the task key",
			Command: FinishCommand(p.repoArg, a, maint.FinishNeedsArchive(p.ctx, p.r, p.pol.PublicationBranch, a, wt.Head))})
	}
	if a.Role == store.RoleAudit && a.Lifecycle == store.Retained && wt.Prunable {
		p.res.Next = append(p.res.Next, Next{Path: wt.Path, Why: "retained audit whose checkout is gone: its registration can be pruned",
			Command: fmt.Sprintf("wt-admin --repo %s prune %s --owner %s", p.repoArg, shell.Word(wt.Path), shell.Word(a.Owner))})
	}
	return &a, nil
}

// missing adds the row of a live allocation no registered worktree
// stands for: removed, or re-created by git.
func (p *statusPass) missing(a store.Allocation) {
	row := Row{Path: a.WorktreePath, Key: a.WorktreeKey, GitState: "missing", Registration: "unregistered"}
	if _, err := os.Lstat(a.WorktreePath); err == nil {
		row.GitState = "unlisted"
	}
	row.fill(a)
	finish := FinishCommand(p.repoArg, a, maint.FinishNeedsArchive(p.ctx, p.r, p.pol.PublicationBranch, a, ""))
	row.Problems = append(row.Problems, Problem{Code: decision.UnregisteredWorktree,
		Message: decision.Words(decision.UnregisteredWorktree, "task-but-wt", a.TaskKey, a.Lifecycle, a.WorktreePath),
		Hint:    "finish the task (its dry run shows what it keeps): " + finish})
	p.res.Next = append(p.res.Next, Next{Path: a.WorktreePath, Why: "task " + a.TaskKey + " has no worktree any more: finishing it frees the task key", Command: finish})
	p.res.Rows = append(p.res.Rows, row)
}

// leases adds each row's lease with its freshness, and the alarm of a
// checkout that vanished under a live holder.
func (p *statusPass) leases(getScan func() (*proc.Scan, error), now time.Time) error {
	for i := range p.res.Rows {
		row := &p.res.Rows[i]
		if row.Problems == nil {
			row.Problems = []Problem{}
		}
		if row.AllocationID == "" {
			continue
		}
		p.kept(row)
		if a, ok := p.byID[row.AllocationID]; ok {
			row.Problems = append(BranchProblems(p.r.Git.CommonDir, p.r.Store.Root(), p.repoArg, a), row.Problems...)
			row.Occupants = lease.Occupants(a)
			for _, o := range row.Occupants {
				row.Problems = append(row.Problems, OccupantProblem(p.repoArg, a.WorktreePath, o))
				row.Gate = alloc.GateLease + " (occupied: no writer is let in)"
			}
		}
		l, ok, err := p.tx.Lease(row.AllocationID)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		s, err := getScan()
		if err != nil {
			return err
		}
		row.Lease = &LeaseView{LeaseID: l.LeaseID, Holder: l.Holder, Generation: l.Generation,
			Freshness: liveness.Freshness(s, l, now), ExpiresAt: l.ExpiresAt, Child: l.Child, Fleet: l.Fleet, Confined: l.Confined}
		if row.Lease.Freshness == liveness.FreshMissingWorktree && s.IsLive(l.Holder.Identity()) {
			row.Problems = append([]Problem{VanishedUnderHolder(p.repoArg, l)}, row.Problems...)
		}
	}
	return nil
}

// kept names the tip a confined run of the row's task could not publish,
// kept under store.KeptPrefix: work that is on no branch until a person looks.
// A ref that cannot be read says so.
func (p *statusPass) kept(row *Row) {
	if row.TaskKey == "" {
		return
	}
	ref := store.KeptPrefix + row.TaskKey
	tip, err := gitrepo.ReadRef(p.r.Git.CommonDir, ref)
	if err == nil && tip == "" {
		return
	}
	pr := Problem{Code: decision.PublishConflict, Hint: fmt.Sprintf("compare them: git -C %s log --oneline --graph refs/heads/%s %s; once it is taken or not wanted: git -C %s update-ref -d %s",
		p.repoArg, row.Branch, ref, p.repoArg, ref)}
	if err != nil {
		pr.Message = fmt.Sprintf("%s cannot be read: %v", ref, err)
	} else {
		pr.Message = fmt.Sprintf("a confined run of task %s could not publish %s: its branch moved outside the run; it is kept as %s", row.TaskKey, gitrepo.Short(tip), ref)
	}
	row.Problems = append(row.Problems, pr)
}

// pending lists the journals in flight, and warns of an interrupted
// allocate.
func (p *statusPass) pending() error {
	js, err := p.tx.Journals()
	if err != nil {
		return err
	}
	pr := proc.NewReader()
	for _, j := range js {
		live, _ := proc.IsLive(pr, j.Actor) // Best effort: an error reads as not live, which status only reports.
		p.res.Pending = append(p.res.Pending, Pending{TransactionID: j.TransactionID, Operation: j.Operation,
			Phase: j.Phase, Target: j.Target, Actor: j.Actor, ActorLive: live})
		if !live && j.Operation == alloc.OpAllocate {
			p.res.Warnings = append(p.res.Warnings, "an allocate of "+j.Target+" was interrupted; wt-admin recover (or the next allocate) finishes or undoes it")
		}
	}
	return nil
}

// OccupantProblem is RUNTIME_OCCUPIED for occupant o of the worktree at
// path: what it is, which run it outlived, and what ends it.
func OccupantProblem(repoArg, path string, o lease.Occupant) Problem {
	return Problem{Code: decision.RuntimeOccupied, Message: o.Describe(path), Fix: fmt.Sprintf("kill -TERM %d", o.PID),
		Hint: fmt.Sprintf("see it first with wt-admin --repo %s ps %s (the run of client %s ended with it still there); a tmux window or terminal left in the worktree is the usual one: close it", repoArg, shell.Word(path), o.ClientID)}
}

// GitdirRewritten is GIT_POINTER_MISMATCH for allocation a's worktree
// when git's record of where it is (its admin dir's gitdir) names at, while
// its checkout is in place at a.WorktreePath and points back: git takes
// it for deleted, and git worktree prune would drop it.
func GitdirRewritten(repoArg string, a store.Allocation, at string) Problem {
	return Problem{Alarm: true, Code: decision.GitPointerMismatch,
		Message: decision.Words(decision.GitPointerMismatch, "task-checkout", a.TaskKey, a.WorktreePath, at),
		Fix:     fmt.Sprintf("git -C %s worktree repair %s", repoArg, shell.Word(a.WorktreePath))}
}

// VanishedUnderHolder is the alarm of a leased worktree whose checkout is
// gone while its holder runs: whatever the writer had not committed is
// lost, and it goes on writing into a directory that is not there.
func VanishedUnderHolder(repoArg string, l store.Lease) Problem {
	return Problem{Alarm: true, Code: decision.LeasedCheckoutMissing,
		Message: decision.Words(decision.LeasedCheckoutMissing, "checkout-gone", l.Holder.ClientID, l.Holder.PID, l.LeaseID),
		Hint:    fmt.Sprintf("see what it runs with wt-admin --repo %s ps %s, stop it (kill -TERM %d), then finish or re-allocate the task", repoArg, shell.Word(l.WorktreePath), l.Holder.PID)}
}

// FinishCommand is the dry run of finishing allocation a, in repository
// repoArg (a shell word), with --archive when its work needs it
// (maint.FinishNeedsArchive): the form finish takes.
func FinishCommand(repoArg string, a store.Allocation, archive bool) string {
	cmd := fmt.Sprintf("wt-admin --repo %s finish --task %s --owner %s", repoArg, shell.Word(a.TaskKey), shell.Word(a.Owner))
	if archive {
		cmd += " --archive"
	}
	return cmd
}

func (row *Row) fill(a store.Allocation) {
	row.Managed = true
	row.Gate = alloc.GateOf(a)
	row.AllocationID, row.TaskKey, row.Role, row.Owner, row.Lifecycle = a.AllocationID, a.TaskKey, a.Role, a.Owner, a.Lifecycle
	if a.Branch != nil && row.Branch == "" {
		row.Branch = *a.Branch
	}
}
