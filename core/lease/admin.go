package lease

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/liveness"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// The operator's side of the lease lifecycle (docs/design.md, "Writer leases"): inspect a
// lease for a caller, and end or hand over a dead one only with proof read
// from live evidence. Every decision is taken inside one exclusive store
// section, on one reading of /proc made inside it, so what was proved is
// what is changed.

// Safe next actions (docs/design.md, "Writer leases"): what a caller may safely do about a lease.
const (
	OwnerResume       = "owner_resume"
	WaitForeignActive = "wait_foreign_active"
	ReclaimExpired    = "reclaim_expired"
	AbandonAllowed    = "abandon_allowed"
	ReleaseOwned      = "release_owned"
	InspectOnly       = "inspect_only"
	// ConsumeCrossRoleHandoff: the worktree's next grant is reserved for
	// the caller (a handoff) and nothing holds it now: run wt-exec.
	ConsumeCrossRoleHandoff = "consume_cross_role_handoff"
	// StalePromptLease: the caller named a lease (--lease-id) that is no
	// longer the worktree's: it ended, or another replaced it.
	StalePromptLease = "stale_prompt_lease"
	// FileOrCommentNotAuthoritative: git's lock of the worktree carries
	// wt's reason, but no lease stands behind it: the lock file alone
	// entitles nobody.
	FileOrCommentNotAuthoritative = "file_or_comment_not_authoritative"
)

// Caller is who asks about a lease: the client and session it runs as
// (wt-exec's --client-id and --session-id). The zero Caller owns nothing.
type Caller struct {
	ClientID  string
	SessionID *string
}

// owns reports whether the lease's holder is the caller: the same client and
// the same session (both absent counts as the same), as in proc.Holder.Same.
func (c Caller) owns(h proc.Holder) bool {
	return c.ClientID != "" && c.ClientID == h.ClientID &&
		(c.SessionID == nil) == (h.SessionID == nil) && (c.SessionID == nil || *c.SessionID == *h.SessionID)
}

// Proof is the live evidence about one lease at one moment, in the terms
// of docs/decisions.md ("The lease lifecycle"). Abandon stores it in its
// event.
type Proof struct {
	HolderLive      bool `json:"holder_live"`
	DeadProcess     bool `json:"dead_process"`
	MissingWorktree bool `json:"missing_worktree"`
	Expired         bool `json:"expired"`
	// NoLiveMutationRisk: nothing of the lease runs (holder, its group,
	// the child group, a carrier of WT_LEASE_ID) and no other process uses
	// the worktree. Risk says what does, when something does.
	NoLiveMutationRisk bool   `json:"no_live_mutation_risk"`
	Risk               string `json:"risk,omitempty"`
	SameOwner          bool   `json:"same_owner"`
	OperatorAuthorized bool   `json:"operator_authorized"`
	WorktreePath       string `json:"worktree_path"`
	HolderPID          int    `json:"holder_pid"`
}

// Assess is the proof about lease l for caller, from one reading ev (for
// wt-admin doctor).
func Assess(ev Evidence, l store.Lease, now time.Time, caller Caller) Proof {
	return assess(ev, l, now, caller)
}

// assess gathers the proof for lease l from one reading ev. Processes in
// skip are not evidence (an adopter in its own worktree).
func assess(ev Evidence, l store.Lease, now time.Time, caller Caller, skip ...int) Proof {
	p := Proof{WorktreePath: l.WorktreePath, HolderPID: l.Holder.PID, SameOwner: caller.owns(l.Holder),
		Expired: liveness.Expired(l, now), HolderLive: ev.IsLive(l.Holder.Identity())}
	p.DeadProcess = !p.HolderLive
	if _, err := os.Lstat(l.WorktreePath); errors.Is(err, fs.ErrNotExist) {
		p.MissingWorktree = true
	}
	p.Risk = survivors(ev, l, skip...)
	p.NoLiveMutationRisk = p.Risk == ""
	return p
}

// sufficient is the abandon rule (docs/design.md, "Writer leases"): (holder dead or worktree missing)
// and no live mutation risk; a lease that is not the caller's also needs the
// operator's word, unless its holder is dead and its worktree missing.
func (p Proof) sufficient() (bool, string) {
	switch {
	case !p.NoLiveMutationRisk:
		return false, p.Risk
	case !p.DeadProcess && !p.MissingWorktree:
		return false, "its holder is running and its worktree exists"
	case p.SameOwner || p.OperatorAuthorized || p.DeadProcess && p.MissingWorktree:
		return true, ""
	}
	return false, "the lease is not yours and its worktree still exists: an operator must decide (--operator)"
}

// Inspection is `wt-admin lease inspect`: the lease of one worktree, its
// freshness, and the safe next action for the caller, with the command
// that carries it out.
type Inspection struct {
	// Handback is the hand-back file of a task wt-admin land handed back
	// (store.HandbackPath), while it is.
	Handback       string      `json:"handback,omitempty"`
	Path           string      `json:"path"`
	TaskKey        string      `json:"task_key"`
	AllocationID   string      `json:"allocation_id"`
	Lease          store.Lease `json:"lease"`
	Freshness      string      `json:"freshness"`
	SafeNextAction string      `json:"safe_next_action"`
	// Block is true when the caller must not take, end or hand over the
	// lease now.
	Block       bool     `json:"block"`
	AlsoAllowed []string `json:"also_allowed"`
	Reasons     []string `json:"reasons"`
	// Next is the command that carries the action out ("" when the action
	// is to wait or to look closer).
	Next  string `json:"next,omitempty"`
	Proof Proof  `json:"proof"`
	// Handoff is the reservation of the worktree's next grant, if one is
	// pending.
	Handoff *store.Handoff `json:"handoff,omitempty"`
	// GitLock is git's lock reason of the worktree when it names a wt
	// lease but no lease stands behind it (not authoritative).
	GitLock string `json:"git_lock,omitempty"`
	// Occupant is a process the last run left in the worktree, which
	// keeps every writer out until it ends (RUNTIME_OCCUPIED).
	Occupant *Occupant `json:"occupant,omitempty"`
}

// found is a worktree's allocation and current lease, read inside a store
// section.
type found struct {
	t alloc.Target
	l store.Lease
}

// leaseAt resolves path to its allocation and reads its current lease;
// NO_WRITER_LEASE when it has none.
func leaseAt(r *alloc.Repo, tx *store.Tx, path string) (found, error) {
	t, err := r.Resolve(tx, path)
	if err != nil {
		return found{}, err
	}
	l, ok, err := tx.Lease(t.Allocation.AllocationID)
	if err != nil {
		return found{}, err
	}
	if !ok {
		return found{}, decision.Say(decision.NoWriterLease, "task-has", t.Path, t.Allocation.TaskKey).
			WithHint("nothing to end; a writer takes one with wt-exec -C %s -- COMMAND", shell.Word(t.Path))
	}
	return found{t, l}, nil
}

// mismatch says how the lease disagrees with the worktree it was found
// through, or "": a lease recorded for another path (the worktree was
// moved) is ambiguous, and every command on it is inspect-only.
func (f found) mismatch() string {
	if f.l.WorktreePath != f.t.Path || f.t.Allocation.WorktreePath != f.l.WorktreePath {
		return fmt.Sprintf("worktree mismatch: the lease records %s, the allocation %s, and it was found at %s",
			f.l.WorktreePath, f.t.Allocation.WorktreePath, f.t.Path)
	}
	return ""
}

// Inspect classifies the lease of the worktree at path for caller. leaseID,
// when set, is the lease the caller was told of (a prompt, a note): if it
// is not the worktree's lease any more, the answer is stale_prompt_lease.
// With no lease, a pending handoff, or git's lock naming a lease that is
// not there, is still answered; otherwise NO_WRITER_LEASE.
func Inspect(r *alloc.Repo, path string, caller Caller, leaseID string) (Inspection, error) {
	var in Inspection
	if leaseID != "" {
		if err := ValidLeaseID(leaseID); err != nil {
			return in, err
		}
	}
	err := r.Store.Read(func(tx *store.Tx) error {
		t, err := r.Resolve(tx, path)
		if err != nil {
			return err
		}
		a := t.Allocation
		in = Inspection{Path: t.Path, TaskKey: a.TaskKey, AllocationID: a.AllocationID, AlsoAllowed: []string{}}
		if rec, ok, err := tx.Landing(a.AllocationID); err != nil {
			return err
		} else if ok && (rec.State == store.LandingConflict || rec.State == store.LandingTestFailed) {
			in.Handback = rec.Handback
		}
		if h, ok, err := tx.Handoff(a.AllocationID); err != nil {
			return err
		} else if ok {
			if !h.Expired(time.Now()) {
				in.Handoff = &h
			}
		}
		l, has, err := tx.Lease(a.AllocationID)
		if err != nil {
			return err
		}
		if !has {
			return in.unleased(r, a, caller, leaseID)
		}
		ev, err := proc.NewScan()
		if err != nil {
			return decision.SayWrap(decision.Internal, err, "read-proc")
		}
		now := time.Now()
		in.Lease, in.Freshness, in.Proof = l, liveness.Freshness(ev, l, now), assess(ev, l, now, caller)
		in.decide(found{t, l}.mismatch())
		in.promptAndHandoff(caller, leaseID)
		return nil
	})
	if d, ok := decision.As(err); ok && in.Handback != "" {
		err = d.WithFact("handback", in.Handback)
	}
	return in, err
}

// unleased answers for a worktree with no lease: the caller's prompt named
// one that ended; a handoff waits for the caller (or another); git's lock
// names a lease that is not there; or NO_WRITER_LEASE.
func (in *Inspection) unleased(r *alloc.Repo, a store.Allocation, caller Caller, leaseID string) error {
	path := shell.Word(in.Path)
	in.Freshness = "none"
	in.GitLock = OrphanLock(r.Git.CommonDir, a)
	occupants := Occupants(a) // read once: one may exit meanwhile
	switch {
	case leaseID != "":
		in.SafeNextAction, in.Block = StalePromptLease, true
		in.Reasons = []string{fmt.Sprintf("lease %s is not the worktree's: it has none now (it ended); do not act on it", leaseID)}
		in.Next = "wt-admin lease list --all"
	case in.Handoff != nil && in.Handoff.ToClient == caller.ClientID:
		in.SafeNextAction = ConsumeCrossRoleHandoff
		in.Reasons = []string{fmt.Sprintf("the next grant is reserved for you (client %s) until %s, and nobody holds the worktree", caller.ClientID, in.Handoff.ExpiresAt)}
		in.Next = fmt.Sprintf("wt-exec -C %s --client-id %s -- COMMAND", path, shell.Word(caller.ClientID))
	case in.Handoff != nil:
		in.SafeNextAction, in.Block = WaitForeignActive, true
		in.Reasons = []string{fmt.Sprintf("the next grant is reserved for client %s until %s", in.Handoff.ToClient, in.Handoff.ExpiresAt)}
	case len(occupants) > 0:
		// No lease, and no writer let in: a process the last run left
		// there fences the worktree until it ends (RUNTIME_OCCUPIED).
		o := occupants[0]
		in.SafeNextAction, in.Block = WaitForeignActive, true
		in.Occupant = &o
		in.Reasons = []string{decision.RuntimeOccupied + ": " + decision.Words(decision.RuntimeOccupied, "occupant-ends", o.Describe(in.Path), o.PID)}
		in.Next = fmt.Sprintf("wt-exec -C %s --wait -- COMMAND", path)
	case in.GitLock != "":
		in.SafeNextAction = FileOrCommentNotAuthoritative
		in.Reasons = []string{fmt.Sprintf("git's lock says %q, but no such lease is in wt's store: the lock file alone entitles nobody (a grant or release cut short left it)", in.GitLock)}
		in.Next = "git -C " + path + " worktree unlock " + path
	default:
		return decision.Say(decision.NoWriterLease, "task-has", in.Path, in.TaskKey).
			WithHint("nothing to end; a writer takes one with wt-exec -C %s -- COMMAND", path)
	}
	return nil
}

// OrphanLock is git's lock reason of a's worktree when it names a wt lease
// that has no lease file and no grant in progress behind it (a grant or a
// release cut short between its two writes): not authoritative, since
// only the store's lease entitles. "" otherwise, and when a has a lease
// (the caller reads it) or the lock cannot be read.
func OrphanLock(commonDir string, a store.Allocation) string {
	reason, locked, err := gitrepo.ReadLock(commonDir, a.WorktreeKey)
	if err != nil || !locked || !isWtReason(reason) || grantInProgress(a, reason) {
		return ""
	}
	return reason
}

// grantInProgress reports whether git's lock reason names a lease whose
// runtime binding is on a and whose wt-exec runs: a grant between its
// reservation and its lease (in fleet mode, while etcd is asked).
func grantInProgress(a store.Allocation, reason string) bool {
	id := strings.TrimPrefix(reason, reasonPrefix)
	if len(id) < 36 {
		return false
	}
	id = id[:36]
	for _, v := range a.ExternalBindings {
		b, ok, err := proc.DecodeRuntimeBinding(v)
		if err == nil && ok && b.LeaseID != nil && *b.LeaseID == id && running(b.Holder) {
			return true
		}
	}
	return false
}

// promptAndHandoff adds what a lease inspection says beyond the lease
// itself: a prompt's lease that is not this one, a handoff for the caller.
func (in *Inspection) promptAndHandoff(caller Caller, leaseID string) {
	path := shell.Word(in.Path)
	switch {
	case leaseID != "" && leaseID != in.Lease.LeaseID:
		in.SafeNextAction, in.Block, in.AlsoAllowed, in.Next = StalePromptLease, true, []string{}, "wt-admin lease inspect "+path
		in.Reasons = []string{fmt.Sprintf("lease %s is not the worktree's: its lease is %s (generation %d) now; do not act on the old one", leaseID, in.Lease.LeaseID, in.Lease.Generation)}
	case in.Handoff != nil && in.Handoff.ToClient == caller.ClientID && !in.Proof.HolderLive && in.Proof.NoLiveMutationRisk:
		in.SafeNextAction, in.Block, in.AlsoAllowed = ConsumeCrossRoleHandoff, false, []string{}
		in.Reasons = append(in.Reasons, fmt.Sprintf("the next grant is reserved for you (client %s) until %s", caller.ClientID, in.Handoff.ExpiresAt))
		in.Next = fmt.Sprintf("wt-exec -C %s --client-id %s -- COMMAND", path, shell.Word(caller.ClientID))
	case in.Handoff != nil:
		in.Reasons = append(in.Reasons, fmt.Sprintf("its next grant is reserved for client %s until %s", in.Handoff.ToClient, in.Handoff.ExpiresAt))
	}
}

// decide sets the safe next action from the proof (docs/decisions.md,
// "The lease lifecycle"; expiry alone never makes a lease dead):
//
//   - a worktree mismatch: inspect_only;
//   - the caller's own lease whose holder runs (even expired): owner_resume;
//   - the caller's own lease whose holder exited, something still running:
//     owner_resume (it is the caller's own work; let it finish);
//   - the caller's own lease, nothing running: release_owned (or adopt it);
//   - anyone else's lease with something running (its holder, its group,
//     a carrier, a user of the worktree): wait_foreign_active, expired or
//     not, because nothing may end it while it runs;
//   - nothing running and past its expiry: reclaim_expired (lease expire);
//   - nothing running otherwise: abandon_allowed (with --operator unless
//     the holder is dead and the worktree missing).
func (in *Inspection) decide(mismatch string) {
	p, l := in.Proof, in.Lease
	path := shell.Word(in.Path)
	expiry := ""
	if p.Expired {
		expiry = fmt.Sprintf("; it expired at %s, so its holder may not commit until it renews", deref(l.ExpiresAt))
	}
	switch {
	case mismatch != "":
		in.SafeNextAction, in.Block = InspectOnly, true
		in.Reasons = []string{mismatch + " (fail closed)"}
	case p.SameOwner && p.HolderLive:
		in.SafeNextAction = OwnerResume
		in.Reasons = []string{fmt.Sprintf("the lease is yours and its holder (pid %d) is running%s", l.Holder.PID, expiry)}
		if p.Expired {
			in.Next = fmt.Sprintf("wt-exec -C %s --client-id %s --holder %d --ttl DURATION -- COMMAND", path, l.Holder.ClientID, l.Holder.PID)
		}
	case p.SameOwner && !p.NoLiveMutationRisk:
		in.SafeNextAction, in.Block = OwnerResume, true
		in.Reasons = []string{"the lease is yours; its holder exited but " + p.Risk + ": let that finish, then release it"}
		in.Next = "wt-admin ps " + path
	case p.SameOwner:
		in.SafeNextAction = ReleaseOwned
		in.AlsoAllowed = []string{OwnerResume, AbandonAllowed}
		in.Reasons = []string{fmt.Sprintf("the lease is yours, its holder (pid %d) exited and nothing of it runs: release it, or adopt it to go on", l.Holder.PID)}
		in.Next = fmt.Sprintf("wt-admin lease release %s --lease-id %s", path, l.LeaseID)
	case !p.NoLiveMutationRisk && !p.HolderLive:
		in.SafeNextAction, in.Block = WaitForeignActive, true
		in.Reasons = []string{fmt.Sprintf("the lease is orphaned: the wt-exec of client %s (pid %d) is gone but %s; see them with wt-admin ps %s, and hand the lease to the one that goes on writing with wt-admin lease adopt %s --client-id %s --holder PID",
			l.Holder.ClientID, l.Holder.PID, p.Risk, path, path, shell.Word(l.Holder.ClientID))}
		in.Next = "wt-admin ps " + path
	case !p.NoLiveMutationRisk:
		in.SafeNextAction, in.Block = WaitForeignActive, true
		in.Reasons = []string{fmt.Sprintf("client %s holds it and %s%s: do not take it (fail closed)", l.Holder.ClientID, p.Risk, expiry)}
		in.Next = "wt-admin ps " + path
	case p.Expired:
		in.SafeNextAction = ReclaimExpired
		in.AlsoAllowed = []string{AbandonAllowed}
		in.Reasons = []string{fmt.Sprintf("it expired at %s and nothing of it runs: record it as expired and reclaim the worktree", deref(l.ExpiresAt))}
		in.Next = "wt-admin lease expire"
	case p.MissingWorktree:
		// The same command doctor prints for it.
		in.SafeNextAction = AbandonAllowed
		in.Reasons = []string{"its worktree is gone and nothing of it runs; abandon it"}
		in.Next = fmt.Sprintf("wt-admin lease abandon %s --reason %s", path, shell.Word("worktree removed"))
	default:
		// Release by its exact id, as doctor prints it: the id is the
		// proof of intent, and no operator's word is needed.
		in.SafeNextAction = AbandonAllowed
		in.Reasons = []string{"its holder exited and nothing of it runs: release it by its id (wt-exec may also take the worktree over; abandon, with a reason and --operator, also ends it)"}
		in.Next = fmt.Sprintf("wt-admin lease release %s --lease-id %s", path, l.LeaseID)
	}
}

// Ended says what an operator command did to a lease.
type Ended struct {
	Path         string      `json:"path"`
	TaskKey      string      `json:"task_key"`
	AllocationID string      `json:"allocation_id"`
	Lease        store.Lease `json:"lease"`
	Proof        Proof       `json:"proof"`
	// BindingsRemoved are the lease's runtime bindings taken off the
	// allocation with it.
	BindingsRemoved []string `json:"bindings_removed"`
	// Adopted is the lease that replaced it (adopt only).
	Adopted *store.Lease `json:"adopted,omitempty"`
	// Transferred is the lease as a transfer left it (transfer only).
	Transferred *store.Lease `json:"transferred,omitempty"`
}

// endLease removes lease l of allocation a with git's lock that mirrors it
// and the runtime bindings that name it (their holders are gone: the
// callers proved it), and logs event name.
func endLease(r *alloc.Repo, tx *store.Tx, a store.Allocation, l store.Lease, name string, detail map[string]any) ([]string, error) {
	removed, err := dropBindings(tx, &a, l.LeaseID)
	if err != nil {
		return nil, err
	}
	if err := tx.RemoveLease(a.AllocationID); err != nil {
		return nil, err
	}
	removeCgroup(l)
	if _, err := gitrepo.RemoveLock(r.Git.CommonDir, a.WorktreeKey, Reason(l)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, decision.SayWrap(decision.Internal, err, "unlock-worktree", l.WorktreePath)
	}
	detail["bindings_removed"] = removed
	tx.Durable()
	return removed, logEvent(tx, name, a, &l, detail)
}

// dropBindings removes from a the runtime bindings of lease leaseID.
func dropBindings(tx *store.Tx, a *store.Allocation, leaseID string) ([]string, error) {
	removed := []string{}
	keep := []string{}
	for _, v := range a.ExternalBindings {
		b, ok, err := proc.DecodeRuntimeBinding(v)
		if err != nil {
			return nil, err
		}
		if ok && b.LeaseID != nil && *b.LeaseID == leaseID {
			removed = append(removed, v)
			continue
		}
		keep = append(keep, v)
	}
	if len(removed) == 0 {
		return removed, nil
	}
	a.ExternalBindings = keep
	a.UpdatedAt = store.Stamp(time.Now())
	return removed, tx.PutAllocationRuntime(a)
}

// Expect is what an operator command expects of the lease it acts on:
// its exact id, its generation, the checkout's HEAD (each when set). A
// mismatch refuses (WRITER_LEASE_MISMATCH, STALE_HEAD) before anything
// is changed.
type Expect struct {
	LeaseID    string
	Generation *int
	Head       string
}

// check refuses unless lease l of the worktree at path (admin dir
// adminDir) is as e expects.
func (e Expect) check(r *alloc.Repo, f found) error {
	path := shell.Word(f.t.Path)
	if e.LeaseID != "" && f.l.LeaseID != e.LeaseID {
		return decision.Say(decision.WriterLeaseMismatch, "lease-not", f.t.Path, f.l.LeaseID, e.LeaseID).
			WithHint("act only on the lease you mean: look at it with wt-admin lease inspect %s", path).
			WithFact("lease_id", f.l.LeaseID)
	}
	return expectedState(f.t.Path, f.l.Generation, e.Generation, gitrepo.AdminDir(r.Git.CommonDir, f.t.Allocation.WorktreeKey), r.Git.CommonDir, e.Head)
}

// ValidExpect checks the expectations given on a command line.
func ValidExpect(e Expect) error {
	if e.LeaseID != "" {
		if err := ValidLeaseID(e.LeaseID); err != nil {
			return err
		}
	}
	if e.Generation != nil && *e.Generation < 0 {
		return decision.Say(decision.Usage, "expect-generation-generation", *e.Generation).
			WithHint("copy it from wt-admin lease inspect PATH")
	}
	if e.Head != "" && !gitrepo.FullObjectName(e.Head) {
		return decision.Say(decision.Usage, "expect-head", e.Head).
			WithHint("git -C PATH rev-parse HEAD")
	}
	return nil
}

// operate runs fn on the lease of the worktree at path inside one exclusive
// section, with the proof read there for caller, once the lease is as
// expect says.
func operate(r *alloc.Repo, path string, caller Caller, expect Expect, fn func(tx *store.Tx, f found, out *Ended, ev Evidence) error) (Ended, error) {
	var out Ended
	if err := ValidExpect(expect); err != nil {
		return out, err
	}
	err := r.Store.Write(func(tx *store.Tx) error {
		f, err := leaseAt(r, tx, path)
		if err != nil {
			return err
		}
		if m := f.mismatch(); m != "" {
			return decision.Say(decision.WriterLeaseMismatch, "as-given", m).
				WithHint("inspect it with wt-admin lease inspect %s; move the worktree back to where the lease says", shell.Word(f.t.Path))
		}
		if err := expect.check(r, f); err != nil {
			return err
		}
		ev, err := proc.NewScan()
		if err != nil {
			return decision.SayWrap(decision.Internal, err, "read-proc")
		}
		p := assess(ev, f.l, time.Now(), caller)
		out = Ended{Path: f.t.Path, TaskKey: f.t.Allocation.TaskKey, AllocationID: f.t.Allocation.AllocationID, Lease: f.l, Proof: p, BindingsRemoved: []string{}}
		return fn(tx, f, &out, ev)
	})
	return out, err
}

// ValidLeaseID checks a lease id given on the command line: a uuid in its
// canonical 36-character form.
func ValidLeaseID(id string) error {
	if !ids.Valid(id) || strings.ToLower(id) != id {
		return decision.Say(decision.Usage, "lease-id", id).
			WithHint("copy it from wt-admin lease list or wt-admin lease inspect PATH")
	}
	return nil
}

// ReleaseDead is `wt-admin lease release`: it ends the lease of the worktree
// at path, named by its exact id, whose holder has exited, when nothing of
// it survives (the release rule of docs/decisions.md). A running holder releases its own
// lease when its wt-exec ends.
func ReleaseDead(r *alloc.Repo, path string, expect Expect) (Ended, error) {
	if expect.LeaseID == "" {
		return Ended{}, decision.Say(decision.Usage, "lease-release").
			WithHint("copy it from wt-admin lease inspect %s", shell.Word(path))
	}
	return operate(r, path, Caller{}, expect, func(tx *store.Tx, f found, out *Ended, ev Evidence) error {
		p := out.Proof
		if !p.NoLiveMutationRisk {
			return held(f.l, f.t.Path, p.Risk)
		}
		removed, err := endLease(r, tx, f.t.Allocation, f.l, "writer_lease_released", map[string]any{
			"generation": f.l.Generation, "acquired_at": f.l.AcquiredAt, "holder_exited": true, "by_operator": true, "proof": p})
		out.BindingsRemoved = removed
		return err
	})
}

// Abandon is `wt-admin lease abandon`: it ends a lease with sufficient proof
// (Proof.sufficient), storing the proof, the reason and the actor in the
// event.
func Abandon(r *alloc.Repo, path, reason string, operator bool, caller Caller, expect Expect) (Ended, error) {
	reason = strings.TrimSpace(reason)
	if err := store.ValidText("reason", reason); err != nil {
		return Ended{}, err
	}
	if reason == "" {
		return Ended{}, decision.Say(decision.Usage, "reason-must-say").
			WithHint("e.g. --reason \"agent crashed; its work is kept on the branch\"")
	}
	return operate(r, path, caller, expect, func(tx *store.Tx, f found, out *Ended, ev Evidence) error {
		out.Proof.OperatorAuthorized = operator
		p := out.Proof
		if ok, why := p.sufficient(); !ok {
			code := decision.AbandonProofInsufficient
			if p.NoLiveMutationRisk && (p.DeadProcess || p.MissingWorktree) {
				code = decision.OperatorRequired
			}
			return decision.Say(code, "cannot-abandon", f.t.Path, f.l.Holder.ClientID, f.l.Holder.PID, why).
				WithHint("see what keeps it with wt-admin lease inspect %s", shell.Word(f.t.Path)).
				WithFact("proof", p)
		}
		detail := map[string]any{"generation": f.l.Generation, "acquired_at": f.l.AcquiredAt, "reason": reason, "operator": operator, "proof": p}
		if caller.ClientID != "" {
			detail["requested_by"] = map[string]any{"client_id": caller.ClientID, "session_id": caller.SessionID}
		}
		removed, err := endLease(r, tx, f.t.Allocation, f.l, "writer_lease_abandoned", detail)
		out.BindingsRemoved = removed
		return err
	})
}

// Adopt is `wt-admin lease adopt`: it hands the lease of the worktree at
// path, whose holder has exited and of which nothing runs, to holder, a
// live process. The new lease has a new id and the next generation (a
// hand-over is a new grant: the fencing token moves on); git's lock is
// moved to it, and the event records where it came from. The new holder
// and its descendants may already be in the worktree.
func Adopt(r *alloc.Repo, path string, holder proc.Holder, reason string, expect Expect) (Ended, error) {
	reason = strings.TrimSpace(reason)
	if err := store.ValidText("reason", reason); err != nil {
		return Ended{}, err
	}
	return operate(r, path, Caller{ClientID: holder.ClientID, SessionID: holder.SessionID}, expect, func(tx *store.Tx, f found, out *Ended, ev Evidence) error {
		a, p := f.t.Allocation, out.Proof
		if a.Role != store.RoleFeature || a.Lifecycle != store.Active {
			return decision.Say(decision.InvalidLifecycle, "allocation-task-allocation", a.TaskKey, a.Lifecycle, a.Role).
				WithHint("resume it first: wt-admin resume %s --owner %s", shell.Word(f.t.Path), a.Owner)
		}
		if p.MissingWorktree {
			return decision.Say(decision.InvalidTarget, "worktree-gone", f.l.WorktreePath).
				WithHint("abandon the lease instead: wt-admin lease abandon %s --reason TEXT", shell.Word(f.t.Path))
		}
		// The adopter and what it started are not evidence against it.
		skip := []int{holder.PID}
		if s, ok := ev.(*proc.Scan); ok {
			skip = append(skip, s.Descendants(holder.PID)...)
		}
		p = assess(ev, f.l, time.Now(), Caller{ClientID: holder.ClientID, SessionID: holder.SessionID}, skip...)
		out.Proof = p
		if !p.NoLiveMutationRisk {
			return held(f.l, f.t.Path, p.Risk)
		}
		if !ev.IsLive(holder.Identity()) {
			return decision.Say(decision.InvalidHolder, "new-holder", holder.PID)
		}
		repo, err := tx.Repository()
		if err != nil {
			return err
		}
		now := time.Now().UTC()
		prior := f.l.Holder
		nl := store.Lease{LeaseID: ids.New(), RepositoryID: repo.RepositoryID, AllocationID: a.AllocationID,
			WorktreePath: f.l.WorktreePath, Owner: a.Owner, Holder: holder, AcquiredAt: store.Stamp(now), RenewedAt: store.Stamp(now),
			Generation: a.LeaseGeneration + 1, HolderResolverVersion: proc.HolderResolverVersion,
			Provenance: &store.Provenance{How: store.ProvenanceAdopted, PriorLeaseID: f.l.LeaseID, PriorHolder: &prior,
				By: proc.Actor(), ByClient: holder.ClientID, At: store.Stamp(now), Reason: reason}}
		removed, err := dropBindings(tx, &a, f.l.LeaseID)
		if err != nil {
			return err
		}
		a.LeaseGeneration = nl.Generation
		a.UpdatedAt = store.Stamp(now)
		if err := tx.PutAllocationRuntime(&a); err != nil {
			return err
		}
		if err := placeLock(r.Git.CommonDir, a.WorktreeKey, nl, false); err != nil {
			return err
		}
		if err := tx.PutLease(&nl); err != nil {
			return err
		}
		out.Adopted, out.BindingsRemoved = &nl, removed
		tx.Durable()
		return logEvent(tx, "writer_lease_adopted", a, &nl, map[string]any{
			"generation": nl.Generation, "previous_lease_id": f.l.LeaseID, "previous_holder": f.l.Holder,
			"previous_generation": f.l.Generation, "reason": reason, "proof": p, "bindings_removed": removed})
	})
}

// GrantAdopted gives holder, a live process already at work in the
// worktree of allocation a (just written by wt-admin adopt, in the same
// store section tx), its first writer lease: the agent another tool
// started there becomes the writer when the operator names it, its
// identity recorded, never on a lock's or a file's word. git's lock is
// placed for it and the event records where it came from.
func GrantAdopted(r *alloc.Repo, tx *store.Tx, a store.Allocation, holder proc.Holder, reason string) (store.Lease, error) {
	live, err := proc.IsLive(proc.NewReader(), holder.Identity())
	if err != nil || !live {
		return store.Lease{}, decision.Say(decision.InvalidHolder, "named-holder", holder.PID).
			WithHint("name the agent's running process: --holder PID")
	}
	repo, err := tx.Repository()
	if err != nil {
		return store.Lease{}, err
	}
	now := time.Now().UTC()
	nl := store.Lease{LeaseID: ids.New(), RepositoryID: repo.RepositoryID, AllocationID: a.AllocationID,
		WorktreePath: a.WorktreePath, Owner: a.Owner, Holder: holder, AcquiredAt: store.Stamp(now), RenewedAt: store.Stamp(now),
		Generation: a.LeaseGeneration + 1, HolderResolverVersion: proc.HolderResolverVersion,
		Provenance: &store.Provenance{How: store.ProvenanceAdopted, By: proc.Actor(), ByClient: holder.ClientID, At: store.Stamp(now), Reason: reason}}
	a.LeaseGeneration = nl.Generation
	a.UpdatedAt = store.Stamp(now)
	if err := tx.PutAllocationRuntime(&a); err != nil {
		return nl, err
	}
	if err := placeLock(r.Git.CommonDir, a.WorktreeKey, nl, false); err != nil {
		return nl, err
	}
	if err := tx.PutLease(&nl); err != nil {
		return nl, err
	}
	tx.Durable()
	return nl, logEvent(tx, "writer_lease_adopted", a, &nl, map[string]any{"generation": nl.Generation, "reason": reason, "worktree_adopted": true})
}

// Expiry is what `wt-admin lease expire` did.
type Expiry struct {
	// Expired are the leases recorded as expired and removed.
	Expired []Ended `json:"expired"`
	// Kept are leases past their expiry that stay, with why.
	Kept []Kept `json:"kept"`
}

// Kept is a lease past its expiry that `lease expire` left in place.
type Kept struct {
	Path    string `json:"path"`
	LeaseID string `json:"lease_id"`
	Why     string `json:"why"`
}

// Expire is `wt-admin lease expire`: every lease past expires_at whose
// holder is dead and of which nothing runs is recorded as expired (event
// writer_lease_expired) and removed. A live holder's expired lease stays:
// it lost entitlement until it renews, and is not dead (docs/design.md, "Liveness").
func Expire(r *alloc.Repo) (Expiry, error) {
	res := Expiry{Expired: []Ended{}, Kept: []Kept{}}
	err := r.Store.Write(func(tx *store.Tx) error {
		ids, err := tx.Leases()
		if err != nil {
			return err
		}
		var ev *proc.Scan
		now := time.Now()
		for _, id := range ids {
			l, ok, err := tx.Lease(id)
			if err != nil {
				return err
			}
			if !ok || !liveness.Expired(l, now) {
				continue
			}
			a, err := tx.Allocation(id)
			if err != nil {
				return err
			}
			if ev == nil {
				if ev, err = proc.NewScan(); err != nil {
					return decision.SayWrap(decision.Internal, err, "read-proc")
				}
			}
			p := assess(ev, l, now, Caller{})
			if !p.NoLiveMutationRisk {
				res.Kept = append(res.Kept, Kept{Path: l.WorktreePath, LeaseID: l.LeaseID, Why: p.Risk})
				continue
			}
			removed, err := endLease(r, tx, a, l, "writer_lease_expired", map[string]any{
				"generation": l.Generation, "acquired_at": l.AcquiredAt, "expires_at": l.ExpiresAt, "proof": p})
			if err != nil {
				return err
			}
			res.Expired = append(res.Expired, Ended{Path: l.WorktreePath, TaskKey: a.TaskKey, AllocationID: a.AllocationID,
				Lease: l, Proof: p, BindingsRemoved: removed})
		}
		return nil
	})
	return res, err
}

// DefaultHandoffTTL is how long a handoff's reservation waits to be
// consumed when --ttl does not say.
const DefaultHandoffTTL = 10 * time.Minute

// Handoff is `wt-admin lease handoff`: it reserves the next grant of the
// worktree at path for client to, for ttl, in one exclusive section. It
// is run by the live holder or a process it started (the caller, this
// process, must descend from it), or by an operator (operator set), who
// may also reserve a worktree nobody holds. When the holder's run ends,
// `wt-exec --client-id TO` is granted at once; every other client is
// refused WRITER_LEASE_RESERVED until the reservation is consumed or
// expires. A new handoff replaces an unconsumed one.
func Handoff(r *alloc.Repo, path, to string, ttl time.Duration, operator bool, expect Expect) (store.Handoff, error) {
	var h store.Handoff
	if err := proc.ValidateClientID(to); err != nil {
		return h, err
	}
	if ttl < 0 {
		return h, decision.Say(decision.Usage, "ttl-handoff", ttl).WithHint("e.g. --ttl 10m")
	}
	if ttl == 0 {
		ttl = DefaultHandoffTTL
	}
	if err := ValidExpect(expect); err != nil {
		return h, err
	}
	err := r.Store.Write(func(tx *store.Tx) error {
		if err := tx.PrepareEvents(); err != nil {
			return err
		}
		t, err := r.Resolve(tx, path)
		if err != nil {
			return err
		}
		a := t.Allocation
		if a.Role != store.RoleFeature || a.Lifecycle != store.Active {
			return decision.Say(decision.InvalidLifecycle, "allocation-task-allocation", a.TaskKey, a.Lifecycle, a.Role).
				WithHint("resume it first: wt-admin resume %s --owner %s", shell.Word(t.Path), shell.Word(a.Owner))
		}
		l, has, err := tx.Lease(a.AllocationID)
		if err != nil {
			return err
		}
		if has {
			if err := expect.check(r, found{t, l}); err != nil {
				return err
			}
		} else if expect.LeaseID != "" || expect.Generation != nil {
			return decision.Say(decision.WriterLeaseMismatch, "task-has", t.Path, a.TaskKey).
				WithHint("look at it again: wt-admin lease inspect %s", shell.Word(t.Path))
		}
		by := proc.Actor()
		h = store.Handoff{AllocationID: a.AllocationID, WorktreePath: t.Path, ToClient: to, By: by, Operator: operator}
		switch {
		case operator:
		case !has:
			return decision.Say(decision.NoWriterLease, "task-has-no", t.Path, a.TaskKey).
				WithHint("an operator reserves a free worktree: wt-admin lease handoff %s --to-client %s --operator", shell.Word(t.Path), shell.Word(to))
		default:
			inside, err := proc.NewReader().HasAncestor(os.Getpid(), l.Holder.Identity())
			if err != nil || !inside {
				return decision.Say(decision.WriterLeaseRequired, "lease-handoff", t.Path, l.Holder.ClientID, l.Holder.PID).
					WithHint("run it from the agent that holds the lease, or as an operator: wt-admin lease handoff %s --to-client %s --operator", shell.Word(t.Path), shell.Word(to))
			}
			h.ByClient = l.Holder.ClientID
		}
		if has {
			h.FromLeaseID, h.FromGeneration = l.LeaseID, l.Generation
		}
		now := time.Now().UTC()
		h.CreatedAt, h.ExpiresAt = store.Stamp(now), store.Stamp(now.Add(ttl))
		if err := tx.PutHandoff(&h); err != nil {
			return err
		}
		var lp *store.Lease
		if has {
			lp = &l
		}
		return logEvent(tx, "handoff_reserved", a, lp, map[string]any{"to_client": h.ToClient, "expires_at": h.ExpiresAt,
			"operator": operator, "by": by, "from_lease_id": h.FromLeaseID})
	})
	return h, err
}

// Transfer is `wt-admin lease transfer`: run from inside the lease (this
// process descends from its live holder), it makes pid, a live descendant
// of the holder, the holder, in one exclusive section: the same lease id
// and generation (the same writer, now rooted lower), git's lock and the
// runtime binding moved with it, and the provenance recorded. The new
// holder's processes may then commit after the old holder exits.
func Transfer(r *alloc.Repo, path string, pid int, reason string, expect Expect) (Ended, error) {
	reason = strings.TrimSpace(reason)
	if err := store.ValidText("reason", reason); err != nil {
		return Ended{}, err
	}
	return operate(r, path, Caller{}, expect, func(tx *store.Tx, f found, out *Ended, ev Evidence) error {
		a, l := f.t.Allocation, f.l
		if !ev.IsLive(l.Holder.Identity()) {
			return decision.Say(decision.InvalidHolder, "holder-client", f.t.Path, l.Holder.ClientID, l.Holder.PID).
				WithHint("hand the lease to the process that goes on writing: wt-admin lease adopt %s --client-id %s --holder PID", shell.Word(f.t.Path), shell.Word(l.Holder.ClientID))
		}
		inside, err := proc.NewReader().HasAncestor(os.Getpid(), l.Holder.Identity())
		if err != nil || !inside {
			return decision.Say(decision.WriterLeaseRequired, "lease-transfer", f.t.Path, l.Holder.ClientID, l.Holder.PID).
				WithHint("run it from the agent that holds the lease")
		}
		s, ok := ev.(*proc.Scan)
		if !ok || pid == l.Holder.PID || !slices.Contains(s.Descendants(l.Holder.PID), pid) {
			return decision.Say(decision.InvalidHolder, "pid-not", pid, f.t.Path, l.Holder.ClientID, l.Holder.PID).
				WithHint("name a process the holder started: see them with wt-admin ps %s", shell.Word(f.t.Path))
		}
		id, err := proc.Describe(pid)
		if err != nil {
			return err
		}
		prior := l.Holder
		nl := l
		nl.Holder = proc.Holder{ClientID: prior.ClientID, PID: id.PID, BootID: id.BootID, StartTicks: id.StartTicks, SessionID: prior.SessionID, RunID: prior.RunID}
		now := time.Now().UTC()
		nl.RenewedAt = store.Stamp(now)
		nl.HolderResolverVersion = proc.HolderResolverVersion
		nl.Provenance = &store.Provenance{How: store.ProvenanceTransferred, PriorLeaseID: l.LeaseID, PriorHolder: &prior,
			By: proc.Actor(), ByClient: prior.ClientID, At: store.Stamp(now), Reason: reason}
		// The runtime binding of the lease names its holder: it moves too.
		var kind string
		keep := []string{}
		for _, v := range a.ExternalBindings {
			b, ok, err := proc.DecodeRuntimeBinding(v)
			if err != nil {
				return err
			}
			if ok && b.LeaseID != nil && *b.LeaseID == l.LeaseID && b.Holder.Same(prior) {
				kind = b.Kind
				continue
			}
			keep = append(keep, v)
		}
		if kind == "" {
			kind = "agent"
		}
		nb, err := proc.RuntimeBinding{Holder: nl.Holder, LeaseID: &nl.LeaseID, Kind: kind}.Encode()
		if err != nil {
			return err
		}
		a.ExternalBindings = append(keep, nb)
		a.UpdatedAt = store.Stamp(now)
		if err := tx.PutAllocationRuntime(&a); err != nil {
			return err
		}
		if err := gitrepo.ReplaceLock(r.Git.CommonDir, a.WorktreeKey, Reason(nl)); err != nil {
			return decision.SayWrap(decision.Internal, err, "move-git", f.t.Path)
		}
		if err := tx.PutLease(&nl); err != nil {
			return err
		}
		out.Transferred = &nl
		tx.Durable()
		return logEvent(tx, "writer_lease_transferred", a, &nl, map[string]any{"generation": nl.Generation,
			"previous_holder": prior, "reason": reason})
	})
}
