package alloc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wt-tool/wt/core/crashpoint"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/core/strictjson"
)

// Request is what allocate is asked for.
type Request struct {
	TaskKey string
	Owner   string
	Role    string // default feature
	Branch  string // default wt/<TaskKey>; audit worktrees are detached
	Base    string // default refs/heads/<publication branch>
	Path    string
	// NewTask says the task key is meant to be new: allocate then does not
	// refuse a key close to a live task's (TASK_KEY_SIMILAR).
	NewTask bool
}

// AllocateResult is the new allocation and what recovery did on the way.
type AllocateResult struct {
	Code       string           `json:"code"`
	Allocation store.Allocation `json:"allocation"`
	Recovered  []Recovery       `json:"recovered"`
}

// Recovery is the outcome of one interrupted allocate found on the way.
type Recovery struct {
	TransactionID string `json:"transaction_id"`
	Path          string `json:"path"`
	TaskKey       string `json:"task_key"`
	Outcome       string `json:"outcome"` // finished, rolled_back, blocked, or in_flight
	// Code is the outcome's decision code: ALLOCATION_RECOVERED,
	// ALLOCATION_ROLLED_BACK, INTERRUPTED_TRANSACTION (blocked) or
	// TRANSACTION_IN_FLIGHT.
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// outcomeCodes are the decision codes of the recovery outcomes.
var outcomeCodes = map[string]string{"finished": decision.AllocationRecovered, "rolled_back": decision.AllocationRolledBack,
	"blocked": decision.InterruptedTx, "in_flight": decision.TransactionInFlight}

// OpAllocate is the journal operation of allocate.
const OpAllocate = "allocate"

// Journal phases of allocate.
const phasePrepared = "PREPARED"

// askGit asks git, before the lock, what an allocate must know: the
// branch's name (the policy's default when none was asked for), the base
// commit, whether the branch exists; so that no git runs while every
// commit in the repository waits for the lock. The section confirms the
// policy these were read under (pre), and the branch against the store.
func (r *Repo) askGit(ctx context.Context, req Request, branch *string) (pre store.Policy, _ *string, commit string, exists bool, err error) {
	if pre, err = policy.Read(r.Store); err != nil {
		return pre, branch, "", false, err
	}
	if branch == nil && req.Role != store.RoleAudit {
		// The default branch follows the policy's layout.
		b := pre.TaskBranch(req.TaskKey)
		if err := r.validBranch(ctx, b); err != nil {
			return pre, branch, "", false, err
		}
		branch = &b
	}
	base := req.Base
	if base == "" {
		base = "refs/heads/" + pre.PublicationBranch
	}
	commit, ok, err := r.Git.ResolveCommit(ctx, base)
	if err != nil {
		return pre, branch, "", false, decision.SayWrap(decision.GitFailed, err, "resolve", base)
	}
	if !ok {
		return pre, branch, "", false, decision.Say(decision.InvalidBase, "names-no", base).
			WithHint("pass --base REV naming an existing commit")
	}
	if branch != nil {
		if exists, err = r.Git.BranchExists(ctx, *branch); err != nil {
			return pre, branch, "", false, decision.SayWrap(decision.GitFailed, err, "look-up", *branch)
		}
	}
	return pre, branch, commit, exists, nil
}

// checkRequest refuses a malformed allocate request (role, task key,
// owner, path, branch) before anything is read, and returns the canonical
// path and the branch asked for (nil: the policy's default, or none for an
// audit).
func (r *Repo) checkRequest(ctx context.Context, req Request) (string, *string, error) {
	if err := store.ValidRole(req.Role); err != nil {
		return "", nil, err
	}
	if err := store.ValidTaskKey(req.TaskKey); err != nil {
		return "", nil, err
	}
	if err := store.ValidOwner(req.Owner); err != nil {
		return "", nil, err
	}
	if req.Path == "" {
		return "", nil, decision.Say(decision.Usage, "allocate-needs-path").WithHint("wt-admin allocate --task KEY --owner NAME PATH")
	}
	if err := store.ValidText("path", req.Path); err != nil {
		return "", nil, err
	}
	if err := store.ValidText("branch", req.Branch); err != nil {
		return "", nil, err
	}
	path, err := proc.Canonical(req.Path)
	if err != nil {
		return "", nil, decision.SayWrap(decision.Usage, err, "path", req.Path)
	}
	if err := pathFree(path); err != nil {
		return "", nil, err
	}
	var branch *string
	if req.Role == store.RoleAudit {
		if req.Branch != "" {
			return "", nil, decision.Say(decision.InvalidBranch, "audit-worktrees").
				WithHint("drop --branch, or use --role feature")
		}
	} else if req.Branch != "" {
		if err := r.validBranch(ctx, req.Branch); err != nil {
			return "", nil, err
		}
		branch = &req.Branch
	}
	return path, branch, nil
}

// Allocate creates a governed worktree: git worktree add, then the
// allocation record, its binding and its registration (document and marker),
// journaled so that a crash anywhere is finished or undone by the next run.
func (r *Repo) Allocate(ctx context.Context, req Request) (AllocateResult, error) {
	var res AllocateResult
	if req.Role == "" {
		req.Role = store.RoleFeature
	}
	path, branch, err := r.checkRequest(ctx, req)
	if err != nil {
		return res, err
	}

	pre, branch, commit, branchExists, err := r.askGit(ctx, req, branch)
	if err != nil {
		return res, err
	}

	// Phase 1, under the lock: finish or undo what crashed before, check the
	// rules, and write the plan.
	var j store.Journal
	var planned store.Allocation
	err = r.Store.Write(func(tx *store.Tx) error {
		// A store made by an older wt gets its branch index here (once).
		if err := tx.EnsureBranchIndex(); err != nil {
			return err
		}
		res.Recovered = r.recover(ctx, tx)
		pol, ok, err := tx.Policy()
		if err != nil {
			return err
		}
		if !ok {
			return decision.Say(decision.InvalidMetadata, "policy-json").WithHint("run wt-admin init")
		}
		if pol.PublicationBranch != pre.PublicationBranch || pol.Layout() != pre.Layout() {
			return decision.Say(decision.PolicyConflict, "policy-changed",
				pre.PublicationBranch, pre.Layout(), pol.PublicationBranch, pol.Layout()).
				WithHint("run the allocate again")
		}
		if err := r.checkTaskAndBudget(tx, req.TaskKey, req.Role, "", pol); err != nil {
			return err
		}
		if !req.NewTask {
			if err := checkSimilarKey(tx, req.TaskKey); err != nil {
				return err
			}
		}
		if branchExists && len(res.Recovered) > 0 {
			// Recovery (which runs git under the lock: the rare case of an
			// allocate that crashed) may have deleted the branch it made.
			if branchExists, err = r.Git.BranchExists(ctx, *branch); err != nil {
				return decision.SayWrap(decision.GitFailed, err, "look-up", *branch)
			}
		}
		if branchExists {
			// Said after the task's own refusal, which is the one to act on.
			return decision.Say(decision.BranchExists, "branch-already", *branch).
				WithHint("pass --branch NAME with a new branch name")
		}
		if branch != nil {
			// git answered before the lock; the store says whether another
			// allocation has taken the branch since (recorded, or planned by
			// an allocate in flight). A branch made by hand meanwhile fails
			// git worktree add, which undoes the plan.
			if err := branchPlanned(tx, r, *branch); err != nil {
				return err
			}
		}
		if err := pathFree(path); err != nil {
			return err
		}
		now := store.Now()
		planned = store.Allocation{AllocationID: ids.New(), TaskKey: req.TaskKey, Owner: req.Owner,
			Role: req.Role, Lifecycle: store.Active, WorktreePath: path, Branch: branch, BaseCommit: commit,
			ExternalBindings: []string{}, CreatedAt: now, UpdatedAt: now}
		payload, err := json.Marshal(planned)
		if err != nil {
			return err
		}
		j = store.Journal{TransactionID: ids.New(), Operation: OpAllocate, Phase: phasePrepared,
			Actor: proc.Actor(), Target: path, Payload: payload, CreatedAt: now, UpdatedAt: now}
		return tx.PutJournal(&j)
	})
	if err != nil {
		return res, err
	}
	crashpoint.Here("allocate:prepared")

	// Phase 2, outside the lock: git does the slow part.
	b := ""
	if branch != nil {
		b = *branch
	}
	// One git worktree add at a time (see store.WithGitAdmin).
	var gitErr error
	turnErr := r.Store.WithGitAdmin(ctx, func() error {
		gitErr = r.Git.AddWorktree(ctx, path, b, planned.BaseCommit, JournalEnv+"="+j.TransactionID)
		return nil
	})
	crashpoint.Here("allocate:worktree-added")

	// Phase 3, under the lock: record it, or undo the plan if git failed
	// (or never ran: a signal while waiting for its turn).
	err = r.Store.Write(func(tx *store.Tx) error {
		if gitErr != nil || turnErr != nil {
			if err := tx.FinishJournal(j, "failed", nil, store.Now()); err != nil {
				return err
			}
			if turnErr != nil {
				return turnErr
			}
			return decision.SayWrap(decision.GitFailed, gitErr, "git-worktree").
				WithHint("fix what git reports, then run wt-admin allocate again")
		}
		a, err := r.finish(ctx, tx, j, planned, "allocated")
		res.Allocation = a
		return err
	})
	if err != nil {
		return res, err
	}
	res.Code = decision.Allocated
	return res, nil
}

func pathFree(path string) error {
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return decision.Say(decision.PathExists, "already-exists", path).
			WithHint("choose a new path; wt never reuses or clears an existing directory")
	}
	return nil
}

// checkTaskAndBudget applies TASK_KEY_IN_USE and BUDGET_EXHAUSTED over every
// allocation and every pending allocate. skip is an allocation id not to
// count (the one being resumed).
func (r *Repo) checkTaskAndBudget(tx *store.Tx, task, role, skip string, pol store.Policy) error {
	all, err := tx.Allocations()
	if err != nil {
		return err
	}
	pending, err := r.pendingAllocations(tx)
	if err != nil {
		return err
	}
	var active []string
	for _, a := range append(append([]store.Allocation{}, all...), pending...) {
		if a.AllocationID == skip {
			continue
		}
		if a.TaskKey == task && (a.Lifecycle == store.Active || a.Lifecycle == store.Retained) {
			return decision.Say(decision.TaskKeyInUse, "task-already", task, a.AllocationID, a.Lifecycle, a.WorktreePath).
				WithFact("allocation_id", a.AllocationID).
				WithHint("%s", taskInUseHint(a))
		}
		if a.Lifecycle == store.Active && a.Role != store.RoleIntegration {
			active = append(active, fmt.Sprintf("%s (task %s)", a.AllocationID, a.TaskKey))
		}
	}
	// wt-admin land's integration worktree is wt's, not an agent's: it
	// takes no share of the budget, and needs none.
	if pol.MaxActive != nil && len(active) >= *pol.MaxActive && role != store.RoleIntegration {
		return decision.Say(decision.BudgetExhausted, "max", decision.Plural(len(active), "active allocation", "active allocations"), *pol.MaxActive, strings.Join(active, ", ")).
			WithFact("holders", active).
			WithHint("retain one with wt-admin retain PATH --owner NAME, or raise the budget with wt-admin policy --max-active N")
	}
	return nil
}

func taskInUseHint(a store.Allocation) string {
	if a.Lifecycle == store.Retained {
		return fmt.Sprintf("resume it with wt-admin resume %s --owner %s, or choose another task key", shell.Word(a.WorktreePath), shell.Word(a.Owner))
	}
	return fmt.Sprintf("work in %s, or choose another task key", shell.Word(a.WorktreePath))
}

// pendingAllocations are the allocations planned by allocate journals still
// in the store: in flight (their actor is live) or blocked. They hold their
// task key and their share of the budget.
func (r *Repo) pendingAllocations(tx *store.Tx) ([]store.Allocation, error) {
	js, err := tx.Journals()
	if err != nil {
		return nil, err
	}
	var out []store.Allocation
	for _, j := range js {
		if j.Operation != OpAllocate {
			continue
		}
		a, err := plannedOf(tx, j)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func plannedOf(tx *store.Tx, j store.Journal) (store.Allocation, error) {
	var a store.Allocation
	if err := strictjson.Decode(j.Payload, &a); err != nil || a.AllocationID == "" || a.WorktreePath != j.Target {
		return a, decision.Say(decision.InvalidMetadata, "journal-does", j.TransactionID, j.Target).
			WithHint("inspect %s by hand", filepath.Join("journal", j.TransactionID+".json"))
	}
	return a, nil
}

// finish writes the records of an allocation whose worktree git has added,
// then the receipt. It is idempotent: run again after a crash half way, it
// writes the same records.
func (r *Repo) finish(ctx context.Context, tx *store.Tx, j store.Journal, planned store.Allocation, how string) (store.Allocation, error) {
	keys, err := gitrepo.AdminKeys(r.Git.CommonDir)
	if err != nil {
		return planned, err
	}
	key, ok := keys[planned.WorktreePath]
	if !ok {
		return planned, decision.Say(decision.InterruptedTx, "git-reports", planned.WorktreePath).
			WithHint("inspect git worktree list; the plan is kept in journal %s", j.TransactionID)
	}
	a := planned
	if existing, err := tx.Allocation(a.AllocationID); err == nil {
		a = existing // a crash after this record was written: keep it as it is
	} else if !errors.Is(err, store.ErrNotFound) {
		return a, err
	} else {
		a.WorktreeKey = key
		a.UpdatedAt = store.Now()
		// The branch index first, so that once the record exists its
		// branch is guarded; an entry whose record a crash kept from being
		// written guards nothing until recovery writes it.
		if err := tx.PutBranch(a); err != nil {
			return a, err
		}
		if err := tx.PutAllocation(&a); err != nil {
			return a, err
		}
	}
	crashpoint.Here("allocate:record-written")
	if err := tx.PutBinding(&store.Binding{WorktreeKey: key, AllocationID: a.AllocationID}); err != nil {
		return a, err
	}
	reg := store.Registration{RegistrationID: ids.New(), WorktreeKey: key, WorktreePath: a.WorktreePath,
		AllocationID: a.AllocationID, CreatedAt: store.Now()}
	if err := tx.PutRegistration(&reg); err != nil {
		return a, err
	}
	// Best effort: without its birth, the ledger begins at the gate's
	// first approved move, with a baseline (ledger.Begin).
	r.ledgerBirth(a)
	if err := event(tx, how, &a, map[string]any{"task_key": a.TaskKey, "owner": a.Owner, "role": a.Role,
		"worktree_path": a.WorktreePath, "worktree_key": key, "branch": a.Branch, "base_commit": a.BaseCommit,
		"registration_id": reg.RegistrationID, "transaction_id": j.TransactionID}); err != nil {
		return a, err
	}
	out, _ := json.Marshal(map[string]string{"allocation_id": a.AllocationID, "worktree_key": key})
	return a, tx.FinishJournal(j, how, out, store.Now())
}

// ledgerBirth starts the branch ledger of allocation a with its branch's
// tip now (store.AppendLedger): the tip the views hold git's against until
// the gate approves a move. Run again after a crash, it finds the ledger
// begun and adds nothing.
func (r *Repo) ledgerBirth(a store.Allocation) {
	if a.Branch == nil || store.HasLedger(r.Store.Root(), a.AllocationID) {
		return
	}
	ref := "refs/heads/" + *a.Branch
	if tip, err := gitrepo.ReadRef(r.Git.CommonDir, ref); err == nil && tip != "" { // none: recovery reports it
		_ = store.AppendLedger(r.Store.Root(), a.AllocationID, store.LedgerLine{Via: store.ViaAllocate, Ref: ref, New: tip}) // Best effort, as above.
	}
}

// JournalEnv names the environment variable that marks the git a journaled
// operation runs, with the journal's transaction id as its value.
const JournalEnv = "WT_JOURNAL"

// recover finishes or undoes every allocate journal whose actor is gone. It
// never fails the caller: what it cannot decide stays journaled, is reported
// as blocked, and keeps holding its task key.
func (r *Repo) recover(ctx context.Context, tx *store.Tx) []Recovery {
	return r.recoverAll(ctx, tx, false)
}

// Recover is `wt-admin recover`: it finishes or undoes every interrupted
// allocate, as the next allocate would, and also lists those still in
// flight (their wt-admin, or the git it started, still runs).
func (r *Repo) Recover(ctx context.Context) ([]Recovery, error) {
	var out []Recovery
	err := r.Store.Write(func(tx *store.Tx) error {
		out = r.recoverAll(ctx, tx, true)
		return nil
	})
	return out, err
}

func (r *Repo) recoverAll(ctx context.Context, tx *store.Tx, inFlight bool) (out []Recovery) {
	out = []Recovery{}
	defer func() {
		for i := range out {
			out[i].Code = outcomeCodes[out[i].Outcome]
		}
	}()
	js, err := tx.Journals()
	if err != nil {
		return out
	}
	pr := proc.NewReader()
	var scan *proc.Scan
	for _, j := range js {
		if j.Operation != OpAllocate {
			continue
		}
		flight := Recovery{TransactionID: j.TransactionID, Path: j.Target, Outcome: "in_flight"}
		if live, err := proc.IsLive(pr, j.Actor); err != nil || live {
			// Still running (or unknowable): in flight, not ours to touch.
			if inFlight {
				flight.Detail = fmt.Sprintf("wt-admin pid %d still runs it", j.Actor.PID)
				out = append(out, flight)
			}
			continue
		}
		// Its git may outlive it: never judge a journal while a process
		// of it (carrying its transaction id) runs.
		if scan == nil {
			if scan, err = proc.NewScan(); err != nil {
				return out
			}
		}
		if pids := scan.CarryingEnv(JournalEnv, j.TransactionID); len(pids) > 0 {
			if inFlight {
				flight.Detail = fmt.Sprintf("its wt-admin is gone but the git it started (pid %d) still runs", pids[0])
				out = append(out, flight)
			}
			continue
		}
		planned, err := plannedOf(tx, j)
		rec := Recovery{TransactionID: j.TransactionID, Path: j.Target, TaskKey: planned.TaskKey}
		if err != nil {
			rec.Outcome, rec.Detail = "blocked", err.Error()
			out = append(out, rec)
			continue
		}
		rec.Outcome, rec.Detail = r.recoverOne(ctx, tx, j, planned)
		out = append(out, rec)
	}
	return out
}

// completeAdd finishes a `git worktree add` that died while checking the
// worktree out (git's "initializing" lock still there), and returns why it
// cannot, or "". It proceeds only when the checkout holds nothing but
// files not yet written (git status shows deletions only): restoring them
// loses nothing. Then it lifts git's lock.
func (r *Repo) completeAdd(ctx context.Context, wt gitrepo.Worktree) string {
	in := &gitrepo.Repo{TopLevel: wt.Path}
	// The git that died may have left its lock files (index.lock,
	// HEAD.lock...) in the new worktree's admin dir: no process of the
	// journal runs (recover checked), so they are nobody's.
	admin := gitrepo.AdminDir(r.Git.CommonDir, wt.Key)
	locks, _ := filepath.Glob(filepath.Join(admin, "*.lock"))
	// In a reftable repository, the lock of the worktree's own table
	// stack (its HEAD and per-worktree refs; nobody else writes it).
	locks = append(locks, filepath.Join(admin, "reftable", "tables.list.lock"))
	if wt.Branch != "" {
		locks = append(locks, filepath.Join(r.Git.CommonDir, "refs", "heads", filepath.FromSlash(wt.Branch)+".lock"))
	}
	for _, l := range locks {
		os.Remove(l) // Best effort: git says which one it still meets.
	}
	// The index may not be written yet: rebuild it from HEAD (a mixed
	// reset never touches the working tree's files). Hooks are off: this
	// runs under the store's lock, which wt's own hook would wait for.
	if _, err := in.GitUnhooked(ctx, "reset", "-q"); err != nil {
		return "rebuild the half-made worktree's index: " + err.Error()
	}
	st, err := in.Git(ctx, true, "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return "the half-made worktree's state cannot be read: " + err.Error()
	}
	missing := false
	for _, line := range strings.Split(strings.TrimRight(string(st), "\n"), "\n") {
		if line != "" && !strings.HasPrefix(line, " D ") {
			return fmt.Sprintf("git worktree add of %s died half-way and the checkout holds changes (%q): look at it, then move it away and run wt-admin allocate again", wt.Path, line)
		}
		missing = missing || line != ""
	}
	if missing {
		if _, err := in.GitUnhooked(ctx, "checkout", "-q", "--", "."); err != nil {
			return "complete the half-made checkout: " + err.Error()
		}
	}
	if _, err := r.Git.GitUnhooked(ctx, "worktree", "unlock", wt.Path); err != nil {
		return "lift git's initializing lock: " + err.Error()
	}
	return ""
}

// discardHalfAdmin removes what a `git worktree add` of planned made before
// it died while writing the new worktree's admin dir, before its checkout
// had begun: an admin dir still locked "initializing" whose files git
// writes before the checkout (gitdir, commondir, HEAD) are not all there,
// or whose HEAD is still the null object name.
// git cannot list worktrees at all while such a dir exists ("failed to
// read commondir"). Only such a dir that names the planned path (or, with
// no gitdir yet, carries its name and nothing else) is removed, with the
// planned checkout's .git file that points at it and the then empty
// directory. It reports what it did, "" when nothing.
func (r *Repo) discardHalfAdmin(planned store.Allocation) string {
	ents, err := os.ReadDir(filepath.Join(r.Git.CommonDir, "worktrees"))
	if err != nil {
		return ""
	}
	base := filepath.Base(planned.WorktreePath)
	for _, e := range ents {
		admin := gitrepo.AdminDir(r.Git.CommonDir, e.Name())
		// git's "initializing" lock, or the empty file of a git killed
		// while writing it (it is the first file git writes there).
		// Read as every admin file is (a regular file, never blocking on a
		// FIFO planted there, never following a symlink): this runs under
		// the store's lock.
		read := func(name string) ([]byte, error) {
			return safefile.Read(filepath.Join(admin, name), 1<<16, safefile.NoFollow)
		}
		lock, err := read("locked")
		if reason := strings.TrimSpace(string(lock)); err != nil || reason != gitrepo.InitializingReason && reason != "" {
			continue
		}
		complete := true
		for _, f := range []string{"gitdir", "commondir", "HEAD"} {
			if b, err := read(f); err != nil || len(b) == 0 {
				complete = false
			}
		}
		// git writes HEAD as the null object name first and points it at
		// the branch or commit only before the checkout (in a reftable
		// repository, the HEAD file is a stub and HEAD is written into
		// the worktree's own table stack: missing there until then).
		if head, err := gitrepo.ReadHead(admin, r.Git.CommonDir); err != nil || head.Target == "" && strings.Trim(head.OID, "0") == "" {
			complete = false
		}
		if complete {
			continue // listed by git: completeAdd's case
		}
		names, _ := os.ReadDir(admin)
		gd, gdErr := read("gitdir")
		ours := gdErr == nil && filepath.Clean(strings.TrimSpace(string(gd))) == filepath.Join(planned.WorktreePath, ".git")
		if !ours && (errors.Is(gdErr, fs.ErrNotExist) || gdErr == nil && len(gd) == 0) && len(names) <= 2 && strings.HasPrefix(e.Name(), base) {
			ours = true // only git's "initializing" lock, under the planned name
		}
		if !ours {
			continue
		}
		if err := os.RemoveAll(admin); err != nil {
			return ""
		}
		removeOrphanDotGit(r.Git.CommonDir, planned.WorktreePath)
		os.Remove(planned.WorktreePath) // Best effort: only an empty directory goes.
		return "git died writing its admin dir " + admin + ", which is removed"
	}
	return ""
}

// removeOrphanDotGit removes the .git file of a checkout directory that
// holds nothing else, when the file is empty (git died writing it) or
// names an admin dir of commonDir that does not exist: it is the first
// thing `git worktree add` writes, and with nothing else beside it there
// is no work to lose.
func removeOrphanDotGit(commonDir, dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 || ents[0].Name() != ".git" || !ents[0].Type().IsRegular() {
		return
	}
	dotgit := filepath.Join(dir, ".git")
	b, err := safefile.Read(dotgit, 1<<16, safefile.NoFollow)
	if err != nil {
		return
	}
	target, isGitdir := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	switch {
	case len(b) == 0:
	case isGitdir && filepath.Dir(filepath.Clean(target)) == filepath.Join(commonDir, "worktrees"):
		if _, err := os.Stat(target); !errors.Is(err, fs.ErrNotExist) {
			return
		}
	default:
		return
	}
	os.Remove(dotgit) // Best effort: what is left is reported.
}

func (r *Repo) recoverOne(ctx context.Context, tx *store.Tx, j store.Journal, planned store.Allocation) (string, string) {
	halfAdmin := r.discardHalfAdmin(planned)
	inv, err := r.Git.Inventory(ctx)
	if err != nil {
		return "blocked", "list worktrees: " + err.Error()
	}
	for _, wt := range inv {
		if filepath.Clean(wt.Path) != planned.WorktreePath {
			continue
		}
		ours := (planned.Branch == nil && wt.Detached && wt.Head == planned.BaseCommit) ||
			(planned.Branch != nil && wt.Branch == *planned.Branch)
		if !ours || wt.Key == "" || wt.Key == gitrepo.MainKey {
			return "blocked", fmt.Sprintf("a worktree at %s is not the one planned (branch %q, head %s)", wt.Path, wt.Branch, wt.Head)
		}
		if wt.Locked && wt.LockReason == gitrepo.InitializingReason {
			if why := r.completeAdd(ctx, wt); why != "" {
				return "blocked", why
			}
		}
		if _, err := r.finish(ctx, tx, j, planned, "allocation_recovered"); err != nil {
			return "blocked", err.Error()
		}
		return "finished", "the worktree was added before the crash; its records are now written"
	}
	if _, err := os.Lstat(planned.WorktreePath); !errors.Is(err, fs.ErrNotExist) {
		// git makes the directory first, then its .git file: an empty
		// directory, or one with nothing but a .git file that is empty or
		// names an admin dir that does not exist, is all a git that died
		// did, and holds nothing to lose (rmdir removes only an empty
		// directory).
		removeOrphanDotGit(r.Git.CommonDir, planned.WorktreePath)
		if os.Remove(planned.WorktreePath) != nil {
			return "blocked", fmt.Sprintf("%s exists but git does not list it as a worktree; move it away after checking its content, then run wt-admin allocate again", planned.WorktreePath)
		}
	}
	detail := "the worktree was never added; the plan is dropped"
	if halfAdmin != "" {
		detail += " (" + halfAdmin + ")"
	}
	if planned.Branch != nil {
		b := *planned.Branch
		if sha, ok, err := r.Git.ResolveCommit(ctx, "refs/heads/"+b); err == nil && ok {
			if sha == planned.BaseCommit {
				// git created the branch at the base commit and died before the checkout:
				// it holds no work. update-ref compares before deleting.
				if err := r.Git.DeleteBranchAt(ctx, b, planned.BaseCommit); err != nil {
					return "blocked", "delete the empty branch " + b + ": " + err.Error()
				}
				detail += "; the branch " + b + " it had created at the base commit is deleted"
			} else {
				detail += "; the branch " + b + " has moved past the base commit and is kept"
			}
		}
	}
	a := planned
	if err := event(tx, "allocation_rolled_back", &a, map[string]any{"task_key": a.TaskKey,
		"worktree_path": a.WorktreePath, "transaction_id": j.TransactionID, "detail": detail}); err != nil {
		return "blocked", err.Error()
	}
	if err := tx.FinishJournal(j, "rolled_back", nil, store.Now()); err != nil {
		return "blocked", err.Error()
	}
	return "rolled_back", detail
}

func (r *Repo) validBranch(ctx context.Context, b string) error {
	if !r.Git.ValidBranchName(ctx, b) {
		return decision.Say(decision.InvalidBranch, "not-valid", b).
			WithHint("pass --branch NAME with a valid git branch name")
	}
	return nil
}

// branchPlanned refuses a branch that a live allocation records, or that
// an allocate in flight plans.
func branchPlanned(tx *store.Tx, r *Repo, branch string) error {
	taken := func(task string) error {
		return decision.Say(decision.BranchExists, "branch-already-exists", branch, task).
			WithHint("pass --branch NAME with a new branch name")
	}
	if a, ok, err := tx.BranchAllocation("refs/heads/" + branch); err != nil {
		return err
	} else if ok && a.Lifecycle != store.Released {
		return taken(a.TaskKey)
	}
	pending, err := r.pendingAllocations(tx)
	if err != nil {
		return err
	}
	for _, p := range pending {
		if p.Branch != nil && *p.Branch == branch {
			return taken(p.TaskKey)
		}
	}
	return nil
}
