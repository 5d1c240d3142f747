package maint

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/crashpoint"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/liveness"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/core/strictjson"
)

// FinishContract names the finish plan's shape.
const FinishContract = "task-finish/v1"

// The finish journal's operation and the phases it adds to prune's.
const (
	opFinish           = "task-finish"
	PhaseArchived      = "ARCHIVED"
	PhaseBranchDeleted = "BRANCH_DELETED"
	// ArchivePrefix is where finish --archive keeps a task's unmerged
	// commits: refs/wt/archive/<task>/<n>.
	ArchivePrefix = "refs/wt/archive/"
)

// Checkout states in a finish plan.
const (
	// CheckoutPresent: git lists the worktree and its directory is there.
	CheckoutPresent = "present"
	// CheckoutMissing: git lists the worktree but its directory is gone.
	CheckoutMissing = "missing"
	// CheckoutRemoved: git no longer lists it (removed by hand).
	CheckoutRemoved = "removed"
)

// ArchivedRef is one ref finish creates to keep unmerged commits.
type ArchivedRef struct {
	Ref string `json:"ref"`
	OID string `json:"oid"`
	// Commits is how many commits it keeps that the publication branch lacks.
	Commits int `json:"commits"`
}

// FinishPlan is everything finish proved about a task; the plan id covers
// all of it.
type FinishPlan struct {
	Contract              string        `json:"contract"`
	RepositoryID          string        `json:"repository_id"`
	AllocationID          string        `json:"allocation_id"`
	TaskKey               string        `json:"task_key"`
	Owner                 string        `json:"owner"`
	Role                  string        `json:"role"`
	Lifecycle             string        `json:"lifecycle"`
	TargetPath            string        `json:"target_path"`
	WorktreeKey           string        `json:"worktree_key"`
	AdminPath             string        `json:"admin_path"`
	Checkout              string        `json:"checkout"`
	Head                  string        `json:"head"`
	Branch                string        `json:"branch"`
	BranchOID             string        `json:"branch_oid"`
	PublicationRef        string        `json:"publication_ref"`
	PublicationOID        string        `json:"publication_oid"`
	Archive               []ArchivedRef `json:"archive"`
	DeleteBranch          bool          `json:"delete_branch"`
	ExpectedRecordVersion int           `json:"expected_record_version"`
	// Leftovers are wt's refs of the task that go with it: its failed
	// landing attempts (refs/wt/land/<task>/<n>, the lander's integrations)
	// and the tips audit's restore kept aside (refs/wt/ungated/<task>/<n>)
	// that the publication branch or an archive of the task contains.
	// UngatedKept are those it does not: they stay, and finish says so.
	Leftovers   []ArchivedRef `json:"leftovers,omitempty"`
	UngatedKept []ArchivedRef `json:"ungated_kept,omitempty"`
}

// Prefixes of wt's refs of a task that finish removes with it (Leftovers).
const (
	LandAttemptPrefix = "refs/wt/land/"
	UngatedPrefix     = "refs/wt/ungated/"
)

// FinishRequest names the task to finish: by its worktree's path or by its
// task key (one of the two), on its owner's word.
type FinishRequest struct {
	Path    string
	Task    string
	Owner   string
	Archive bool
	Apply   string
}

// FinishResult is a finish plan, or what apply did.
type FinishResult struct {
	Code          string     `json:"-"`
	Plan          FinishPlan `json:"plan"`
	PlanID        string     `json:"plan_id"`
	DryRun        bool       `json:"dry_run"`
	TransactionID string     `json:"transaction_id,omitempty"`
	ResumedFrom   string     `json:"resumed_from,omitempty"`
	// Remotes is what became of the task branch on each remote, once the
	// task is finished (DeleteRemoteBranches).
	Remotes []RemoteDeletion `json:"remotes,omitempty"`
}

// finishReceiptPayload is what a finished finish's receipt holds.
type finishReceiptPayload struct {
	Contract              string     `json:"contract"`
	Plan                  FinishPlan `json:"plan"`
	PlanID                string     `json:"plan_id"`
	ReleasedRecordVersion int        `json:"released_record_version"`
	Result                string     `json:"result"`
}

type finishJournal struct {
	Plan   FinishPlan `json:"plan"`
	PlanID string     `json:"plan_id"`
}

// Finish plans (req.Apply "") or applies the end of a task whose work is
// safe: its worktree is clean and nobody uses it, no lease is held, and
// every commit of its branch and HEAD is in the publication branch or, with
// --archive, kept under refs/wt/archive/<task>/<n>. Apply is journaled
// PREPARED → ARCHIVED → WORKTREE_REMOVED → BRANCH_DELETED →
// RELEASED_RECORDED: it creates the archive refs, runs `git worktree
// remove` (never --force), deletes the task branch only at the commit the
// plan proved safe, and releases the allocation, so that the task key is
// free again. Run again with the same plan id after a crash anywhere, it
// finishes; once finished it answers GC_ALREADY_APPLIED. A task whose
// worktree was already removed by hand is finished the same way.
func Finish(ctx context.Context, r *alloc.Repo, req FinishRequest) (FinishResult, error) {
	var res FinishResult
	if err := store.ValidOwner(req.Owner); err != nil {
		return res, err
	}
	if (req.Path == "") == (req.Task == "") {
		return res, decision.Say(decision.Usage, "finish-takes").
			WithHint("wt-admin finish PATH --owner NAME")
	}
	if req.Task != "" {
		if err := store.ValidTaskKey(req.Task); err != nil {
			return res, err
		}
	}
	target := ""
	if req.Path != "" {
		t, err := proc.Canonical(req.Path)
		if err != nil {
			return res, decision.SayWrap(decision.PathStateUnknown, err, "path", req.Path)
		}
		target = t
	}
	if req.Apply != "" {
		if err := ValidPlanID("--apply", req.Apply); err != nil {
			return res, err
		}
		err := r.Store.WithGitAdmin(ctx, func() error {
			var err error
			res, err = applyFinish(ctx, r, target, req)
			return err
		})
		return res, err
	}
	err := r.Store.Read(func(tx *store.Tx) error {
		j, _, err := finishJournalFor(tx, target, req.Task)
		if err != nil {
			return err
		}
		if j != nil {
			cmd, _ := ResumeCommand(r.Git.TopLevel, *j)
			return decision.Say(decision.InterruptedTx, "apply-finish", j.Target, j.Phase).
				WithHint("finish it: %s", cmd)
		}
		a, err := liveAllocation(tx, target, req.Task)
		if err != nil {
			return err
		}
		plan, err := planFinish(ctx, r, tx, a, req.Owner, req.Archive)
		if err != nil {
			return err
		}
		id, err := PlanID(plan)
		res = FinishResult{Code: decision.FinishReady, Plan: plan, PlanID: id, DryRun: true}
		return err
	})
	if err == nil && len(res.Plan.Archive) > 0 {
		err = archivesOpenPR(ctx, r, res.Plan)
	}
	return res, err
}

// archivesOpenPR refuses a finish that archives a task's work while its
// branch has an open pull request on the forge: someone may be reviewing
// it (OPEN_PULL_REQUEST). Work that landed has nothing to review.
func archivesOpenPR(ctx context.Context, r *alloc.Repo, plan FinishPlan) error {
	return RefuseOpenPRFor(ctx, r, plan.Branch, fmt.Sprintf("finish would archive task %s's work and delete its branch", plan.TaskKey))
}

// liveAllocation is the ACTIVE or RETAINED allocation at target (a
// canonical path) or of task.
func liveAllocation(tx *store.Tx, target, task string) (store.Allocation, error) {
	all, err := tx.Allocations()
	if err != nil {
		return store.Allocation{}, err
	}
	var found []store.Allocation
	for _, a := range all {
		if a.Lifecycle == store.Released {
			continue
		}
		if target != "" && gitrepo.SameFile(a.WorktreePath, target) || a.WorktreePath == target || task != "" && a.TaskKey == task {
			found = append(found, a)
		}
	}
	what, done := "at "+target, "the task at "+target
	if task != "" {
		what, done = "of task "+task, "task "+task
	}
	switch len(found) {
	case 1:
		if found[0].Role == store.RoleCanonical {
			return found[0], decision.Say(decision.InvalidTarget, "allocation-canonical", what)
		}
		return found[0], nil
	case 0:
		if rc, ok, err := finishReceipt(tx, target, task); err != nil {
			return store.Allocation{}, err
		} else if ok {
			return store.Allocation{}, decision.Say(decision.GCAlreadyApplied, "was-finished", done, rc.FinishedAt, rc.TransactionID).
				WithHint("nothing to do; see it in wt-admin status").WithFact("receipt_id", rc.TransactionID)
		}
		return store.Allocation{}, decision.Say(decision.InvalidTarget, "no-active", what).
			WithHint("list the tasks with wt-admin status")
	default:
		ids := make([]string, len(found))
		for i, a := range found {
			ids[i] = a.AllocationID
		}
		return store.Allocation{}, decision.Say(decision.InvalidMetadata, "live-allocations", len(found), what, strings.Join(ids, ", ")).
			WithHint("look at their records with wt-admin status --json")
	}
}

// finishReceipt finds the receipt of a finished finish of target or task.
func finishReceipt(tx *store.Tx, target, task string) (store.Receipt, bool, error) {
	receipts, err := tx.Receipts()
	if err != nil {
		return store.Receipt{}, false, err
	}
	var best *store.Receipt
	for i, rc := range receipts {
		if rc.Operation != opFinish || rc.Outcome != decision.TaskFinished {
			continue
		}
		var p finishReceiptPayload
		if strictjson.Decode(rc.Payload, &p) != nil {
			continue
		}
		if target != "" && rc.Target == target || task != "" && p.Plan.TaskKey == task {
			if best == nil || rc.FinishedAt > best.FinishedAt {
				best = &receipts[i]
			}
		}
	}
	if best == nil {
		return store.Receipt{}, false, nil
	}
	return *best, true, nil
}

// planFinish checks every precondition of finishing allocation a, in
// order, and returns the plan.
func planFinish(ctx context.Context, r *alloc.Repo, tx *store.Tx, a store.Allocation, owner string, archive bool) (FinishPlan, error) {
	if err := finishRecords(tx, a, owner); err != nil {
		return FinishPlan{}, err
	}
	repo, err := tx.Repository()
	if err != nil {
		return FinishPlan{}, decision.SayWrap(decision.BlockDrift, err, "repository-metadata")
	}
	pol, ok, err := tx.Policy()
	if err != nil || !ok {
		return FinishPlan{}, decision.Say(decision.BlockDrift, "policy-cannot", err)
	}
	plan := FinishPlan{Contract: FinishContract, RepositoryID: repo.RepositoryID, AllocationID: a.AllocationID, TaskKey: a.TaskKey,
		Owner: a.Owner, Role: a.Role, Lifecycle: a.Lifecycle, TargetPath: a.WorktreePath, WorktreeKey: a.WorktreeKey,
		AdminPath: gitrepo.AdminDir(r.Git.CommonDir, a.WorktreeKey), Checkout: CheckoutRemoved,
		PublicationRef: preservingPrefix + pol.PublicationBranch, ExpectedRecordVersion: a.RecordVersion, Archive: []ArchivedRef{}}
	if a.Branch != nil {
		plan.Branch = *a.Branch
	}
	if err := planCheckout(ctx, r, tx, a, pol, &plan); err != nil {
		return FinishPlan{}, err
	}
	refs, err := r.Git.Refs(ctx)
	if err != nil {
		return FinishPlan{}, decision.SayWrap(decision.GitFailed, err, "list-refs")
	}
	plan.PublicationOID = refs[plan.PublicationRef]
	if plan.PublicationOID == "" {
		return FinishPlan{}, decision.Say(decision.MissingRetainedRef, "publication-branch", plan.PublicationRef).
			WithHint("create it, or set another with wt-admin policy --publication-branch NAME")
	}
	if plan.Branch != "" {
		plan.BranchOID = refs[preservingPrefix+plan.Branch]
		plan.DeleteBranch = plan.BranchOID != ""
	}
	if err := planArchive(ctx, r, &plan, refs, archive); err != nil {
		return FinishPlan{}, err
	}
	planLeftovers(ctx, r, &plan, refs)
	return plan, nil
}

// planLeftovers lists the task's landing attempts and kept ungated tips
// (FinishPlan.Leftovers), in ref order.
func planLeftovers(ctx context.Context, r *alloc.Repo, plan *FinishPlan, refs map[string]string) {
	names := slices.Sorted(maps.Keys(refs))
	for _, ref := range names {
		for _, prefix := range []string{LandAttemptPrefix, UngatedPrefix} {
			rest, ok := strings.CutPrefix(ref, prefix+plan.TaskKey+"/")
			if _, err := strconv.Atoi(rest); !ok || err != nil {
				continue // another task's (a key that begins with this one and a slash)
			}
			x := ArchivedRef{Ref: ref, OID: refs[ref]}
			if prefix == UngatedPrefix && !containedIn(ctx, r, x.OID, plan) {
				plan.UngatedKept = append(plan.UngatedKept, x)
				continue
			}
			plan.Leftovers = append(plan.Leftovers, x)
		}
	}
}

// containedIn reports whether commit oid is in the publication tip, the
// task branch (merged or archived by then) or an archive of the plan.
func containedIn(ctx context.Context, r *alloc.Repo, oid string, plan *FinishPlan) bool {
	for _, k := range append([]string{plan.PublicationOID, plan.BranchOID}, archiveOIDs(plan)...) {
		if k == "" {
			continue
		}
		if in, err := r.Git.IsAncestor(ctx, oid, k); err == nil && in {
			return true
		}
	}
	return false
}

func archiveOIDs(plan *FinishPlan) []string {
	var out []string
	for _, a := range plan.Archive {
		out = append(out, a.OID)
	}
	return out
}

// finishRecords refuses a finish the store's records rule out: another
// owner, a writer lease, a runtime binding, the worktree key bound to
// another allocation.
func finishRecords(tx *store.Tx, a store.Allocation, owner string) error {
	path := shell.Word(a.WorktreePath)
	if owner != a.Owner {
		return decision.Say(decision.OwnerMismatch, "task-owned-cannot", a.TaskKey, a.Owner, owner).
			WithHint("its owner finishes it: wt-admin finish %s --owner %s", path, shell.Word(a.Owner))
	}
	if l, ok, err := tx.Lease(a.AllocationID); err != nil {
		return err
	} else if ok {
		return decision.Say(decision.LeasePresent, "task-has", a.TaskKey, l.Holder.ClientID, l.Holder.PID).
			WithHint("wait for it to end, or see it with wt-admin lease inspect %s", path).WithFact("lease_id", l.LeaseID)
	}
	if len(a.ExternalBindings) > 0 {
		// The first binding names what still holds the task.
		v := a.ExternalBindings[0]
		what := strconv.QuoteToASCII(v)
		if b, ok, err := proc.DecodeRuntimeBinding(v); err == nil && ok {
			what = fmt.Sprintf("a %s process of client %s (pid %d)", b.Kind, b.Holder.ClientID, b.Holder.PID)
		}
		return decision.Say(decision.ExternalBinding, "task-still", a.TaskKey, what).
			WithHint("see who with wt-admin ps %s; finish when it has ended", path)
	}
	if b, ok, err := tx.Binding(a.WorktreeKey); err != nil {
		return err
	} else if ok && b.AllocationID != a.AllocationID {
		return decision.Say(decision.BindingDrift, "worktree-key", a.WorktreeKey, b.AllocationID, a.TaskKey, a.AllocationID).
			WithHint("inspect the bindings in the store by hand")
	}
	return nil
}

// planCheckout fills in what git says of the task's checkout: its HEAD,
// present, missing (prunable) or removed, and refuses one that was moved,
// re-created, locked, or whose branch another checkout has.
func planCheckout(ctx context.Context, r *alloc.Repo, tx *store.Tx, a store.Allocation, pol store.Policy, plan *FinishPlan) error {
	path := shell.Word(a.WorktreePath)
	inv, err := r.Git.Inventory(ctx)
	if err != nil {
		return gitrepo.ListFailed(err)
	}
	for _, wt := range inv {
		if plan.Branch != "" && wt.Branch == plan.Branch && wt.Key != a.WorktreeKey {
			return decision.Say(decision.WorktreeInUse, "task-branch", plan.Branch, wt.Path).
				WithHint("switch that checkout away first: git -C %s switch %s", shell.Word(wt.Path), shell.Word(pol.PublicationBranch))
		}
		if wt.Key != a.WorktreeKey || a.WorktreeKey == "" {
			continue
		}
		if !gitrepo.SameFile(wt.Path, a.WorktreePath) && wt.Path != a.WorktreePath {
			return decision.Say(decision.BindingDrift, "worktree-task", a.TaskKey, wt.Path, a.WorktreePath).
				WithHint("move it back: git worktree move %s %s", shell.Word(wt.Path), path)
		}
		if reg, registered, err := tx.Registered(wt.Key); err != nil {
			return err
		} else if !registered || reg.AllocationID != a.AllocationID {
			return decision.Say(decision.UnregisteredWorktree, "worktree-key-not", wt.Path, wt.Key, a.TaskKey).
				WithHint("look at it (git -C %s status) and move it away; then run finish again", shell.Word(wt.Path))
		}
		if wt.Locked {
			return decision.Say(decision.WorktreeInUse, "worktree-locked", wt.Path, wt.LockReason).
				WithHint("whoever locked it decides: git worktree unlock %s", shell.Word(wt.Path))
		}
		plan.Head = wt.Head
		plan.Checkout = CheckoutPresent
		if wt.Prunable {
			plan.Checkout = CheckoutMissing
		}
	}
	if plan.Checkout == CheckoutPresent {
		if err := unused(ctx, r, a.WorktreeKey, a.WorktreePath); err != nil {
			return err
		}
	}
	return nil
}

// unused refuses a worktree with changes git would lose, or that a process
// uses (its cwd, an open file or a mapping there).
func unused(ctx context.Context, r *alloc.Repo, key, path string) error {
	changes, err := r.Git.Changes(ctx, key, path)
	if decision.CodeOf(err) == decision.GitMetadataUntrusted {
		return err
	}
	if err != nil {
		return decision.SayWrap(decision.GitFailed, err, "git-status", path)
	}
	if len(changes) > 0 {
		shown := changes[:min(len(changes), 20)]
		more := ""
		if len(changes) > len(shown) {
			more = fmt.Sprintf(" (and %d more)", len(changes)-len(shown))
		}
		return decision.Say(decision.WorktreeDirty, "has", path, decision.Plural(len(changes), "uncommitted or untracked change", "uncommitted or untracked changes"),
			strings.Join(quoted(shown), ", "), more).
			WithHint("commit them on the task branch, or remove them; see them with git -C %s status", shell.Word(path)).WithFact("changes", changes)
	}
	s, err := proc.NewScan()
	if err != nil {
		return decision.SayWrap(decision.PathStateUnknown, err, "read-proc")
	}
	users, err := liveness.Users(s, path)
	if err != nil {
		return decision.SayWrap(decision.PathStateUnknown, err, "find-processes", path)
	}
	if len(users) > 0 {
		var who []string
		for _, u := range users {
			who = append(who, fmt.Sprintf("pid %d (%s, %s)", u.PID, u.Command, u.Why))
		}
		return decision.Say(decision.WorktreeInUse, "process-es", len(users), path, strings.Join(who, ", ")).
			WithHint("see them with wt-admin ps %s; finish when they are gone", shell.Word(path))
	}
	return nil
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.QuoteToASCII(s)
	}
	return out
}

// landedSource is the task branch tip wt-admin land landed for the
// allocation finish plans, when its landing record says LANDED and the
// publication branch still holds what landed; "" otherwise.
func landedSource(ctx context.Context, r *alloc.Repo, plan *FinishPlan) (string, error) {
	var rec store.Landing
	var ok bool
	if err := r.Store.Read(func(tx *store.Tx) error {
		var err error
		rec, ok, err = tx.Landing(plan.AllocationID)
		return err
	}); err != nil || !ok || rec.State != store.LandingLanded || rec.Result == "" {
		return "", err
	}
	in, err := r.Git.IsAncestor(ctx, rec.Result, plan.PublicationOID)
	if err != nil || !in {
		return "", err
	}
	return rec.Source, nil
}

// planArchive finds the commits the task holds that the publication branch
// lacks (the tips of its branch and of its HEAD, one of them when it
// contains the other) and, with archive, names a new ref for each under
// refs/wt/archive/<task>/; without archive, such commits refuse.
func planArchive(ctx context.Context, r *alloc.Repo, plan *FinishPlan, refs map[string]string, archive bool) error {
	tips, err := unmergedTips(ctx, r, plan)
	if err != nil || len(tips) == 0 {
		return err
	}
	counts := make([]int, len(tips))
	var what []string
	for i, tip := range tips {
		n, err := r.Git.CountOnly(ctx, tip, plan.PublicationOID)
		if err != nil {
			return decision.SayWrap(decision.GitFailed, err, "count-commits", tip)
		}
		counts[i] = n
		what = append(what, fmt.Sprintf("%s at %s", decision.Plural(n, "commit", "commits"), gitrepo.Short(tip)))
	}
	if !archive {
		path := shell.Word(plan.TargetPath)
		return decision.Say(decision.UnmergedCommits, "task-holds", plan.TaskKey, plan.PublicationRef, strings.Join(what, ", ")).
			WithHint("merge it first, or keep it under %s%s/N and finish: wt-admin finish %s --owner %s --archive", ArchivePrefix, plan.TaskKey, path, shell.Word(plan.Owner)).
			WithFact("unmerged", tips)
	}
	base := ArchivePrefix + plan.TaskKey + "/"
	if !r.Git.ValidRefName(ctx, base+"1") {
		base = ArchivePrefix + plan.AllocationID + "/"
	}
	next := 1
	for ref := range refs {
		if rest, ok := strings.CutPrefix(ref, base); ok {
			if n, err := strconv.Atoi(rest); err == nil && n >= next {
				next = n + 1
			}
		}
	}
	for i, tip := range tips {
		plan.Archive = append(plan.Archive, ArchivedRef{Ref: base + strconv.Itoa(next+i), OID: tip, Commits: counts[i]})
	}
	return nil
}

// unmergedTips are the tips of the plan's task (its branch's and its
// HEAD's, one of them when it contains the other) holding commits the
// publication branch lacks.
func unmergedTips(ctx context.Context, r *alloc.Repo, plan *FinishPlan) ([]string, error) {
	landed, err := landedSource(ctx, r, plan)
	if err != nil {
		return nil, err
	}
	var tips []string
	for _, oid := range []string{plan.BranchOID, plan.Head} {
		if oid == "" || (len(tips) > 0 && tips[0] == oid) {
			continue
		}
		merged, err := r.Git.IsAncestor(ctx, oid, plan.PublicationOID)
		if err == nil && !merged && landed != "" {
			// Landed by wt-admin land (rebased or squashed: not an
			// ancestor, but in the publication branch all the same).
			merged, err = r.Git.IsAncestor(ctx, oid, landed)
		}
		if err != nil {
			return nil, decision.SayWrap(decision.GitFailed, err, "compare-2", oid, plan.PublicationRef)
		}
		if !merged {
			tips = append(tips, oid)
		}
	}
	if len(tips) == 2 {
		// HEAD behind the branch tip (or the other way round) needs one ref.
		if in, err := r.Git.IsAncestor(ctx, tips[1], tips[0]); err == nil && in {
			tips = tips[:1]
		} else if in, err := r.Git.IsAncestor(ctx, tips[0], tips[1]); err == nil && in {
			tips = tips[1:]
		}
	}
	return tips, nil
}

// FinishNeedsArchive reports whether finishing allocation a needs
// --archive: its branch, or head (its checkout's HEAD; "" when git no
// longer has it), holds commits the publication branch lacks, which
// finish without --archive refuses (UNMERGED_COMMITS). When that cannot
// be read, it reports false: finish itself says why.
func FinishNeedsArchive(ctx context.Context, r *alloc.Repo, publicationBranch string, a store.Allocation, head string) bool {
	plan := FinishPlan{AllocationID: a.AllocationID, Head: head, PublicationRef: preservingPrefix + publicationBranch}
	var err error
	if plan.PublicationOID, err = gitrepo.ReadRef(r.Git.CommonDir, plan.PublicationRef); err != nil || plan.PublicationOID == "" {
		return false
	}
	if a.Branch != nil {
		if plan.BranchOID, err = gitrepo.ReadRef(r.Git.CommonDir, preservingPrefix+*a.Branch); err != nil {
			return false
		}
	}
	tips, err := unmergedTips(ctx, r, &plan)
	return err == nil && len(tips) > 0
}

// applyFinish applies plan req.Apply in the turns of a journaled apply
// (journaled.go): the plan under the shared lock, the journal under the
// exclusive one, each git step (archive refs, `git worktree remove`, the
// branch's deletion) with no store lock, the release under the exclusive
// lock.
func applyFinish(ctx context.Context, r *alloc.Repo, target string, req FinishRequest) (FinishResult, error) {
	res := FinishResult{Code: decision.TaskFinished, PlanID: req.Apply}
	var (
		seen *store.Journal
		p    finishJournal
	)
	err := r.Store.Read(func(tx *store.Tx) error {
		j, others, err := finishJournalFor(tx, target, req.Task)
		if err != nil {
			return err
		}
		if j != nil {
			seen, res.ResumedFrom = j, j.Phase
			if p, err = resumeFinish(tx, *j, req); err != nil {
				return err
			}
			return fenced(others, p.Plan.AllocationID)
		}
		a, err := liveAllocation(tx, target, req.Task)
		if err != nil {
			return err
		}
		// The plan id says whether the dry run archived: an archiving plan
		// of merged work archives nothing, so apply never needs --archive.
		plan, err := planFinish(ctx, r, tx, a, req.Owner, true)
		if err != nil {
			return err
		}
		id, err := PlanID(plan)
		if err != nil {
			return err
		}
		if id != req.Apply {
			return decision.Say(decision.GCPlanDrift, "finish-plan", plan.TaskKey, id, req.Apply).
				WithHint("run the dry run again, check it, and apply its plan_id").WithFact("plan_id", id)
		}
		p = finishJournal{Plan: plan, PlanID: id}
		return fenced(others, plan.AllocationID)
	})
	if err != nil {
		return res, err
	}
	plan := p.Plan
	if seen == nil && len(plan.Archive) > 0 {
		// Not begun yet: the forge is asked once more (outside the lock).
		if err := archivesOpenPR(ctx, r, plan); err != nil {
			return res, err
		}
	}
	payload, err := json.Marshal(p)
	if err != nil {
		return res, err
	}
	lookup := func(tx *store.Tx) (*store.Journal, []store.Journal, error) {
		return finishJournalFor(tx, target, req.Task)
	}
	j, created, err := begin(r, lookup, seen, func() store.Journal {
		now := store.Now()
		return store.Journal{TransactionID: ids.New(), Operation: opFinish, Phase: PhasePrepared, Actor: proc.Actor(),
			Target: plan.TargetPath, Payload: payload, CreatedAt: now, UpdatedAt: now}
	}, func(tx *store.Tx, others []store.Journal) error {
		if err := fenced(others, plan.AllocationID); err != nil {
			return err
		}
		return finishRecordsAsPlanned(tx, plan, nil)
	})
	if err != nil {
		return res, err
	}
	if created {
		crashpoint.Here("finish:prepared")
	}
	res.Plan, res.TransactionID = plan, j.TransactionID
	steps := []step{
		{phase: PhaseArchived, git: func() error { return archiveRefs(ctx, r, plan) }},
		{phase: PhaseRemoved, git: func() error { return removeCheckout(ctx, r, plan) }},
		{phase: PhaseBranchDeleted, git: func() error { return deleteBranch(ctx, r, plan) }},
		{phase: PhaseReleased, records: func(tx *store.Tx) error {
			return release(tx, "finish", plan.AllocationID, plan.ExpectedRecordVersion, plan.Owner, plan.WorktreeKey)
		}},
	}
	if err := runSteps(r, "finish", j, finishOrder, steps); err != nil {
		return res, err
	}
	receipt, _ := json.Marshal(finishReceiptPayload{Contract: FinishContract, Plan: plan, PlanID: p.PlanID,
		ReleasedRecordVersion: plan.ExpectedRecordVersion + 1, Result: decision.TaskFinished})
	return res, conclude(r, *j, func(tx *store.Tx) error {
		if err := tx.LogEvent("task_finished", plan.AllocationID, map[string]any{
			"plan_id": p.PlanID, "task_key": plan.TaskKey, "target_path": plan.TargetPath, "owner": plan.Owner,
			"archive": plan.Archive, "branch": plan.Branch, "branch_deleted": plan.DeleteBranch, "transaction_id": j.TransactionID}); err != nil {
			return err
		}
		return tx.FinishJournal(*j, decision.TaskFinished, receipt, store.Now())
	})
}

var finishOrder = map[string]int{PhasePrepared: 0, PhaseArchived: 1, PhaseRemoved: 2, PhaseBranchDeleted: 3, PhaseReleased: 4}

// resumeFinish validates an interrupted finish's journal: the same plan id
// and owner, a phase it knows, and the records as the plan left them
// (finishRecordsAsPlanned). Each step then checks the live state it acts
// on.
func resumeFinish(tx *store.Tx, j store.Journal, req FinishRequest) (finishJournal, error) {
	var p finishJournal
	if err := strictjson.Decode(j.Payload, &p); err != nil || p.Plan.Contract != FinishContract || p.Plan.TargetPath != j.Target {
		return p, decision.Say(decision.InvalidMetadata, "journal-does-not", j.TransactionID, FinishContract, j.Target).
			WithHint("look at %s by hand; wt never overwrites what it cannot read", "journal/"+j.TransactionID+".json")
	}
	drift := finishDrift(j.TransactionID)
	if p.PlanID != req.Apply {
		return p, drift("applies-plan", p.PlanID, req.Apply)
	}
	if p.Plan.Owner != req.Owner {
		return p, decision.Say(decision.OwnerMismatch, "interrupted-finish", j.TransactionID, p.Plan.Owner, req.Owner).
			WithHint("finish it with --owner %s", shell.Word(p.Plan.Owner))
	}
	if _, ok := finishOrder[j.Phase]; !ok {
		return p, drift("unknown-phase", j.Phase)
	}
	return p, finishRecordsAsPlanned(tx, p.Plan, drift)
}

// finishDrift makes the GC_PLAN_DRIFT refusals of finish transaction id
// ("" for a plan not yet journaled).
func finishDrift(id string) func(key string, args ...any) error {
	return func(key string, args ...any) error {
		what := decision.Words(decision.GCPlanDrift, key, args...)
		if id == "" {
			return decision.Say(decision.GCPlanDrift, "finish", what).
				WithHint("run the dry run again, check it, and apply its plan_id")
		}
		return decision.Say(decision.GCPlanDrift, "interrupted-finish", id, what).
			WithHint("look at what changed: wt-admin status; the journal is %s", "journal/"+id+".json")
	}
}

// finishRecordsAsPlanned checks, with no git, the store's side of a finish
// plan: the allocation untouched since the plan (lifecycle, owner, no
// runtime binding) or released by this very plan, and no lease. drift
// nil makes its own refusals.
func finishRecordsAsPlanned(tx *store.Tx, plan FinishPlan, drift func(string, ...any) error) error {
	if drift == nil {
		drift = finishDrift("")
	}
	_, err := unleasedAtPlan(tx, "finish", plan.TargetPath, plan.AllocationID, plan.ExpectedRecordVersion, drift, func(a store.Allocation) error {
		if a.Lifecycle != plan.Lifecycle || a.Owner != plan.Owner || len(a.ExternalBindings) > 0 {
			return drift("allocation-changed", a.AllocationID, a.Lifecycle, a.Owner)
		}
		return nil
	})
	return err
}

// archiveRefs creates each archive ref at its commit; one already there
// from an interrupted run is fine, one pointing elsewhere is drift.
func archiveRefs(ctx context.Context, r *alloc.Repo, plan FinishPlan) error {
	if len(plan.Archive) == 0 {
		return nil
	}
	refs, err := r.Git.Refs(ctx)
	if err != nil {
		return decision.SayWrap(decision.GitFailed, err, "list-refs")
	}
	for _, a := range plan.Archive {
		switch refs[a.Ref] {
		case a.OID:
			continue
		case "":
			if err := r.Git.CreateRef(ctx, a.Ref, a.OID); err != nil {
				return decision.SayWrap(decision.GitFailed, err, "create", a.Ref, a.OID).
					WithHint("nothing was removed yet; look at git for-each-ref %s", ArchivePrefix)
			}
		default:
			return decision.Say(decision.GCPlanDrift, "already-exists", a.Ref, refs[a.Ref], a.OID).
				WithHint("run the dry run again: it picks the next free archive ref")
		}
	}
	return nil
}

// removeCheckout removes the worktree's registration and checkout with
// `git worktree remove` (git refuses changes it would lose; nothing is
// forced), or finishes a removal git left half-done. A worktree git no
// longer lists needs nothing. Its changes and users are checked again
// first: the plan saw them with the store's lock free, as this step does.
func removeCheckout(ctx context.Context, r *alloc.Repo, plan FinishPlan) error {
	if plan.Checkout == CheckoutRemoved {
		return nil
	}
	item, err := findWorktree(ctx, r, plan.TargetPath)
	if err != nil {
		return err
	}
	if item == nil || item.Key != plan.WorktreeKey {
		return finishTornRemoval(plan.TargetPath, plan.AdminPath)
	}
	if item.Head != plan.Head {
		return decision.Say(decision.GCPlanDrift, "head-moved", plan.TargetPath, gitrepo.Short(plan.Head), gitrepo.Short(item.Head)).
			WithHint("run the dry run again and apply its plan")
	}
	if !item.Prunable {
		if err := unused(ctx, r, plan.WorktreeKey, plan.TargetPath); err != nil {
			return err
		}
	}
	return removeRegistration(ctx, r, "finish", plan.TargetPath, item.Key)
}

// deleteBranch deletes the task branch at the commit the plan proved kept
// (merged or archived), and then its leftovers (each at the commit
// planned: one gone or moved since stays); gone already is fine, moved is
// drift.
func deleteBranch(ctx context.Context, r *alloc.Repo, plan FinishPlan) error {
	if err := deleteTaskBranch(ctx, r, plan); err != nil {
		return err
	}
	for _, x := range plan.Leftovers {
		// Best effort: a leftover is wt's own ref, and one that moved is
		// someone's again.
		_, _ = r.Git.GitUnhooked(ctx, "update-ref", "-d", x.Ref, x.OID)
	}
	return nil
}

func deleteTaskBranch(ctx context.Context, r *alloc.Repo, plan FinishPlan) error {
	if !plan.DeleteBranch {
		return nil
	}
	ref := preservingPrefix + plan.Branch
	refs, err := r.Git.Refs(ctx)
	if err != nil {
		return decision.SayWrap(decision.GitFailed, err, "list-refs")
	}
	switch refs[ref] {
	case "":
		return nil
	case plan.BranchOID:
		// The ledger first, as the gate records a move before git makes
		// it: the views take the branch's absence as finish's, not a loss.
		if err := store.AppendLedger(r.Store.Root(), plan.AllocationID, store.LedgerLine{Via: store.ViaFinish, Ref: ref, Old: plan.BranchOID}); err != nil {
			return err
		}
		if err := r.Git.DeleteBranchAt(ctx, plan.Branch, plan.BranchOID); err != nil {
			return decision.SayWrap(decision.GitFailed, err, "delete", ref, plan.BranchOID)
		}
		return nil
	default:
		return decision.Say(decision.GCPlanDrift, "moved-from", ref, gitrepo.Short(plan.BranchOID), gitrepo.Short(refs[ref])).
			WithHint("look at it (git log %s); the worktree is already removed, so keep the branch or archive it by hand", shell.Word(plan.Branch))
	}
}

// finishJournalFor returns the finish journal for target or task (at most
// one) and every other journal in flight.
func finishJournalFor(tx *store.Tx, target, task string) (*store.Journal, []store.Journal, error) {
	return journalMatching(tx, "finish", func(j store.Journal) bool {
		if j.Operation != opFinish {
			return false
		}
		var p finishJournal
		_ = strictjson.Decode(j.Payload, &p) // An unreadable plan matches by target only; resume refuses it.
		return target != "" && j.Target == target || task != "" && p.Plan.TaskKey == task
	})
}
