package land

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/crashpoint"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/ledger"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// Strategies of integration.
const (
	Rebase = "rebase"
	Merge  = "merge"
	Squash = "squash"
)

// Options is what wt-admin land is asked for.
type Options struct {
	// Tasks are landed in order; Ready takes the ready queue instead.
	Tasks []string
	Ready bool
	// Recover only takes a dead lander's lease over and concludes its
	// landings: nothing is landed.
	Recover bool
	// Test is run in the integration worktree, under wt-exec (ExecBin),
	// on each integrated result: a non-zero exit keeps it off the
	// publication branch.
	Test     string
	ExecBin  string
	Strategy string
	// Wait waits for the publication lease and for each task's writer,
	// Timeout bounds each wait (0: none).
	Wait    bool
	Timeout time.Duration
	// Push publishes each landing to this remote with the same
	// compare-and-swap (--force-with-lease), before it moves the local
	// branch.
	Push string
	// RepoArg is how the user named the repository (for hints).
	RepoArg string
	// Notify gets a line for each step a person watching wants to see.
	Notify func(string)
	// Stderr gets the wt-fleet helper's own complaints (fleet mode).
	Stderr io.Writer
	// Poll is how often a wait looks again (default 100ms).
	Poll time.Duration
}

// TaskResult is how one task's landing ended.
type TaskResult struct {
	Task  string `json:"task"`
	Owner string `json:"owner,omitempty"`
	// Code is LANDED, ALREADY_LANDED, LAND_CONFLICT, LAND_TEST_FAILED, or
	// the refusal that kept the task from landing (WRITER_LEASE_HELD,
	// TASK_NOT_READY, LAND_PUSH_REJECTED, ...).
	Code    string `json:"code"`
	Message string `json:"message"`
	Source  string `json:"source,omitempty"`
	Onto    string `json:"onto,omitempty"`
	Result  string `json:"result,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// AttemptRef keeps a failed attempt.
	AttemptRef string   `json:"attempt_ref,omitempty"`
	Paths      []string `json:"paths,omitempty"`
	TestExit   int      `json:"test_exit,omitempty"`
	TestLog    string   `json:"test_log,omitempty"`
	// Retries counts integrations done again because the publication
	// branch moved under the landing.
	Retries int `json:"retries,omitempty"`
}

// Result is what wt-admin land did.
type Result struct {
	Code   string                 `json:"code"`
	Branch string                 `json:"branch"`
	Tip    string                 `json:"tip"`
	Lease  store.PublicationLease `json:"lease"`
	// TookOver is the dead lander's lease this one took over.
	TookOver *store.PublicationLease `json:"took_over,omitempty"`
	// Recovered are the landings of a dead lander that this one
	// concluded (landed, or not).
	Recovered []string     `json:"recovered"`
	Tasks     []TaskResult `json:"tasks"`
}

// Failed is the first task that did not land, nil when all did.
func (r Result) Failed() *TaskResult {
	for i, t := range r.Tasks {
		if t.Code != decision.Landed && t.Code != decision.AlreadyLanded {
			return &r.Tasks[i]
		}
	}
	return nil
}

// IntegrationTask is the task key of wt's integration worktree, where land
// integrates and tests (role integration, its own branch IntegrationTask).
const IntegrationTask = "wt-land"

// maxRetries bounds the integrations of one task redone because the
// publication branch moved under it.
const maxRetries = 5

// OpLand is the journal operation of a landing's compare-and-swap: the
// integration intent, written before the publication branch moves, so
// that whoever finds it knows what a dead lander may have moved.
const OpLand = "land"

// intent is a land journal's payload.
type intent struct {
	AllocationID string `json:"allocation_id"`
	Task         string `json:"task"`
	Source       string `json:"source"`
	Onto         string `json:"onto"`
	Result       string `json:"result"`
	Attempt      int    `json:"attempt"`
	Strategy     string `json:"strategy"`
}

// lander is one run of wt-admin land.
type lander struct {
	ctx   context.Context
	r     *alloc.Repo
	opts  Options
	pol   store.Policy
	ref   string // refs/heads/<publication branch>
	lease store.PublicationLease
	// fleet is the remote's publication lease in etcd (fleet mode).
	fleet  fleet.Session
	iwt    store.Allocation // the integration worktree
	notify func(string)
}

// Land lands opts.Tasks (or the ready queue) onto the publication branch,
// one at a time, holding the publication lease throughout. A task that
// conflicts or fails its test is handed back (its landing record says so)
// and the next goes on. The error is nil when the lease was taken, even if
// tasks failed: Result.Failed says.
func Land(ctx context.Context, r *alloc.Repo, opts Options) (Result, error) {
	var res Result
	if opts.Strategy == "" {
		opts.Strategy = Rebase
	}
	switch opts.Strategy {
	case Rebase, Merge, Squash:
	default:
		return res, decision.New(decision.Usage, "--strategy %q is not rebase, merge or squash", opts.Strategy).
			WithHint("wt-admin land --strategy rebase --task KEY")
	}
	if len(opts.Tasks) == 0 && !opts.Ready && !opts.Recover {
		return res, decision.New(decision.Usage, "land needs --task KEY (one or more) or --ready").
			WithHint("wt-admin --repo %s land --ready", opts.RepoArg)
	}
	if opts.Poll <= 0 {
		opts.Poll = 100 * time.Millisecond
	}
	if opts.Notify == nil {
		opts.Notify = func(string) {}
	}
	pol, err := policy.Read(r.Store)
	if err != nil {
		return res, err
	}
	l := &lander{ctx: ctx, r: r, opts: opts, pol: pol, ref: "refs/heads/" + pol.PublicationBranch, notify: opts.Notify}
	res.Branch = pol.PublicationBranch
	if l.lease, res.TookOver, err = acquire(ctx, r, pol.PublicationBranch, opts.RepoArg, opts.Wait, opts.Timeout, opts.Poll); err != nil {
		return res, err
	}
	defer release(r, l.lease)
	if pol.FleetOn() {
		if opts.Stderr == nil {
			opts.Stderr = io.Discard
		}
		if l.fleet, err = fleetLease(ctx, r, pol, &l.lease, opts.Stderr, opts.RepoArg, opts.Wait, opts.Timeout, opts.Poll); err != nil {
			return res, err
		}
		defer l.fleet.Release(context.WithoutCancel(ctx))
	}
	res.Lease = l.lease
	if res.TookOver != nil {
		l.notify(fmt.Sprintf("took the publication lease over from dead lander pid %d (%s)", res.TookOver.Holder.PID, deathProof(res.TookOver.Holder)))
	}
	crashpoint.Here("land:acquired")
	if res.Recovered, err = l.recover(); err != nil {
		return res, err
	}
	if opts.Recover {
		res.Code = decision.LandRecovered
		res.Tip, _, _ = r.Git.ResolveCommit(ctx, l.ref)
		return res, nil
	}
	tasks := opts.Tasks
	if opts.Ready {
		if tasks, err = readyQueue(r); err != nil {
			return res, err
		}
	}
	if len(tasks) == 0 {
		res.Code = decision.NothingToLand
		res.Tip, _, _ = r.Git.ResolveCommit(ctx, l.ref)
		return res, nil
	}
	if l.iwt, err = l.integrationWorktree(); err != nil {
		return res, err
	}
	for _, task := range tasks {
		if err := setTask(r, &l.lease, task); err != nil {
			return res, err
		}
		tr, err := l.landOne(task)
		if err != nil {
			return res, err
		}
		res.Tasks = append(res.Tasks, tr)
		l.notify(fmt.Sprintf("%s: %s: %s", task, tr.Code, tr.Message))
		if tr.Code == decision.LandPushRejected {
			break // the remote moved: every later landing would be refused too
		}
	}
	res.Code = decision.Landed
	if f := res.Failed(); f != nil {
		res.Code = f.Code
	}
	res.Tip, _, _ = r.Git.ResolveCommit(ctx, l.ref)
	return res, nil
}

// readyQueue is the tasks marked ready, in the order they became ready
// (a task finished since is not).
func readyQueue(r *alloc.Repo) ([]string, error) {
	var out []string
	err := r.Store.Read(func(tx *store.Tx) error {
		ls, err := tx.Landings()
		if err != nil {
			return err
		}
		for _, l := range ls {
			if l.State != store.LandingReady {
				continue
			}
			if a, err := tx.Allocation(l.AllocationID); err == nil && a.Lifecycle != store.Released {
				out = append(out, l.TaskKey)
			}
		}
		return nil
	})
	return out, err
}

// integrationWorktree is wt's integration worktree (IntegrationTask, role
// integration, at IntegrationPath), allocated the first time.
func (l *lander) integrationWorktree() (store.Allocation, error) {
	a, err := l.r.TaskAllocation(IntegrationTask)
	if err != nil {
		return store.Allocation{}, err
	}
	if a != nil {
		if a.Role != store.RoleIntegration {
			return *a, decision.New(decision.TaskKeyInUse, "task %s, which wt-admin land integrates in, is a %s allocation at %s", IntegrationTask, a.Role, a.WorktreePath).
				WithHint("finish that task (wt-admin --repo %s finish --task %s --owner %s), then land again", l.opts.RepoArg, IntegrationTask, shell.Word(a.Owner))
		}
		return *a, nil
	}
	l.notify("making the integration worktree")
	res, err := l.r.Allocate(l.ctx, alloc.Request{TaskKey: IntegrationTask, Owner: ClientID, Role: store.RoleIntegration,
		Branch: IntegrationTask, Path: IntegrationPath(l.r.Git.TopLevel), NewTask: true})
	return res.Allocation, err
}

// IntegrationPath is where land makes its integration worktree for the
// repository whose canonical checkout is at top: beside it, hidden
// (.NAME-wt-land). Not inside the git dir, where git and wt's hooks do not
// take a directory for a worktree's.
func IntegrationPath(top string) string {
	return filepath.Join(filepath.Dir(top), "."+filepath.Base(top)+"-"+IntegrationTask)
}

// git runs git in the integration worktree, with hooks off: its moves
// are wt's own (the integration branch, its HEAD), and a hook there
// (a commit-msg, a formatter) is not the lander's to run.
func (l *lander) git(args ...string) (string, error) {
	out, err := l.r.Git.GitIn(l.ctx, l.iwt.WorktreeKey, l.iwt.WorktreePath, false, args...)
	return strings.TrimSpace(string(out)), err
}

// taskOf is task's feature allocation (ACTIVE or RETAINED) and its
// landing record.
func (l *lander) taskOf(task string) (store.Allocation, store.Landing, *decision.Error) {
	var a store.Allocation
	var rec store.Landing
	var refusal *decision.Error
	err := l.r.Store.Read(func(tx *store.Tx) error {
		all, err := tx.Allocations()
		if err != nil {
			return err
		}
		for _, x := range all {
			if x.TaskKey == task && x.Lifecycle != store.Released && x.Role == store.RoleFeature && x.Branch != nil {
				a = x
				rec, _, err = tx.Landing(x.AllocationID)
				return err
			}
		}
		refusal = decision.New(decision.NotReady, "task %s has no ACTIVE or RETAINED feature allocation with a branch", task).
			WithHint("see the tasks: wt-admin --repo %s status", l.opts.RepoArg)
		return nil
	})
	if err != nil {
		return a, rec, asDecision(err)
	}
	return a, rec, refusal
}

// asDecision is err as a decision, wrapped INTERNAL_ERROR when it is not
// one.
func asDecision(err error) *decision.Error {
	var d *decision.Error
	if errors.As(err, &d) {
		return d
	}
	return decision.Wrap(decision.Internal, err, "land")
}

// writer reports a live writer of allocation a ("" when none).
func (l *lander) writer(a store.Allocation) (string, error) {
	var desc string
	err := l.r.Store.Read(func(tx *store.Tx) error {
		le, live, err := alloc.LiveWriter(tx, a)
		if live {
			desc = fmt.Sprintf("client %s, pid %d, since %s", le.Holder.ClientID, le.Holder.PID, le.AcquiredAt)
		}
		return err
	})
	return desc, err
}

// quiescent waits (with --wait) until task's writer has ended, or refuses
// WRITER_LEASE_HELD.
func (l *lander) quiescent(a store.Allocation) *decision.Error {
	var deadline time.Time
	if l.opts.Timeout > 0 {
		deadline = time.Now().Add(l.opts.Timeout)
	}
	for waiting := false; ; waiting = true {
		who, err := l.writer(a)
		if err != nil {
			return asDecision(err)
		}
		if who == "" {
			return nil
		}
		d := decision.New(decision.WriterLeaseHeld, "task %s's writer still runs (%s): a task lands once its writer has let go", a.TaskKey, who).
			WithHint("wait for it: wt-admin --repo %s land --wait --task %s", l.opts.RepoArg, shell.Word(a.TaskKey))
		if !l.opts.Wait {
			return d
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return decision.New(decision.LandWaitTimeout, "waited %s: %s", l.opts.Timeout, d.Message).WithHint("%s", d.Hint)
		}
		if !waiting {
			l.notify(fmt.Sprintf("%s: waiting for task %s's writer (%s) to let go", a.TaskKey, a.TaskKey, who))
		}
		if err := pause(l.ctx, l.opts.Poll, "waiting for task "+a.TaskKey+"'s writer"); err != nil {
			return err
		}
	}
}

// landOne lands one task; an error is one that ends the whole run (the
// lease lost, the store unreadable), a task's own failure is its result.
func (l *lander) landOne(task string) (TaskResult, error) {
	tr := TaskResult{Task: task}
	fail := func(d *decision.Error) (TaskResult, error) {
		tr.Code, tr.Message = d.Code, d.Message
		return tr, nil
	}
	a, rec, d := l.taskOf(task)
	if d != nil {
		return fail(d)
	}
	tr.Owner = a.Owner
	if d := l.quiescent(a); d != nil {
		return fail(d)
	}
	for ; ; tr.Retries++ {
		if l.opts.Push != "" {
			if d, err := l.catchUp(); err != nil || d != nil {
				if d != nil {
					return fail(d)
				}
				return tr, err
			}
		}
		source, ok, err := l.r.Git.ResolveCommit(l.ctx, "refs/heads/"+*a.Branch)
		if err != nil || !ok {
			return fail(decision.New(decision.GitFailed, "task %s's branch %s names no commit (%v)", task, *a.Branch, err).
				WithHint("see it: wt-admin --repo %s status", l.opts.RepoArg))
		}
		onto, ok, err := l.r.Git.ResolveCommit(l.ctx, l.ref)
		if err != nil || !ok {
			return tr, decision.New(decision.PublicationUnknown, "the publication branch %s names no commit (%v)", l.ref, err)
		}
		tr.Source, tr.Onto = source, onto
		if in, err := l.r.Git.IsAncestor(l.ctx, source, onto); err != nil {
			return tr, decision.Wrap(decision.GitFailed, err, "is %s in %s", source, l.ref)
		} else if in {
			tr.Result = onto
			return l.landed(a, rec, tr, decision.AlreadyLanded, fmt.Sprintf("%s already holds task %s's branch (%.12s)", l.pol.PublicationBranch, task, source))
		}
		if rec.State == store.LandingLanded && rec.Source == source && rec.Result != "" {
			// Landed already (squashed or rebased: not an ancestor), and
			// its branch has not moved since: the same work lands once.
			if in, err := l.r.Git.IsAncestor(l.ctx, rec.Result, onto); err == nil && in {
				tr.Result = rec.Result
				tr.Code, tr.Message = decision.AlreadyLanded, fmt.Sprintf("task %s's branch (%.12s) landed as %.12s, which %s holds", task, source, rec.Result, l.pol.PublicationBranch)
				return tr, nil
			}
		}
		attempt := rec.Attempts + 1
		tr.Attempt = attempt
		l.notify(fmt.Sprintf("%s: integrating %.12s onto %s (%.12s), %s, attempt %d", task, source, l.pol.PublicationBranch, onto, l.opts.Strategy, attempt))
		result, paths, err := l.integrate(task, source, onto)
		if err != nil {
			return tr, err
		}
		crashpoint.Here("land:integrated")
		if paths != nil {
			tr.Paths = paths
			return l.handBack(a, rec, tr, store.LandingConflict, source,
				decision.New(decision.LandConflict, "task %s's branch does not %s onto %s: %s conflict", task, l.opts.Strategy, l.pol.PublicationBranch, strings.Join(paths, ", ")))
		}
		tr.Result = result
		if result == onto {
			return l.landed(a, rec, tr, decision.AlreadyLanded, fmt.Sprintf("task %s's changes are in %s already: integrating them changed nothing", task, l.pol.PublicationBranch))
		}
		if l.opts.Test != "" {
			exit, logPath, err := l.test(task, attempt, result)
			if err != nil {
				return tr, err
			}
			crashpoint.Here("land:tested")
			if exit != 0 {
				tr.TestExit, tr.TestLog = exit, logPath
				return l.handBack(a, rec, tr, store.LandingTestFailed, result,
					decision.New(decision.LandTestFailed, "task %s integrated onto %s fails the test (exit %d; its output: %s)", task, l.pol.PublicationBranch, exit, logPath))
			}
		}
		moved, d, err := l.publish(a, tr)
		if err != nil {
			return tr, err
		}
		if d != nil {
			return fail(d)
		}
		if moved {
			return l.landed(a, rec, tr, decision.Landed, fmt.Sprintf("%s moved %.12s -> %.12s", l.pol.PublicationBranch, onto, result))
		}
		if tr.Retries >= maxRetries {
			return fail(decision.New(decision.LandConflict, "%s moved under task %s's landing %d times: not landed", l.pol.PublicationBranch, task, tr.Retries+1).
				WithHint("land it again when the branch is quiet: wt-admin --repo %s land --task %s", l.opts.RepoArg, shell.Word(task)))
		}
		l.notify(fmt.Sprintf("%s: %s moved meanwhile; integrating again", task, l.pol.PublicationBranch))
	}
}

// catchUp brings the local publication branch to the remote's (--push):
// the remote's tip is the one to integrate onto, and another machine's
// lander may have moved it. The local branch is fast-forwarded by the
// lander's compare-and-swap; one that holds commits the remote lacks is
// LAND_PUSH_REJECTED (a person decides which is right).
func (l *lander) catchUp() (*decision.Error, error) {
	if _, err := l.r.Git.Git(l.ctx, false, "fetch", "-q", "--end-of-options", l.opts.Push, l.ref); err != nil {
		return decision.Wrap(decision.LandPushRejected, err, "fetch %s from %s", l.ref, l.opts.Push).
			WithHint("check the remote: git -C %s ls-remote %s %s", l.opts.RepoArg, shell.Word(l.opts.Push), l.ref), nil
	}
	remote, ok, err := l.r.Git.ResolveCommit(l.ctx, "FETCH_HEAD")
	if err != nil || !ok {
		return nil, decision.New(decision.GitFailed, "read what git fetch brought from %s (%v)", l.opts.Push, err)
	}
	local, _, err := l.r.Git.ResolveCommit(l.ctx, l.ref)
	if err != nil || local == remote {
		return nil, err
	}
	if ff, err := l.r.Git.IsAncestor(l.ctx, local, remote); err != nil {
		return nil, decision.Wrap(decision.GitFailed, err, "compare %s with %s's", l.ref, l.opts.Push)
	} else if !ff {
		return decision.New(decision.LandPushRejected, "%s holds commits that %s's %s lacks (at %.12s, the remote at %.12s): the lander integrates onto the remote's tip and will not drop them", l.ref, l.opts.Push, l.pol.PublicationBranch, local, remote).
			WithHint("see them: git -C %s log %s..%s", l.opts.RepoArg, remote, l.ref), nil
	}
	l.recordMove(local, remote)
	if _, err := l.r.Git.Git(l.ctx, false, "update-ref", "-m", "wt-admin land: fast-forward to "+l.opts.Push, l.ref, remote, local); err != nil {
		return nil, decision.Wrap(decision.GitFailed, err, "fast-forward %s to %s's %.12s", l.ref, l.opts.Push, remote).
			WithHint("if git names a lock file, doctor says whether a dead git left it and how to remove it: wt-admin --repo %s doctor", l.opts.RepoArg)
	}
	l.notify(fmt.Sprintf("%s fast-forwarded to %s's %.12s", l.pol.PublicationBranch, l.opts.Push, remote))
	return nil, nil
}

// clearStaleLocks removes the lock files (its index, HEAD, the wt-land
// branch) and half-begun rebase a git killed with its lander left in the
// integration worktree, once
// no process uses that worktree: this lander holds the publication lease,
// so no other lander's git is at work there, and a killed lander's test
// or git that still runs is waited for, never raced. A reading of the
// processes that fails is not taken for none.
func (l *lander) clearStaleLocks() error {
	admin := gitrepo.AdminDir(l.r.Git.CommonDir, l.iwt.WorktreeKey)
	var locks []string
	for _, p := range []string{filepath.Join(admin, "index.lock"), filepath.Join(admin, "HEAD.lock"), filepath.Join(admin, "ORIG_HEAD.lock"),
		filepath.Join(l.r.Git.CommonDir, "refs", "heads", IntegrationTask+".lock")} {
		if _, err := os.Lstat(p); err == nil {
			locks = append(locks, p)
		}
	}
	var ops []string // an operation a killed git left half begun
	for _, d := range []string{"rebase-merge", "rebase-apply"} {
		if _, err := os.Lstat(filepath.Join(admin, d)); err == nil {
			ops = append(ops, filepath.Join(admin, d))
		}
	}
	if len(locks) == 0 && len(ops) == 0 {
		return nil
	}
	for {
		s, err := proc.NewScan()
		if err != nil {
			return decision.Wrap(decision.Internal, err, "read the processes to see whether %s is in use", l.iwt.WorktreePath)
		}
		uses, err := s.PathsInUse(l.iwt.WorktreePath)
		if err != nil {
			return decision.Wrap(decision.Internal, err, "read the processes to see whether %s is in use", l.iwt.WorktreePath)
		}
		if len(uses) == 0 {
			break
		}
		l.notify(fmt.Sprintf("waiting for pid %d (%s), left by a killed lander, to leave the integration worktree", uses[0].PID, uses[0].Command))
		if err := pause(l.ctx, l.opts.Poll, "waiting for the integration worktree"); err != nil {
			return err
		}
	}
	for _, p := range locks {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return decision.Wrap(decision.Internal, err, "remove the stale %s", p)
		}
	}
	for _, d := range ops {
		// git's own way first; a state git cannot read (killed while
		// writing it) goes as a whole: it is wt's worktree, and unused.
		l.git("rebase", "--abort")
		if _, err := os.Lstat(d); err == nil {
			l.git("rebase", "--quit")
		}
		if _, err := os.Lstat(d); err == nil {
			if err := os.RemoveAll(d); err != nil {
				return decision.Wrap(decision.Internal, err, "remove the stale %s", d)
			}
		}
	}
	return l.r.Store.Write(func(tx *store.Tx) error {
		return tx.LogEvent("land_leftovers_removed", l.iwt.AllocationID, map[string]any{"locks": locks, "operations": ops,
			"why": "left by a git killed with its lander; no process uses the integration worktree"})
	})
}

// integrate makes the integration of source onto onto in the integration
// worktree: the result commit, or the conflicting paths (nothing made).
func (l *lander) integrate(task, source, onto string) (string, []string, error) {
	// Whatever an interrupted lander left: git's locks and a half-begun
	// rebase (clearStaleLocks), files (clean), and changes or a merge in
	// progress (checkout -f, below, discards them and git's merge state).
	if err := l.clearStaleLocks(); err != nil {
		return "", nil, err
	}
	if _, err := l.git("clean", "-q", "-ffdx"); err != nil {
		return "", nil, decision.Wrap(decision.GitFailed, err, "clean the integration worktree %s", l.iwt.WorktreePath)
	}
	start := onto
	if l.opts.Strategy == Rebase {
		start = source
	}
	if _, err := l.git("checkout", "-q", "-f", "-B", IntegrationTask, start); err != nil {
		return "", nil, decision.Wrap(decision.GitFailed, err, "check %.12s out in the integration worktree", start)
	}
	var err error
	switch l.opts.Strategy {
	case Rebase:
		_, err = l.git("rebase", "-q", onto)
	case Merge:
		_, err = l.git("merge", "-q", "--no-ff", "--no-edit", "-m", "Land task "+task+" (wt-admin land)", source)
	case Squash:
		if _, err = l.git("merge", "-q", "--squash", source); err == nil {
			if staged, _ := l.git("diff", "--cached", "--name-only"); staged == "" {
				break // nothing new: the result is onto
			}
			subjects, _ := l.git("log", "--format=- %s", onto+".."+source)
			_, err = l.git("commit", "-q", "-m", "Land task "+task+" (squashed by wt-admin land)\n\n"+subjects)
		}
	}
	if err != nil {
		paths, _ := l.git("diff", "--name-only", "--diff-filter=U")
		abort := map[string][]string{Rebase: {"rebase", "--abort"}, Merge: {"merge", "--abort"}, Squash: {"reset", "-q", "--hard"}}[l.opts.Strategy]
		l.git(abort...) // Best effort: the next integration resets anyway.
		if paths == "" {
			return "", nil, decision.Wrap(decision.GitFailed, err, "%s task %s onto %.12s", l.opts.Strategy, task, onto).
				WithHint("set git's identity if git asked for it (git config user.name NAME; git config user.email EMAIL), then land again")
		}
		return "", strings.Split(paths, "\n"), nil
	}
	head, err := l.git("rev-parse", "HEAD")
	if err != nil {
		return "", nil, decision.Wrap(decision.GitFailed, err, "read the integration's result")
	}
	return head, nil, nil
}

// test runs --test in the integration worktree under wt-exec, its output
// to the attempt's log file, with the task in $WT_LAND_TASK and the commit
// under test (the integration worktree's HEAD) in $WT_LAND_RESULT; it
// returns the exit status.
func (l *lander) test(task string, attempt int, result string) (int, string, error) {
	logPath := filepath.Join(l.r.Store.Root(), store.LandLogsDir, task, strconv.Itoa(attempt)+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return 0, "", decision.Wrap(decision.Internal, err, "make %s", filepath.Dir(logPath))
	}
	f, err := os.Create(logPath)
	if err != nil {
		return 0, "", decision.Wrap(decision.Internal, err, "create %s", logPath)
	}
	defer f.Close()
	l.notify(fmt.Sprintf("%s: testing: %s (output: %s)", task, l.opts.Test, logPath))
	cmd := exec.CommandContext(l.ctx, l.opts.ExecBin, "-C", l.iwt.WorktreePath, "--", "sh", "-c", l.opts.Test)
	cmd.Dir, cmd.Stdout, cmd.Stderr = l.iwt.WorktreePath, f, f
	cmd.Env = append(os.Environ(), "WT_LAND_TASK="+task, "WT_LAND_RESULT="+result)
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), logPath, nil
		}
		return ee.ExitCode(), logPath, nil
	}
	if err != nil {
		return 0, logPath, decision.Wrap(decision.CommandNotFound, err, "run the test under %s", l.opts.ExecBin)
	}
	return 0, logPath, nil
}

// publish moves the publication branch from tr.Onto to tr.Result: the
// integration intent first (a journal), then the remote (--push, with the
// same compare-and-swap), then the local branch by compare-and-swap. moved
// is false when the branch was no longer at tr.Onto (integrate again); d
// is a refusal that keeps the task from landing.
func (l *lander) publish(a store.Allocation, tr TaskResult) (moved bool, d *decision.Error, err error) {
	payload, _ := json.Marshal(intent{AllocationID: a.AllocationID, Task: tr.Task, Source: tr.Source, Onto: tr.Onto, Result: tr.Result, Attempt: tr.Attempt, Strategy: l.opts.Strategy})
	self, err := proc.Self()
	if err != nil {
		return false, nil, err
	}
	j := store.Journal{Meta: store.Meta{SchemaVersion: store.SchemaVersion}, TransactionID: ids.New(), Operation: OpLand, Phase: "INTEGRATED",
		Actor: self, Target: "publication:" + tr.Task, Payload: payload, CreatedAt: store.Now(), UpdatedAt: store.Now()}
	if err := l.r.Store.Write(func(tx *store.Tx) error {
		cur, ok, err := tx.PublicationLease()
		if err != nil {
			return err
		}
		if !ok || cur.LeaseID != l.lease.LeaseID {
			return lost(&l.lease)
		}
		return tx.PutJournal(&j)
	}); err != nil {
		return false, nil, err
	}
	crashpoint.Here("land:intent")
	if l.fleet != nil {
		select {
		case <-l.fleet.Lost():
			if cerr := l.r.Store.Write(func(tx *store.Tx) error { return tx.FinishJournal(j, "fleet_lease_lost", payload, store.Now()) }); cerr != nil {
				return false, nil, cerr
			}
			return false, nil, fleetLost(l.pol.PublicationBranch, l.opts.RepoArg)
		default:
		}
	}
	conclude := func(outcome string) error {
		return l.r.Store.Write(func(tx *store.Tx) error { return tx.FinishJournal(j, outcome, payload, store.Now()) })
	}
	if l.opts.Push != "" {
		l.notify(fmt.Sprintf("%s: pushing %.12s to %s %s", tr.Task, tr.Result, l.opts.Push, l.pol.PublicationBranch))
		out, err := l.r.Git.Git(l.ctx, false, "push", "--porcelain", "--force-with-lease="+l.ref+":"+tr.Onto, l.opts.Push, tr.Result+":"+l.ref)
		if err != nil {
			if cerr := conclude("push_rejected"); cerr != nil {
				return false, nil, cerr
			}
			why := err.Error()
			for _, line := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(line, "!") { // git push --porcelain: a ref refused, and why
					why = strings.TrimSpace(line[strings.LastIndexByte(line, '\t')+1:])
				}
			}
			return false, decision.New(decision.LandPushRejected, "%s refused %s at %.12s (it must be at %.12s, where the landing integrated onto): %s", l.opts.Push, l.pol.PublicationBranch, tr.Result, tr.Onto, why).
				WithHint("bring %s up to date (git fetch %s; git -C %s merge --ff-only %s/%s), then land again", l.pol.PublicationBranch, l.opts.Push, shell.Word(l.r.Git.TopLevel), l.opts.Push, l.pol.PublicationBranch), nil
		}
		crashpoint.Here("land:pushed")
	}
	// The compare-and-swap, with hooks on: the gate sees the lander move
	// the branch (and refuses anyone else, under --publication-lease on).
	l.recordMove(tr.Onto, tr.Result)
	_, err = l.r.Git.Git(l.ctx, false, "update-ref", "-m", "wt-admin land: task "+tr.Task, l.ref, tr.Result, tr.Onto)
	if err != nil {
		now, _, _ := l.r.Git.ResolveCommit(l.ctx, l.ref)
		if now == tr.Result {
			err = nil // it moved after all (a retry of git's)
		} else {
			if cerr := conclude("moved_under"); cerr != nil {
				return false, nil, cerr
			}
			if now != tr.Onto {
				return false, nil, nil // moved meanwhile: integrate again
			}
			return false, decision.Wrap(decision.GitFailed, err, "move %s from %.12s to %.12s", l.ref, tr.Onto, tr.Result).
				WithHint("if git names a lock file, doctor says whether a dead git left it and how to remove it: wt-admin --repo %s doctor", l.opts.RepoArg), nil
		}
	}
	crashpoint.Here("land:moved")
	return true, nil, l.r.Store.Write(func(tx *store.Tx) error {
		if err := tx.FinishJournal(j, "landed", payload, store.Now()); err != nil {
			return err
		}
		return recordLanded(tx, a.AllocationID, intent{AllocationID: a.AllocationID, Task: tr.Task, Source: tr.Source, Onto: tr.Onto, Result: tr.Result, Attempt: tr.Attempt, Strategy: l.opts.Strategy})
	})
}

// recordMove appends a move of the publication branch the lander is about
// to make to its ledger (via land), before git makes it, as wt-exec's
// publications are: a repository whose hooks are not installed still has
// it recorded. Best effort: a move not recorded shows as one no gate saw,
// never the reverse.
func (l *lander) recordMove(old, new string) {
	ledger.Begin(l.r.Git.CommonDir, l.r.Store.Root(), store.PublicationLedger, l.ref)
	_ = store.AppendLedger(l.r.Store.Root(), store.PublicationLedger, store.LedgerLine{Via: store.ViaLand, Ref: l.ref, Old: old, New: new,
		LeaseID: l.lease.LeaseID, ClientID: ClientID})
}

// recordLanded writes allocation id's landing record LANDED as in.
func recordLanded(tx *store.Tx, id string, in intent) error {
	rec, err := tx.LandingOrNew(id, in.Task)
	if err != nil {
		return err
	}
	rec.State, rec.Source, rec.Onto, rec.Result, rec.Strategy = store.LandingLanded, in.Source, in.Onto, in.Result, in.Strategy
	rec.Paths, rec.TestExit, rec.TestLog, rec.AttemptRef = nil, 0, "", ""
	rec.Attempts = max(rec.Attempts, in.Attempt)
	rec.UpdatedAt = store.Now()
	if err := tx.PutLanding(&rec); err != nil {
		return err
	}
	return tx.LogEvent("task_landed", id, map[string]any{"task": in.Task, "source": in.Source, "onto": in.Onto, "result": in.Result, "strategy": in.Strategy})
}

// landed records tr (LANDED or ALREADY_LANDED) when nothing recorded it.
func (l *lander) landed(a store.Allocation, rec store.Landing, tr TaskResult, code, msg string) (TaskResult, error) {
	tr.Code, tr.Message = code, msg
	if code == decision.AlreadyLanded {
		err := l.r.Store.Write(func(tx *store.Tx) error {
			return recordLanded(tx, a.AllocationID, intent{Task: tr.Task, Source: tr.Source, Onto: tr.Onto, Result: tr.Result, Attempt: rec.Attempts, Strategy: l.opts.Strategy})
		})
		if err != nil {
			return tr, err
		}
	}
	crashpoint.Here("land:recorded")
	return tr, nil
}

// handBack keeps a failed attempt (kept: the commit it tried) under
// refs/wt/land/<task>/<n>, and hands the task back to its owner: its
// landing record says why (state), what, and where the attempt is.
func (l *lander) handBack(a store.Allocation, rec store.Landing, tr TaskResult, state, kept string, d *decision.Error) (TaskResult, error) {
	tr.Code, tr.Message = d.Code, d.Message
	tr.AttemptRef = fmt.Sprintf("refs/wt/land/%s/%d", tr.Task, tr.Attempt)
	if _, err := l.r.Git.GitUnhooked(l.ctx, "update-ref", "-m", "wt-admin land: attempt kept", tr.AttemptRef, kept); err != nil {
		return tr, decision.Wrap(decision.GitFailed, err, "keep the attempt as %s", tr.AttemptRef)
	}
	err := l.r.Store.Write(func(tx *store.Tx) error {
		cur, err := tx.LandingOrNew(a.AllocationID, tr.Task)
		if err != nil {
			return err
		}
		cur.State, cur.Attempts, cur.Source, cur.Onto, cur.Result = state, tr.Attempt, tr.Source, tr.Onto, tr.Result
		cur.AttemptRef, cur.Paths, cur.TestExit, cur.TestLog, cur.Strategy = tr.AttemptRef, tr.Paths, tr.TestExit, tr.TestLog, l.opts.Strategy
		cur.UpdatedAt = store.Now()
		if err := tx.PutLanding(&cur); err != nil {
			return err
		}
		return tx.LogEvent("task_handed_back", a.AllocationID, map[string]any{"task": tr.Task, "state": state, "attempt_ref": tr.AttemptRef,
			"paths": tr.Paths, "test_exit": tr.TestExit, "test_log": tr.TestLog, "owner": a.Owner})
	})
	return tr, err
}

// recover concludes the land journals of dead landers (this lander holds
// the publication lease, so none is live): a landing whose result the
// publication branch holds is recorded LANDED; any other is concluded
// not landed, and its task keeps its state.
func (l *lander) recover() ([]string, error) {
	var js []store.Journal
	if err := l.r.Store.Read(func(tx *store.Tx) error {
		all, err := tx.Journals()
		for _, j := range all {
			if j.Operation == OpLand {
				js = append(js, j)
			}
		}
		return err
	}); err != nil {
		return nil, err
	}
	var out []string
	for _, j := range js {
		var in intent
		if err := json.Unmarshal(j.Payload, &in); err != nil {
			return out, decision.Wrap(decision.InvalidMetadata, err, "land journal %s", j.TransactionID)
		}
		tip, _, err := l.r.Git.ResolveCommit(l.ctx, l.ref)
		if err != nil {
			return out, err
		}
		landed := false
		if tip != "" {
			if landed, err = l.r.Git.IsAncestor(l.ctx, in.Result, tip); err != nil {
				return out, decision.Wrap(decision.GitFailed, err, "is %s in %s", in.Result, l.ref)
			}
		}
		err = l.r.Store.Write(func(tx *store.Tx) error {
			if err := tx.FinishJournal(j, map[bool]string{true: "landed", false: "not_landed"}[landed], j.Payload, store.Now()); err != nil {
				return err
			}
			if landed {
				return recordLanded(tx, in.AllocationID, in)
			}
			return nil
		})
		if err != nil {
			return out, err
		}
		word := "not landed"
		if landed {
			word = "landed"
		}
		out = append(out, fmt.Sprintf("task %s: %s (a dead lander's landing of %.12s)", in.Task, word, in.Result))
		l.notify(out[len(out)-1])
	}
	return out, nil
}
