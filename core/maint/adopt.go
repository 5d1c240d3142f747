package maint

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// AdoptRequest is wt-admin adopt: the existing linked worktree at Path
// becomes task Task's, owned by Owner. Apply is the plan id of a dry run.
type AdoptRequest struct {
	Path, Task, Owner string
	NewTask           bool
	Apply             string
	// Holder, when set, is the agent already running in the worktree that
	// becomes its writer (--holder PID): its identity recorded, its lease
	// granted with the adoption.
	Holder *proc.Holder
	// RenameBranch moves the worktree's branch to the task layout's name
	// (wt/KEY) as it is adopted.
	RenameBranch bool
}

// AdoptPlan is what adopt would do, proven from git, the store and the
// processes; its id (PlanID) binds the apply to exactly this.
type AdoptPlan struct {
	Contract     string `json:"contract"`
	RepositoryID string `json:"repository_id"`
	TaskKey      string `json:"task_key"`
	Owner        string `json:"owner"`
	WorktreePath string `json:"worktree_path"`
	WorktreeKey  string `json:"worktree_key"`
	Branch       string `json:"branch"`
	Tip          string `json:"tip"`
	// Lock is git's lock of the worktree when another tool left one, with
	// why wt may lift it (its pid proven gone, or named as the holder).
	Lock *ForeignLockPlan `json:"lock,omitempty"`
	// Holder is the running agent named to become the writer.
	Holder *proc.Holder `json:"holder,omitempty"`
	// RenamedFrom is the branch's name before adopt renames it to Branch
	// (--rename-branch), "" when it is kept.
	RenamedFrom string `json:"renamed_from,omitempty"`
}

// ForeignLockPlan is a foreign git worktree lock adopt lifts.
type ForeignLockPlan struct {
	Reason string `json:"reason"`
	PID    int    `json:"pid"`
	Why    string `json:"why"`
}

// AdoptResult is adopt's answer.
type AdoptResult struct {
	Code         string    `json:"-"`
	Plan         AdoptPlan `json:"plan"`
	PlanID       string    `json:"plan_id"`
	DryRun       bool      `json:"dry_run"`
	AllocationID string    `json:"allocation_id,omitempty"`
	LeaseID      string    `json:"lease_id,omitempty"`
	// Allocation is the allocation apply wrote.
	Allocation store.Allocation `json:"-"`
}

const adoptContract = "wt-adopt-v1"

// Adopt brings an existing linked worktree (made by git worktree add, an
// agent CLI, a worktree manager) under wt: registration, allocation and
// the branch ledger as allocate makes them, its branch kept as it is. Who
// uses it is proven, never assumed: a process using the worktree refuses
// the adoption (WORKTREE_IN_USE) unless it is the agent named as the
// writer (Holder) or one it started, which then holds the worktree's lease;
// a git worktree lock another tool left is lifted only when the pid its
// reason names is proven gone or is the named holder (FOREIGN_LOCK
// otherwise). Dry run first:
// apply recomputes the plan and acts only on the same plan id.
func Adopt(ctx context.Context, r *alloc.Repo, req AdoptRequest) (AdoptResult, error) {
	var res AdoptResult
	if req.Apply != "" {
		if err := ValidPlanID("--apply", req.Apply); err != nil {
			return res, err
		}
	}
	if err := store.ValidTaskKey(req.Task); err != nil {
		return res, err
	}
	if err := store.ValidOwner(req.Owner); err != nil {
		return res, err
	}
	plan, err := planAdopt(ctx, r, req)
	if err != nil {
		return res, err
	}
	id, err := PlanID(plan)
	if err != nil {
		return res, err
	}
	res.Plan, res.PlanID = plan, id
	if req.Apply == "" {
		res.Code, res.DryRun = decision.AdoptReady, true
		return res, nil
	}
	if req.Apply != id {
		return res, decision.Say(decision.ResourcePlanMismatch, "adopt-plan", id, req.Apply).
			WithHint("run wt-admin --repo %s adopt %s --task %s --owner %s again, check the plan, and apply its plan_id",
				shell.Word(r.Git.TopLevel), shell.Word(plan.WorktreePath), shell.Word(req.Task), shell.Word(req.Owner)).WithFact("plan_id", id)
	}
	if plan.RenamedFrom != "" {
		// wt's own ref update, before the worktree is governed: hooks off.
		if _, err := r.Git.GitUnhooked(ctx, "branch", "-m", plan.RenamedFrom, plan.Branch); err != nil {
			return res, decision.SayWrap(decision.GitFailed, err, "git-branch", plan.RenamedFrom, plan.Branch)
		}
	}
	if plan.Lock != nil {
		// The lock's owner is proven gone: lift it (git's own command).
		if _, err := r.Git.Git(ctx, false, "worktree", "unlock", plan.WorktreePath); err != nil {
			return res, decision.SayWrap(decision.GitFailed, err, "git-worktree-unlock", plan.WorktreePath)
		}
	}
	err = r.Store.Write(func(tx *store.Tx) error {
		if err := r.AdoptChecks(tx, req.Task, plan.Branch, req.NewTask); err != nil {
			return err
		}
		if _, bound, err := tx.Binding(plan.WorktreeKey); err != nil {
			return err
		} else if bound {
			return decision.Say(decision.ResourcePlanMismatch, "worktree-was", plan.WorktreePath).
				WithHint("see it with wt-admin --repo %s status", shell.Word(r.Git.TopLevel))
		}
		detail := map[string]any{"plan_id": id}
		if plan.Lock != nil {
			detail["foreign_lock"] = plan.Lock
		}
		a, err := r.WriteAdopted(tx, req.Task, req.Owner, plan.WorktreePath, plan.WorktreeKey, plan.Branch, plan.Tip, detail)
		res.AllocationID, res.Allocation = a.AllocationID, a
		if err != nil || plan.Holder == nil {
			return err
		}
		l, err := lease.GrantAdopted(r, tx, a, *plan.Holder, "wt-admin adopt: the agent at work in the worktree, named as its writer")
		res.LeaseID = l.LeaseID
		return err
	})
	if err != nil {
		return res, err
	}
	res.Code = decision.Adopted
	return res, nil
}

// planAdopt proves what Adopt would do.
func planAdopt(ctx context.Context, r *alloc.Repo, req AdoptRequest) (AdoptPlan, error) {
	repoArg := shell.Word(r.Git.TopLevel)
	c, err := gitrepo.Locate(req.Path)
	if err != nil {
		if d, ok := decision.As(err); ok && d.Code == decision.NotAGitRepository {
			// adopt's PATH is the worktree to take, from the current
			// directory (not from --repo): say so, and where to find it.
			abs, _ := filepath.Abs(req.Path)
			return AdoptPlan{}, decision.Say(decision.NotAGitRepository, "adopt-relative", req.Path, d.Message, abs).
				WithHint("git -C %s worktree list", repoArg)
		}
		return AdoptPlan{}, err
	}
	if !gitrepo.SameFile(c.CommonDir, r.Git.CommonDir) {
		return AdoptPlan{}, decision.Say(decision.InvalidTarget, "checkout-another", c.TopLevel, c.CommonDir).
			WithHint("adopt it from its own repository: wt-admin --repo %s adopt %s --task KEY --owner NAME", shell.Word(c.TopLevel), shell.Word(c.TopLevel))
	}
	if c.Key == gitrepo.MainKey {
		return AdoptPlan{}, decision.Say(decision.InvalidTarget, "canonical-checkout", c.TopLevel).
			WithHint("give the task a worktree of its own: wt-exec -C %s --task %s --owner %s -- COMMAND", shell.Word(c.TopLevel), shell.Word(req.Task), shell.Word(req.Owner))
	}
	if c.Detached || c.Branch == "" {
		return AdoptPlan{}, decision.Say(decision.InvalidBranch, "has-detached", c.TopLevel).
			WithHint("check out a branch in it (git -C %s switch -c BRANCH), then adopt it", shell.Word(c.TopLevel))
	}
	if err := gitrepo.VerifyMetadata(c.CommonDir, c.Key, c.TopLevel); err != nil {
		return AdoptPlan{}, err
	}
	tip, err := gitrepo.ReadRef(c.CommonDir, "refs/heads/"+c.Branch) // unchanged by a rename
	if err != nil || tip == "" {
		return AdoptPlan{}, decision.Say(decision.InvalidBranch, "branch-has", c.TopLevel, c.Branch).
			WithHint("commit in it first, or check out a branch that has one")
	}
	plan := AdoptPlan{Contract: adoptContract, TaskKey: req.Task, Owner: req.Owner, WorktreePath: c.TopLevel, WorktreeKey: c.Key, Branch: c.Branch, Tip: tip, Holder: req.Holder}
	err = r.Store.Read(func(tx *store.Tx) error {
		repo, err := tx.Repository()
		if err != nil {
			return err
		}
		plan.RepositoryID = repo.RepositoryID
		if req.RenameBranch {
			pol, _, err := tx.Policy()
			if err != nil {
				return err
			}
			if b := pol.TaskBranch(req.Task); b != c.Branch {
				if cur, err := gitrepo.ReadRef(c.CommonDir, "refs/heads/"+b); err != nil || cur != "" {
					return decision.Say(decision.BranchExists, "branch-task", b, req.Task).
						WithHint("adopt it with its branch as it is: leave --rename-branch out")
				}
				plan.RenamedFrom, plan.Branch = c.Branch, b
			}
		}
		if b, bound, err := tx.Binding(c.Key); err != nil {
			return err
		} else if bound {
			return decision.Say(decision.InvalidTarget, "governed-already", c.TopLevel, b.AllocationID).
				WithHint("see it with wt-admin --repo %s status", repoArg)
		}
		return r.AdoptChecks(tx, req.Task, plan.Branch, req.NewTask)
	})
	if err != nil {
		return plan, err
	}
	holderPID := 0
	if req.Holder != nil {
		holderPID = req.Holder.PID
	}
	if plan.Lock, err = foreignLock(c, repoArg, holderPID); err != nil {
		return plan, err
	}
	return plan, noOtherUse(c, req, repoArg)
}

// noOtherUse refuses (WORKTREE_IN_USE) a worktree a process uses that is
// neither the named holder nor what it started: wt does not take a
// worktree an agent may be writing in on no one's word; a named holder
// that is not running is INVALID_HOLDER.
func noOtherUse(c gitrepo.Checkout, req AdoptRequest, repoArg string) error {
	scan, err := proc.NewScan()
	if err != nil {
		return decision.SayWrap(decision.Internal, err, "read-proc")
	}
	if req.Holder != nil && !scan.IsLive(req.Holder.Identity()) {
		return decision.Say(decision.InvalidHolder, "named-holder", req.Holder.PID).
			WithHint("name the agent's running process: --holder PID")
	}
	all, err := scan.PathsInUse(c.TopLevel)
	if err != nil {
		return decision.SayWrap(decision.Internal, err, "read-who", c.TopLevel)
	}
	// The named holder and what it started are the writer-to-be.
	mine := map[int]bool{}
	if req.Holder != nil {
		mine[req.Holder.PID] = true
		for _, d := range scan.Descendants(req.Holder.PID) {
			mine[d] = true
		}
	}
	var uses []proc.Use
	for _, u := range all {
		if !mine[u.PID] {
			uses = append(uses, u)
		}
	}
	if len(uses) > 0 {
		var who []string
		for _, u := range uses {
			who = append(who, fmt.Sprintf("pid %d (%s, %s)", u.PID, u.Command, u.Why))
		}
		return decision.Say(decision.WorktreeInUse, "use-wt", c.TopLevel, strings.Join(who, ", ")).
			WithHint("name the agent that is to write there: --holder PID --client-id ID (what it started counts as its own); end the rest; see them with wt-admin --repo %s ps %s", repoArg, shell.Word(c.TopLevel))
	}
	return nil
}

// lockPID finds the pid a lock reason names ("claude agent … (pid N)",
// "pid N", "pid=N").
var lockPID = regexp.MustCompile(`\bpid[ =:]?([0-9]+)\b`)

// foreignLock reads git's lock of checkout c: nil when there is none; a
// plan to lift it when its reason names a pid that is proven gone (no
// process has it); FOREIGN_LOCK when its owner may live (the pid runs: it
// may be the agent, or a process that took the pid since, which the
// reason cannot tell apart) or the reason names none. A lock of wt's own
// on an unbound worktree is a foreign one too: no lease stands behind it.
func foreignLock(c gitrepo.Checkout, repoArg string, holderPID int) (*ForeignLockPlan, error) {
	reason, locked, err := gitrepo.ReadLock(c.CommonDir, c.Key)
	if err != nil {
		return nil, decision.SayWrap(decision.InvalidTarget, err, "read-git", c.TopLevel)
	}
	if !locked {
		return nil, nil
	}
	m := lockPID.FindStringSubmatch(reason)
	if m == nil {
		return nil, decision.Say(decision.ForeignLock, "locked-git", c.TopLevel, reason).
			WithHint("ask whoever locked it; once it is free, git -C %s worktree unlock %s, then adopt it", repoArg, shell.Word(c.TopLevel))
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil || pid <= 0 {
		return nil, decision.Say(decision.ForeignLock, "locked-reason", c.TopLevel, reason).
			WithHint("git -C %s worktree unlock %s once it is free, then adopt it", repoArg, shell.Word(c.TopLevel))
	}
	if pid == holderPID {
		return &ForeignLockPlan{Reason: reason, PID: pid, Why: fmt.Sprintf("pid %d is named as the holder: the lock becomes its lease's", pid)}, nil
	}
	switch err := unix.Kill(pid, 0); {
	case errors.Is(err, unix.ESRCH):
		return &ForeignLockPlan{Reason: reason, PID: pid, Why: fmt.Sprintf("no process has pid %d: whoever locked it is gone", pid)}, nil
	case err == nil || errors.Is(err, unix.EPERM):
		return nil, decision.Say(decision.ForeignLock, "locked-reason-pid", c.TopLevel, reason, pid, proc.Command(pid)).
			WithHint("if it is the agent that is to write there, name it: --holder %d --client-id ID; else end it (kill -TERM %d) or wait for it, then adopt; wt never lifts a lock on its word", pid, pid)
	default:
		return nil, decision.SayWrap(decision.ForeignLock, err, "whether-pid", pid)
	}
}
