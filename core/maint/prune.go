package maint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/crashpoint"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/core/strictjson"
)

// PruneContract names the prune plan's shape.
const PruneContract = "registration-prune/v1"

// The prune journal's operation and phases (docs/decisions.md, "Registration maintenance").
const (
	opPrune          = "registration-prune"
	PhasePrepared    = "PREPARED"
	PhaseRemoved     = "WORKTREE_REMOVED"
	PhaseReleased    = "RELEASED_RECORDED"
	unassignedOwner  = "unassigned"
	preservingPrefix = "refs/heads/"
)

// PrunePlan is everything prune proved about its target; the plan id
// covers all of it.
type PrunePlan struct {
	Contract              string `json:"contract"`
	RepositoryID          string `json:"repository_id"`
	AllocationID          string `json:"allocation_id"`
	TaskKey               string `json:"task_key"`
	Owner                 string `json:"owner"`
	TargetPath            string `json:"target_path"`
	WorktreeKey           string `json:"worktree_key"`
	AdminPath             string `json:"admin_path"`
	ExpectedHead          string `json:"expected_head"`
	ExpectedRecordVersion int    `json:"expected_record_version"`
	PreservingRef         string `json:"preserving_ref"`
	PreservingOID         string `json:"preserving_oid"`
}

// pruneJournal is the journal payload: the plan and its id.
type pruneJournal struct {
	Plan   PrunePlan `json:"plan"`
	PlanID string    `json:"plan_id"`
}

// PruneResult is a prune plan, or what apply did.
type PruneResult struct {
	Code   string    `json:"-"`
	Plan   PrunePlan `json:"plan"`
	PlanID string    `json:"plan_id"`
	DryRun bool      `json:"dry_run"`
	// TransactionID names the journal (and then the receipt) of an apply.
	TransactionID string `json:"transaction_id,omitempty"`
	// ResumedFrom is the phase an interrupted apply was found in.
	ResumedFrom string `json:"resumed_from,omitempty"`
}

// Prune plans (apply "") or applies the removal of the git registration of
// the retained audit worktree at path, whose checkout is gone, on the word
// of its recorded owner (docs/decisions.md, "Registration maintenance"). Apply is journaled PREPARED →
// WORKTREE_REMOVED → RELEASED_RECORDED and, run again with the same plan id
// after a crash at any point, validates the journal against the live state
// and finishes; once finished it answers GC_ALREADY_APPLIED.
func Prune(ctx context.Context, r *alloc.Repo, path, owner, apply string) (PruneResult, error) {
	if err := store.ValidOwner(owner); err != nil {
		return PruneResult{}, err
	}
	if apply != "" {
		if err := ValidPlanID("--apply", apply); err != nil {
			return PruneResult{}, err
		}
	}
	target, err := proc.Canonical(path)
	if err != nil {
		return PruneResult{}, decision.SayWrap(decision.PathStateUnknown, err, "path", path)
	}
	var res PruneResult
	if apply == "" {
		err = r.Store.Read(func(tx *store.Tx) error {
			res, err = planPrune(ctx, r, tx, target, owner)
			return err
		})
		if err == nil {
			err = refuseOpenPR(ctx, r, res.Plan.AllocationID, fmt.Sprintf("prune would release task %s's registration", res.Plan.TaskKey))
		}
		return res, err
	}
	if err := RefuseOpenPRAt(ctx, r, target, "prune would release the registration of "+target); err != nil {
		return res, err
	}
	err = r.Store.WithGitAdmin(ctx, func() error {
		res, err = applyPrune(ctx, r, target, owner, apply)
		return err
	})
	return res, err
}

// planPrune is the dry run.
func planPrune(ctx context.Context, r *alloc.Repo, tx *store.Tx, target, owner string) (PruneResult, error) {
	j, others, err := journalFor(tx, target)
	if err != nil {
		return PruneResult{}, err
	}
	if j != nil {
		return PruneResult{}, decision.Say(decision.InterruptedTx, "apply-prune", target, j.Phase).
			WithHint("finish it: %s", shell.Words("wt-admin", "prune", target, "--owner", owner, "--apply", journalPlanID(*j)))
	}
	item, err := findWorktree(ctx, r, target)
	if err != nil {
		return PruneResult{}, err
	}
	if item == nil {
		return PruneResult{}, gone(tx, target)
	}
	plan, err := buildPlan(ctx, r, tx, *item, owner)
	if err != nil {
		return PruneResult{}, err
	}
	if err := fenced(others, plan.AllocationID); err != nil {
		return PruneResult{}, err
	}
	id, err := PlanID(plan)
	return PruneResult{Code: decision.PruneReady, Plan: plan, PlanID: id, DryRun: true}, err
}

// gone answers for a target git no longer lists: already pruned (a receipt
// says so), or never a registered worktree.
func gone(tx *store.Tx, target string) error {
	receipts, err := tx.Receipts()
	if err != nil {
		return err
	}
	for _, rc := range receipts {
		if rc.Operation == opPrune && rc.Target == target {
			return decision.Say(decision.GCAlreadyApplied, "registration-was", target, rc.FinishedAt, rc.TransactionID).
				WithHint("nothing to do; see it in wt-admin status").WithFact("receipt_id", rc.TransactionID)
		}
	}
	return decision.Say(decision.PrunableStateInvalid, "git-lists", target).
		WithHint("list the worktrees with wt-admin status")
}

// applyPrune applies plan apply in the turns of a journaled apply
// (journaled.go): the plan under the shared lock, the journal under the
// exclusive one, `git worktree remove` with no store lock, the release
// under the exclusive lock.
func applyPrune(ctx context.Context, r *alloc.Repo, target, owner, apply string) (PruneResult, error) {
	res := PruneResult{Code: decision.RegistrationPruned, PlanID: apply}
	var (
		seen *store.Journal
		p    pruneJournal
		item *gitrepo.Worktree
	)
	err := r.Store.Read(func(tx *store.Tx) error {
		j, others, err := journalFor(tx, target)
		if err != nil {
			return err
		}
		if item, err = findWorktree(ctx, r, target); err != nil {
			return err
		}
		if j != nil {
			seen, res.ResumedFrom = j, j.Phase
			if p, err = resume(ctx, r, tx, *j, item, owner, apply); err != nil {
				return err
			}
			return fenced(others, p.Plan.AllocationID)
		}
		if item == nil {
			return gone(tx, target)
		}
		plan, err := buildPlan(ctx, r, tx, *item, owner)
		if err != nil {
			return err
		}
		if err := samePlan(plan, apply); err != nil {
			return err
		}
		p = pruneJournal{Plan: plan, PlanID: apply}
		return fenced(others, plan.AllocationID)
	})
	if err != nil {
		return res, err
	}
	payload, err := json.Marshal(p)
	if err != nil {
		return res, err
	}
	lookup := func(tx *store.Tx) (*store.Journal, []store.Journal, error) { return journalFor(tx, target) }
	j, created, err := begin(r, lookup, seen, func() store.Journal {
		now := store.Now()
		return store.Journal{TransactionID: ids.New(), Operation: opPrune, Phase: PhasePrepared, Actor: proc.Actor(),
			Target: target, Payload: payload, CreatedAt: now, UpdatedAt: now}
	}, func(tx *store.Tx, others []store.Journal) error {
		if err := fenced(others, p.Plan.AllocationID); err != nil {
			return err
		}
		return pruneRecordsAsPlanned(tx, p.Plan, nil)
	})
	if err != nil {
		return res, err
	}
	if created {
		crashpoint.Here("prune:prepared")
	}
	res.Plan, res.TransactionID = p.Plan, j.TransactionID
	steps := []step{
		{phase: PhaseRemoved, git: func() error {
			if item == nil {
				return finishTornRemoval(p.Plan.TargetPath, p.Plan.AdminPath)
			}
			if err := absent(p.Plan.TargetPath); err != nil {
				return err
			}
			return removeRegistration(ctx, r, "prune", p.Plan.TargetPath, item.Key)
		}},
		{phase: PhaseReleased, records: func(tx *store.Tx) error {
			return release(tx, "prune", p.Plan.AllocationID, p.Plan.ExpectedRecordVersion, p.Plan.Owner, p.Plan.WorktreeKey)
		}},
	}
	if err := runSteps(r, "prune", j, pruneOrder, steps); err != nil {
		return res, err
	}
	receipt, _ := json.Marshal(map[string]any{"contract": PruneContract, "plan": p.Plan, "plan_id": p.PlanID,
		"released_record_version": p.Plan.ExpectedRecordVersion + 1, "result": decision.RegistrationPruned})
	return res, conclude(r, *j, func(tx *store.Tx) error {
		if err := tx.LogEvent("registration_pruned", p.Plan.AllocationID, map[string]any{
			"plan_id": p.PlanID, "target_path": p.Plan.TargetPath, "worktree_key": p.Plan.WorktreeKey, "owner": p.Plan.Owner,
			"preserving_ref": p.Plan.PreservingRef, "preserving_oid": p.Plan.PreservingOID, "transaction_id": j.TransactionID}); err != nil {
			return err
		}
		return tx.FinishJournal(*j, decision.RegistrationPruned, receipt, store.Now())
	})
}

var pruneOrder = map[string]int{PhasePrepared: 0, PhaseRemoved: 1, PhaseReleased: 2}

// finishTornRemoval finishes a `git worktree remove` that died half-way
// (git lists the worktree no more, its admin dir remains without gitdir);
// an admin dir that is gone needs nothing.
func finishTornRemoval(target, admin string) error {
	if _, err := os.Lstat(admin); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if !removalTorn(admin) {
		return decision.Say(decision.GCPlanDrift, "git-lists", target, admin).
			WithHint("look at git worktree list")
	}
	if err := os.RemoveAll(admin); err != nil {
		return decision.SayWrap(decision.Internal, err, "finish-interrupted", admin)
	}
	return nil
}

// resume validates an interrupted apply's journal against the live state
// (docs/decisions.md, "Registration maintenance"): the same plan id and owner, the target
// still absent, the records as the plan left them (pruneRecordsAsPlanned),
// the audit HEAD still kept by the publication branch, and a registration
// git still lists still the one the plan proved.
func resume(ctx context.Context, r *alloc.Repo, tx *store.Tx, j store.Journal, item *gitrepo.Worktree, owner, apply string) (pruneJournal, error) {
	var p pruneJournal
	if err := strictjson.Decode(j.Payload, &p); err != nil || p.Plan.Contract != PruneContract || p.Plan.TargetPath != j.Target {
		return p, decision.Say(decision.InvalidMetadata, "journal-does-not", j.TransactionID, PruneContract, j.Target).
			WithHint("look at %s by hand; wt never overwrites what it cannot read", "journal/"+j.TransactionID+".json")
	}
	drift := pruneDrift(j.TransactionID, j.Target)
	if p.PlanID != apply {
		return p, drift("applies-plan", p.PlanID, apply)
	}
	if p.Plan.Owner != owner {
		return p, decision.Say(decision.ActiveOwner, "interrupted-prune", j.TransactionID, p.Plan.Owner, owner).
			WithHint("finish it with --owner %s", shell.Word(p.Plan.Owner))
	}
	if _, ok := pruneOrder[j.Phase]; !ok {
		return p, drift("unknown-phase", j.Phase)
	}
	if err := absent(j.Target); err != nil {
		return p, err
	}
	if err := pruneRecordsAsPlanned(tx, p.Plan, drift); err != nil {
		return p, err
	}
	if err := retained(ctx, r, p.Plan.ExpectedHead, p.Plan.PreservingRef); err != nil {
		return p, err
	}
	switch {
	case item != nil && pruneOrder[j.Phase] >= pruneOrder[PhaseRemoved]:
		return p, drift("git-lists-again", j.Target)
	case item != nil:
		// Not yet removed: everything the plan proved must still hold.
		if item.Key != p.Plan.WorktreeKey || item.Head != p.Plan.ExpectedHead {
			return p, drift("registration-changed", j.Target, item.Key, item.Head)
		}
		plan, err := buildPlan(ctx, r, tx, *item, owner)
		if err != nil {
			return p, err
		}
		if err := samePlan(plan, apply); err != nil {
			return p, err
		}
	default:
		if _, err := os.Lstat(p.Plan.AdminPath); !errors.Is(err, fs.ErrNotExist) && !removalTorn(p.Plan.AdminPath) {
			return p, drift("git-lists", j.Target, p.Plan.AdminPath)
		}
	}
	return p, nil
}

// pruneDrift makes the GC_PLAN_DRIFT refusals of prune transaction id on
// target ("" for a plan not yet journaled).
func pruneDrift(id, target string) func(key string, args ...any) error {
	return func(key string, args ...any) error {
		what := decision.Words(decision.GCPlanDrift, key, args...)
		if id != "" {
			return decision.Say(decision.GCPlanDrift, "interrupted-prune", id, what).
				WithHint("run the dry run (wt-admin prune %s --owner OWNER) and look at what changed", shell.Word(target))
		}
		return decision.Say(decision.GCPlanDrift, "prune", target, what).
			WithHint("run the dry run (wt-admin prune %s --owner OWNER) and look at what changed", shell.Word(target))
	}
}

// pruneRecordsAsPlanned checks, with no git, the store's side of a prune
// plan: the same repository, the allocation untouched since the plan or
// released by this very plan, no lease, and its binding not handed to
// anything else. drift nil makes its own refusals.
func pruneRecordsAsPlanned(tx *store.Tx, plan PrunePlan, drift func(string, ...any) error) error {
	if drift == nil {
		drift = pruneDrift("", plan.TargetPath)
	}
	repo, err := tx.Repository()
	if err != nil {
		return err
	}
	if repo.RepositoryID != plan.RepositoryID {
		return drift("repository-id")
	}
	a, err := unleasedAtPlan(tx, "prune", plan.TargetPath, plan.AllocationID, plan.ExpectedRecordVersion, drift, func(a store.Allocation) error {
		if a.Role != store.RoleAudit || a.Lifecycle != store.Retained || a.Owner != plan.Owner || len(a.ExternalBindings) > 0 {
			return drift("allocation-changed-since", a.AllocationID, a.Lifecycle, a.Role, a.Owner)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if b, ok, err := tx.Binding(plan.WorktreeKey); err != nil {
		return err
	} else if ok && b.AllocationID != a.AllocationID {
		return decision.Say(decision.BindingDrift, "worktree-key-now", plan.WorktreeKey, b.AllocationID)
	}
	return nil
}

// unleasedAtPlan is allocationAtPlan, and refuses a writer lease on the
// allocation (LEASE_PRESENT): op (prune, finish) on target never runs
// beside a writer.
func unleasedAtPlan(tx *store.Tx, op, target, id string, version int, drift func(string, ...any) error, unchanged func(store.Allocation) error) (store.Allocation, error) {
	a, err := allocationAtPlan(tx, id, version, drift, unchanged)
	if err != nil {
		return a, err
	}
	if _, ok, err := tx.Lease(a.AllocationID); err != nil {
		return a, err
	} else if ok {
		return a, decision.Say(decision.LeasePresent, "writer-lease", a.TaskKey, op).
			WithHint("see it with wt-admin lease inspect %s", shell.Word(target))
	}
	return a, nil
}

// allocationAtPlan reads the allocation an interrupted apply's plan names
// and refuses (drift) unless it is as the plan found it (at the planned
// record version, and unchanged says so) or released by this very plan (one
// version later, RELEASED, owner unassigned).
func allocationAtPlan(tx *store.Tx, id string, version int, drift func(string, ...any) error, unchanged func(store.Allocation) error) (store.Allocation, error) {
	a, err := tx.Allocation(id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return a, drift("allocation-gone", id)
	case err != nil:
		return a, err
	case a.RecordVersion == version:
		return a, unchanged(a)
	case a.RecordVersion == version+1 && a.Lifecycle == store.Released && a.Owner == unassignedOwner:
		return a, nil
	}
	return a, drift("allocation-record", a.AllocationID, a.RecordVersion, a.Lifecycle, a.Owner, version)
}

// removalTorn reports whether an admin dir is what a `git worktree remove`
// killed half-way leaves of the planned worktree: git deletes the admin dir
// file by file, and once its gitdir file is gone no worktree can use it (git
// does not even list it), so what remains (HEAD, index, logs) belongs to
// nothing. Finishing the removal loses nothing: the checkout itself was
// already gone, which the plan proved.
func removalTorn(admin string) bool {
	_, err := os.Lstat(filepath.Join(admin, "gitdir"))
	return errors.Is(err, fs.ErrNotExist)
}

// buildPlan checks every precondition of a prune (docs/decisions.md), in order,
// and returns the plan.
func buildPlan(ctx context.Context, r *alloc.Repo, tx *store.Tx, item gitrepo.Worktree, owner string) (PrunePlan, error) {
	switch {
	case item.Key == gitrepo.MainKey || item.Key == "":
		return PrunePlan{}, decision.Say(decision.PrunableStateInvalid, "canonical-checkout", item.Path)
	case item.Locked:
		// Before the prunable check: git never lists a locked worktree
		// as prunable, whether its checkout is there or not.
		return PrunePlan{}, decision.Say(decision.PrunableStateInvalid, "locked", item.Path, item.LockReason).
			WithHint("whoever locked it decides: git -C %s worktree unlock %s", shell.Word(r.Git.TopLevel), shell.Word(item.Path))
	case !item.Prunable:
		return PrunePlan{}, withFinishHint(tx, item, decision.Say(decision.PrunableStateInvalid, "not-prunable", item.Path).
			WithHint("prune removes only the registration of a retained audit whose checkout is gone"))
	case !item.Detached || item.Branch != "":
		return PrunePlan{}, withFinishHint(tx, item, decision.Say(decision.PrunableStateInvalid, "has-branch", item.Path, item.Branch).
			WithHint("its branch may hold work; git worktree list shows it"))
	}
	if err := absent(item.Path); err != nil {
		return PrunePlan{}, err
	}
	b, ok, err := tx.Binding(item.Key)
	if err != nil {
		return PrunePlan{}, err
	}
	if !ok {
		return PrunePlan{}, decision.Say(decision.RecordMissing, "worktree-key", item.Path, item.Key).
			WithHint("it is not wt's: git worktree prune removes unmanaged registrations")
	}
	a, err := tx.Allocation(b.AllocationID)
	if errors.Is(err, store.ErrNotFound) {
		return PrunePlan{}, decision.Say(decision.RecordMissing, "binding-names", item.Key, b.AllocationID)
	}
	if err != nil {
		return PrunePlan{}, err
	}
	switch {
	case a.Role != store.RoleAudit || a.Lifecycle != store.Retained:
		return PrunePlan{}, decision.Say(decision.LifecycleNotReleasable, "allocation-task", a.TaskKey, a.Lifecycle, a.Role).
			WithHint("retain it first: %s", shell.Words("wt-admin", "retain", item.Path, "--owner", a.Owner)).WithFact("lifecycle", a.Lifecycle)
	case owner != a.Owner:
		return PrunePlan{}, decision.Say(decision.ActiveOwner, "allocation-task", a.TaskKey, a.Owner, owner).
			WithHint("its owner prunes it: --owner %s", shell.Word(a.Owner))
	case item.Head != a.BaseCommit:
		return PrunePlan{}, decision.Say(decision.TaskEvidencePresent, "audit-head", item.Head, a.BaseCommit).
			WithHint("recover the checkout (git worktree repair) and keep what it holds")
	case len(a.ExternalBindings) > 0:
		return PrunePlan{}, decision.Say(decision.ExternalBinding, "allocation-task-has", a.TaskKey, a.ExternalBindings).
			WithHint("whoever added them removes them first")
	}
	if err := oneBinding(tx, item.Key, a.AllocationID); err != nil {
		return PrunePlan{}, err
	}
	if _, ok, err := tx.Lease(a.AllocationID); err != nil {
		return PrunePlan{}, err
	} else if ok {
		return PrunePlan{}, decision.Say(decision.LeasePresent, "allocation-task", a.TaskKey).
			WithHint("see it with wt-admin lease inspect %s", shell.Word(item.Path))
	}
	repo, err := tx.Repository()
	if err != nil {
		return PrunePlan{}, decision.SayWrap(decision.BlockDrift, err, "repository-metadata")
	}
	pol, ok, err := tx.Policy()
	if err != nil || !ok {
		return PrunePlan{}, decision.Say(decision.BlockDrift, "policy-cannot", err)
	}
	ref := preservingPrefix + pol.PublicationBranch
	refs, err := r.Git.Refs(ctx)
	if err != nil {
		return PrunePlan{}, decision.SayWrap(decision.GitFailed, err, "list-refs")
	}
	oid, ok := refs[ref]
	if !ok {
		return PrunePlan{}, decision.Say(decision.MissingRetainedRef, "does-not", ref, item.Head)
	}
	if err := retained(ctx, r, item.Head, ref); err != nil {
		return PrunePlan{}, err
	}
	return PrunePlan{Contract: PruneContract, RepositoryID: repo.RepositoryID, AllocationID: a.AllocationID, TaskKey: a.TaskKey,
		Owner: a.Owner, TargetPath: item.Path, WorktreeKey: item.Key, AdminPath: gitrepo.AdminDir(r.Git.CommonDir, item.Key),
		ExpectedHead: item.Head, ExpectedRecordVersion: a.RecordVersion, PreservingRef: ref, PreservingOID: oid}, nil
}

// withFinishHint points a prune refusal at finish when the worktree is a
// task's (not an audit's): finish is how a task ends, with or without its
// checkout.
func withFinishHint(tx *store.Tx, item gitrepo.Worktree, e *decision.Error) *decision.Error {
	b, ok, err := tx.Binding(item.Key)
	if err != nil || !ok {
		return e
	}
	a, err := tx.Allocation(b.AllocationID)
	if err != nil || a.Role == store.RoleAudit || a.Lifecycle == store.Released {
		return e
	}
	return e.WithHint("task %s is ended with finish, which keeps its work: %s", a.TaskKey,
		shell.Words("wt-admin", "finish", "--task", a.TaskKey, "--owner", a.Owner))
}

// retained refuses unless commit head is contained in ref.
func retained(ctx context.Context, r *alloc.Repo, head, ref string) error {
	ok, err := r.Git.IsAncestor(ctx, head, ref)
	if err != nil || !ok {
		return decision.Say(decision.MissingRetainedRef, "audit-head", head, ref).
			WithHint("merge or tag it first (git tag keep/%s %s), or recover the checkout", gitrepo.Short(head), head)
	}
	return nil
}

// oneBinding refuses unless key binds id and no other key does.
func oneBinding(tx *store.Tx, key, id string) error {
	keys, err := tx.Bindings()
	if err != nil {
		return err
	}
	var bound []string
	for _, k := range keys {
		b, ok, err := tx.Binding(k)
		if err != nil {
			return err
		}
		if ok && b.AllocationID == id {
			bound = append(bound, k)
		}
	}
	if len(bound) != 1 || bound[0] != key {
		return decision.Say(decision.BindingDrift, "allocation-bound", id, len(bound), bound, key).
			WithHint("inspect the bindings in the store by hand")
	}
	return nil
}

// absent refuses a target path that exists (PATH_REAPPEARED) or cannot be
// inspected (PATH_STATE_UNKNOWN).
func absent(path string) error {
	_, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err == nil:
		return decision.Say(decision.PathReappeared, "exists-again", path).
			WithHint("something re-created the checkout: look at it before pruning anything")
	default:
		return decision.SayWrap(decision.PathStateUnknown, err, "inspect", path)
	}
}

// samePlan refuses a plan whose id is not apply.
func samePlan(plan PrunePlan, apply string) error {
	id, err := PlanID(plan)
	if err != nil {
		return err
	}
	if id != apply {
		return decision.Say(decision.GCPlanDrift, "prune-plan", plan.TargetPath, id, apply).
			WithHint("run the dry run again, check it, and apply its plan_id").WithFact("plan_id", id)
	}
	return nil
}

// journalFor returns the prune journal for target (at most one) and every
// other journal in flight.
func journalFor(tx *store.Tx, target string) (*store.Journal, []store.Journal, error) {
	return journalMatching(tx, "prune", func(j store.Journal) bool { return j.Operation == opPrune && j.Target == target })
}

// journalMatching returns the one journal in flight that mine matches (nil
// when none does) and every other; two matches are an interrupted
// operation's mess that a person looks at.
func journalMatching(tx *store.Tx, what string, mine func(store.Journal) bool) (*store.Journal, []store.Journal, error) {
	js, err := tx.Journals()
	if err != nil {
		return nil, nil, err
	}
	var found *store.Journal
	var others []store.Journal
	for i, j := range js {
		switch {
		case !mine(j):
			others = append(others, j)
		case found != nil:
			return nil, nil, decision.Say(decision.InterruptedTx, "journals-name", what, found.TransactionID, j.TransactionID, j.Target).
				WithHint("look at the journal dir of the store by hand")
		default:
			found = &js[i]
		}
	}
	return found, others, nil
}

// fenced refuses when another journal in flight touches the allocation: a
// prune of another target naming it, or any operation on it.
func fenced(others []store.Journal, allocationID string) error {
	for _, j := range others {
		if bytes.Contains(j.Payload, []byte(allocationID)) {
			return decision.Say(decision.InterruptedTx, "journal-also", j.TransactionID, j.Operation, j.Target, allocationID).
				WithHint("finish or look at that operation first")
		}
	}
	return nil
}

// ResumeCommand is the command that finishes an interrupted prune or finish
// journal (the same apply, run again), for repository repo; ok is false
// when the journal holds no plan wt can read.
func ResumeCommand(repo string, j store.Journal) (string, bool) {
	switch j.Operation {
	case opPrune:
		var p pruneJournal
		if strictjson.Decode(j.Payload, &p) != nil || p.PlanID == "" {
			return "", false
		}
		return shell.Words("wt-admin", "--repo", repo, "prune", j.Target, "--owner", p.Plan.Owner, "--apply", p.PlanID), true
	case opFinish:
		var p finishJournal
		if strictjson.Decode(j.Payload, &p) != nil || p.PlanID == "" {
			return "", false
		}
		return shell.Words("wt-admin", "--repo", repo, "finish", j.Target, "--owner", p.Plan.Owner, "--apply", p.PlanID), true
	}
	return "", false
}

func journalPlanID(j store.Journal) string {
	var p pruneJournal
	if strictjson.Decode(j.Payload, &p) != nil || p.PlanID == "" {
		return "PLAN_ID"
	}
	return p.PlanID
}

// findWorktree is the one `git worktree list` of a run: the entry at target.
func findWorktree(ctx context.Context, r *alloc.Repo, target string) (*gitrepo.Worktree, error) {
	wts, err := r.Git.Inventory(ctx)
	if err != nil {
		return nil, gitrepo.ListFailed(err)
	}
	for i := range wts {
		if wts[i].Path == target {
			return &wts[i], nil
		}
	}
	return nil, nil
}

// removeRegistration runs `git worktree remove` (never --force) on the
// target (for op, which names its crash point) and proves it touched nothing else: every ref and every other
// worktree's registration are the same after it as before (BLOCK_DRIFT).
func removeRegistration(ctx context.Context, r *alloc.Repo, op, target, key string) error {
	refsBefore, err := r.Git.Refs(ctx)
	if err != nil {
		return decision.SayWrap(decision.GitFailed, err, "list-refs")
	}
	before, err := fingerprint(ctx, r, key)
	if err != nil {
		return err
	}
	if err := r.Git.RemoveWorktree(ctx, key, target); decision.CodeOf(err) == decision.GitMetadataUntrusted {
		return err
	} else if err != nil {
		return decision.SayWrap(decision.GitFailed, err, "git-worktree-remove", target).
			WithHint("nothing was forced; look at git worktree list")
	}
	crashpoint.Here(op + ":git-removed")
	refsAfter, err := r.Git.Refs(ctx)
	if err != nil {
		return decision.SayWrap(decision.GitFailed, err, "list-refs")
	}
	after, err := fingerprint(ctx, r, key)
	if err != nil {
		return err
	}
	if item, err := findWorktree(ctx, r, target); err != nil || item != nil {
		return decision.Say(decision.BlockDrift, "git-still", target)
	}
	if !maps.Equal(refsBefore, refsAfter) || before != after {
		return decision.Say(decision.BlockDrift, "refs-other", target).
			WithHint("look at what moved (another process may have committed meanwhile); then apply the same plan id again to finish")
	}
	return nil
}

// fingerprint describes every worktree but key's as git records it: path,
// HEAD, branch, lock and prunable state.
func fingerprint(ctx context.Context, r *alloc.Repo, key string) (string, error) {
	wts, err := r.Git.Inventory(ctx)
	if err != nil {
		return "", gitrepo.ListFailed(err)
	}
	var rows []string
	for _, w := range wts {
		if w.Key != key {
			rows = append(rows, fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%t\x00%t\x00%s\x00%t", w.Key, w.Path, w.Head, w.Branch, w.Detached, w.Locked, w.LockReason, w.Prunable))
		}
	}
	sort.Strings(rows)
	return strings.Join(rows, "\n"), nil
}

// release marks the allocation RELEASED with owner unassigned (once: a
// resumed run finds it done), then removes its binding and registration,
// for operation by (prune, finish), which names its crash point.
func release(tx *store.Tx, by, id string, version int, owner, key string) error {
	a, err := tx.Allocation(id)
	if err != nil {
		return err
	}
	if a.RecordVersion == version {
		a.Lifecycle, a.Owner, a.UpdatedAt = store.Released, unassignedOwner, store.Now()
		if err := tx.PutAllocation(&a); err != nil {
			return err
		}
		if err := tx.LogEvent("allocation_released", a.AllocationID, map[string]any{"by": by, "previous_owner": owner, "task_key": a.TaskKey}); err != nil {
			return err
		}
	}
	crashpoint.Here(by + ":record-released")
	if key == "" {
		return nil
	}
	b, ok, err := tx.Binding(key)
	if err != nil {
		return err
	}
	if ok && b.AllocationID != id {
		return decision.Say(decision.BindingDrift, "worktree-key-now", key, b.AllocationID)
	}
	if ok {
		if err := tx.RemoveBinding(key); err != nil {
			return err
		}
	}
	if reg, _, ok, err := tx.Registration(key); err != nil || !ok || reg.AllocationID != id {
		return err
	}
	return tx.RemoveRegistration(key)
}
