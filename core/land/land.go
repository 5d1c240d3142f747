package land

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
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
	// Test is run in the integration worktree, under wt-exec (ExecBin)
	// --sandbox, on each integrated result: a non-zero exit keeps it off
	// the publication branch. It runs with no authority: where the kernel
	// cannot give it a sandbox, land refuses (LAND_TEST_UNCONFINED)
	// unless TestUnconfined says to run it unconfined.
	Test           string
	ExecBin        string
	TestUnconfined bool
	Strategy       string
	// AcceptUngated lands a task whose tip wt's ledger did not approve
	// (moved with hooks off, rewritten), recorded as such; without it
	// such a task is refused (LAND_UNGATED).
	AcceptUngated bool
	// Wait waits for each task's writer to let go (else
	// WRITER_LEASE_HELD); NoWait refuses when another lander holds the
	// publication lease (else the lander waits its turn in line).
	// Timeout bounds each wait (0: none).
	Wait    bool
	NoWait  bool
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
	// Batch bounds how many tasks one compare-and-swap lands (0: the
	// whole queue; 1: one at a time, each integrated and tested alone,
	// as land did before batches). Jobs bounds the tests a batched landing
	// runs at once, each in an integration worktree of its own (0: the
	// machine's CPUs).
	Batch, Jobs int
}

// TaskResult is how one task's landing ended.
type TaskResult struct {
	Task  string `json:"task"`
	Owner string `json:"owner,omitempty"`
	// Worktree is the task's worktree, where a task handed back is
	// brought up to date (HandBackHint).
	Worktree string `json:"worktree,omitempty"`
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
	// TestUnconfined is set when the test ran outside a sandbox
	// (--test-unconfined); AcceptedUngated when the tip landed although
	// wt's ledger did not approve it (--accept-ungated).
	TestUnconfined  bool `json:"test_unconfined,omitempty"`
	AcceptedUngated bool `json:"accepted_ungated,omitempty"`
	// Retries counts integrations done again because the publication
	// branch moved under the landing.
	Retries int `json:"retries,omitempty"`
	// Batch names the batch the task landed in (land --batch, a landing
	// journal's transaction id), empty when it landed alone.
	Batch string `json:"batch,omitempty"`
	// Strategy is how the task is integrated: the one its ready mark asked
	// for (ready --strategy), else land's --strategy.
	Strategy string `json:"strategy,omitempty"`
	// Handback is the hand-back file of a task handed back (Handback).
	Handback string `json:"handback,omitempty"`
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
	Recovered []string `json:"recovered"`
	// TestRuns counts the tests run; Candidates the commits they tested.
	TestRuns int          `json:"test_runs"`
	Tasks    []TaskResult `json:"tasks"`
	// Checkouts are the checkouts of the publication branch after the
	// landings: brought to its new tip, or left behind with the command
	// that brings them.
	Checkouts []CheckoutNote `json:"checkouts,omitempty"`
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

// HandBackHint is what comes next for a task wt-admin land handed back
// (state LAND_CONFLICT or LAND_TEST_FAILED), as land and status say it,
// in repository repoArg (a shell word) whose publication branch is branch.
// A conflict is rebased in a run of the task's worktree (path): git stops
// on the conflict, and the rebase is finished there in a next run, as a
// rule by the task's agent. A failed test is fixed from its output
// (testLog) and the attempt it tested. Either way the task is then marked
// ready again. The hint has no semicolon: land joins several with one.
func HandBackHint(repoArg, branch, path, task, owner, state, attemptRef, testLog string) string {
	ready := fmt.Sprintf("then mark it ready again: wt-admin --repo %s ready %s --owner %s", repoArg, shell.Word(task), shell.Word(owner))
	if state == store.LandingTestFailed {
		return fmt.Sprintf("read the test's output (cat %s) and the attempt it tested (git -C %s log %s), fix the task's branch in its worktree %s, as a rule by its agent in a run, %s",
			shell.Word(testLog), repoArg, attemptRef, shell.Word(path), ready)
	}
	wt := shell.Word(path)
	return fmt.Sprintf("rebase it in a run of its worktree: wt-exec -C %s -- git rebase %s stops on the conflict, and the rebase must be finished in a next run, as a rule by the task's agent (resolve the files, git add them, git rebase --continue, from outside a run wt-exec -C %s -- git rebase --continue), %s",
		wt, shell.Word(branch), wt, ready)
}

// strategyOf is how a task whose landing record is rec is integrated:
// the strategy its ready mark asked for, else land's.
func (l *lander) strategyOf(rec store.Landing) string {
	if rec.State == store.LandingReady && rec.ReadyStrategy != "" {
		return rec.ReadyStrategy
	}
	return l.opts.Strategy
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
	// TestUnconfined and AcceptedUngated: see TaskResult.
	TestUnconfined  bool `json:"test_unconfined,omitempty"`
	AcceptedUngated bool `json:"accepted_ungated,omitempty"`
	// Tasks are a batch's tasks, in queue order, each with the commit
	// its integration made (Result is the last one's): one
	// compare-and-swap lands them all (nil for a landing of one task).
	Tasks []intent `json:"tasks,omitempty"`
	// Batch names the batch (its journal's transaction id); TestLog is
	// the output of the test the landed commit passed.
	Batch   string `json:"batch,omitempty"`
	TestLog string `json:"test_log,omitempty"`
	// Prov is the task's provenance, as wt-admin why tells it.
	Prov *Provenance `json:"provenance,omitempty"`
}

// provenance is in's Prov completed with what the landing made.
func (in intent) provenance() Provenance {
	p := *in.Prov
	p.Source, p.Onto, p.Result, p.Attempt, p.Strategy = in.Source, in.Onto, in.Result, in.Attempt, in.Strategy
	p.Batch, p.TestUnconfined, p.AcceptedUngated = in.Batch, in.TestUnconfined, in.AcceptedUngated
	if p.TestLog == "" {
		p.TestLog = in.TestLog
	}
	if p.LandedAt == "" {
		p.LandedAt = store.Now()
	}
	return p
}

// landed is each task that in lands, with its own part of the landing.
func (in intent) landed() []intent {
	if len(in.Tasks) == 0 {
		return []intent{in}
	}
	out := make([]intent, len(in.Tasks))
	for i, t := range in.Tasks {
		if t.Onto == "" {
			t.Onto = in.Onto
		}
		if t.Strategy == "" {
			t.Strategy = in.Strategy
		}
		t.Batch, t.TestLog = in.Batch, in.TestLog
		t.TestUnconfined = in.TestUnconfined
		out[i] = t
	}
	return out
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
	// checkouts are the checkouts of the branch after the last landing
	// (followCheckouts).
	checkouts []CheckoutNote
	// batch and jobs bound a batch and the tests run at once (batch.go);
	// slots are the integration worktrees the tests run in (slots[0] is
	// iwt); batchID names this run's candidates' logs; candidates and
	// testRuns count them.
	batch, jobs          int
	slots                []store.Allocation
	batchID              string
	candidates, testRuns int
	// lastDiff is the last integration's conflict, as git diff shows it.
	lastDiff string
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
		return res, decision.Say(decision.Usage, "strategy-not", opts.Strategy).
			WithHint("wt-admin land --strategy rebase --task KEY")
	}
	if len(opts.Tasks) == 0 && !opts.Ready && !opts.Recover {
		return res, decision.Say(decision.Usage, "land-needs").
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
	if l.lease, res.TookOver, err = acquire(ctx, r, pol.PublicationBranch, opts.RepoArg, !opts.NoWait, opts.Timeout, opts.Notify); err != nil {
		return res, err
	}
	defer release(r, l.lease)
	if pol.FleetOn() {
		if opts.Stderr == nil {
			opts.Stderr = io.Discard
		}
		if l.fleet, err = fleetLease(ctx, r, pol, &l.lease, opts.Stderr, opts.RepoArg, !opts.NoWait, opts.Timeout, opts.Poll); err != nil {
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
	l.batch, l.jobs = opts.Batch, opts.Jobs
	if l.batch <= 0 {
		l.batch = len(tasks)
	}
	if l.jobs <= 0 {
		l.jobs = runtime.NumCPU()
	}
	if l.batch > 1 {
		var mu sync.Mutex // tests run at once say what they do
		notify := l.notify
		l.notify = func(s string) { mu.Lock(); defer mu.Unlock(); notify(s) }
		l.batchID = time.Now().UTC().Format("20060102T150405Z") + "-" + ids.New()[:8]
		res.Tasks, err = l.landQueue(tasks)
		res.TestRuns = l.testRuns
		if err != nil {
			return res, err
		}
		return l.finish(res), nil
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
	res.TestRuns = l.testRuns
	return l.finish(res), nil
}

// finish is res with its code, the checkouts and the tip.
func (l *lander) finish(res Result) Result {
	res.Code = decision.Landed
	if f := res.Failed(); f != nil {
		res.Code = f.Code
	}
	res.Checkouts = l.checkouts
	res.Tip, _, _ = l.r.Git.ResolveCommit(l.ctx, l.ref)
	return res
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
			return *a, decision.Say(decision.TaskKeyInUse, "task-which-wt", IntegrationTask, a.Role, a.WorktreePath).
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
	return l.gitIn(l.iwt, args...)
}

// gitIn runs git, hooks off, in integration worktree wt (a slot of a
// batch's parallel tests, or the one integration worktree).
func (l *lander) gitIn(wt store.Allocation, args ...string) (string, error) {
	out, err := l.r.Git.GitIn(l.ctx, wt.WorktreeKey, wt.WorktreePath, false, args...)
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
		refusal = decision.Say(decision.NotReady, "task-has", task).
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
	return decision.SayWrap(decision.Internal, err, "land")
}

// writerState is what a task's writer lease record said when the lander
// found the writer gone: a writer that starts later changes it (a new
// lease id or generation), which the intent's section checks.
type writerState struct {
	leaseID    string
	generation int
}

// writer reports a live writer of allocation a ("" when none), and the
// state of its lease record.
func (l *lander) writer(a store.Allocation) (*store.Lease, writerState, error) {
	var who *store.Lease
	var st writerState
	err := l.r.Store.Read(func(tx *store.Tx) error {
		le, live, err := alloc.LiveWriter(tx, a)
		if live {
			who = &le
		}
		st = writerState{le.LeaseID, le.Generation}
		return err
	})
	return who, st, err
}

// quiescent waits (with --wait) until task's writer has ended, or refuses
// WRITER_LEASE_HELD. It is asked before every attempt: a writer that
// started during a landing is let go of before the next.
func (l *lander) quiescent(a store.Allocation) (writerState, *decision.Error) {
	var deadline time.Time
	if l.opts.Timeout > 0 {
		deadline = time.Now().Add(l.opts.Timeout)
	}
	for waiting := false; ; waiting = true {
		who, st, err := l.writer(a)
		if err != nil {
			return st, asDecision(err)
		}
		if who == nil {
			return st, nil
		}
		d := decision.HeldBy(a.WorktreePath, who.Holder.ClientID, who.Holder.PID, who.AcquiredAt, fmt.Sprintf("task %s lands once its writer has let go", a.TaskKey)).
			WithHint("wait for it: wt-admin --repo %s land --wait --task %s", l.opts.RepoArg, shell.Word(a.TaskKey))
		if !l.opts.Wait {
			return st, d
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return st, decision.Say(decision.LandWaitTimeout, "waited", l.opts.Timeout, d.Message).WithHint("%s", d.Hint)
		}
		if !waiting {
			l.notify(fmt.Sprintf("%s: waiting for task %s's writer (client %s, pid %d) to let go", a.TaskKey, a.TaskKey, who.Holder.ClientID, who.Holder.PID))
		}
		if err := pause(l.ctx, l.opts.Poll, "waiting for task "+a.TaskKey+"'s writer"); err != nil {
			return st, err
		}
	}
}

// sameTask refuses (TASK_NOT_READY) a task whose allocation is no longer
// what the landing began with: finished, retained or released, moved to
// another path or branch meanwhile. Read inside a store section.
func sameTask(tx *store.Tx, a store.Allocation, repoArg string) error {
	now, err := tx.Allocation(a.AllocationID)
	if errors.Is(err, store.ErrNotFound) {
		return decision.Say(decision.NotReady, "task-allocation", a.TaskKey).
			WithHint("see the tasks: wt-admin --repo %s status", repoArg)
	}
	if err != nil {
		return err
	}
	if now.Lifecycle == store.Released && a.Lifecycle != store.Released {
		return decision.Say(decision.NotReady, "task-was", a.TaskKey).
			WithHint("see the tasks: wt-admin --repo %s status", repoArg)
	}
	if now.Lifecycle != a.Lifecycle || now.WorktreePath != a.WorktreePath || branchName(now) != branchName(a) {
		return decision.Say(decision.NotReady, "task-changed", a.TaskKey, now.Lifecycle, now.WorktreePath, branchName(now)).
			WithHint("land it again if it is to land: wt-admin --repo %s ready %s --owner %s", repoArg, shell.Word(a.TaskKey), shell.Word(a.Owner))
	}
	return nil
}

func branchName(a store.Allocation) string {
	if a.Branch == nil {
		return ""
	}
	return *a.Branch
}

// tipMoved is LAND_TIP_MOVED: task's branch is at now, not at the commit
// let go (pinned), which its ready mark (or the landing's start) named.
func (l *lander) tipMoved(a store.Allocation, pinned, now, by string) *decision.Error {
	return decision.Say(decision.LandTipMoved, "task-branch",
		a.TaskKey, branchName(a), gitrepo.Short(now), gitrepo.Short(pinned), by).
		WithHint("mark the new tip ready to land it: wt-admin --repo %s ready %s --owner %s", l.opts.RepoArg, shell.Word(a.TaskKey), shell.Word(a.Owner))
}

// approved refuses (LAND_UNGATED) a tip of task a's branch that wt's
// ledger did not approve: moved with hooks off or rewritten behind the
// gate (what audit reports as UNGATED_REF_MOVE), unless the lander was
// told --accept-ungated (accepted is then true). A branch with no ledger
// (allocated before ledgers) has nothing to hold it against.
func (l *lander) approved(a store.Allocation, tip string) (accepted bool, d *decision.Error) {
	ref := "refs/heads/" + branchName(a)
	led, err := store.ReadLedgerTail(l.r.Store.Root(), a.AllocationID, ref)
	if err != nil {
		return false, decision.SayWrap(decision.InvalidMetadata, err, "read-ledger", ref)
	}
	if !led.Exists || len(led.Lines) == 0 || led.Accounts(tip) {
		return false, nil
	}
	if l.opts.AcceptUngated {
		l.notify(fmt.Sprintf("%s: its tip %s is not one wt's ledger approved (it records %s); landed as told (--accept-ungated)", a.TaskKey, gitrepo.Short(tip), gitrepo.Short(led.Tip())))
		return true, nil
	}
	return false, decision.Say(decision.LandUngated, "task-branch",
		a.TaskKey, branchName(a), gitrepo.Short(tip), gitrepo.Short(led.Tip())).
		WithHint("see the moves: wt-admin --repo %s audit (it prints the restore command); to land the tip as it is: wt-admin --repo %s land --accept-ungated --task %s", l.opts.RepoArg, l.opts.RepoArg, shell.Word(a.TaskKey))
}

// landOne lands one task; an error is one that ends the whole run (the
// lease lost, the store unreadable), a task's own failure is its result.
//
// What lands is the commit that was let go: the tip its ready mark
// recorded, or, for a task named with --task that is not marked ready,
// its tip once its writer has let go, read once. Before every attempt
// (the first and each retry after the publication branch moved) the
// writer must have let go, the task must be as the landing found it, and
// its branch at that commit, approved by wt's ledger.
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
	tr.Owner, tr.Worktree, tr.Strategy = a.Owner, a.WorktreePath, l.strategyOf(rec)
	e := &entry{a: a, rec: rec, by: "its writer let go"}
	if rec.State == store.LandingReady && rec.ReadyTip != "" {
		e.pinned, e.by = rec.ReadyTip, "marked ready by "+rec.ReadyBy
	}
	attempt := rec.Attempts
	for ; ; tr.Retries++ {
		source, d, err := l.checkTip(e, &tr)
		if err != nil || d != nil {
			if d != nil {
				return fail(d)
			}
			return tr, err
		}
		if l.opts.Push != "" {
			if d, err := l.catchUp(); err != nil || d != nil {
				if d != nil {
					return fail(d)
				}
				return tr, err
			}
		}
		onto, err := l.tip()
		if err != nil {
			return tr, err
		}
		if err := l.ontoApproved(onto); err != nil {
			return tr, err
		}
		tr.Source, tr.Onto = source, onto
		if done, out, err := l.alreadyIn(a, rec, tr, source, onto); err != nil || done {
			return out, err
		}
		if attempt, err = l.nextAttempt(task, attempt+1); err != nil {
			return tr, err
		}
		tr.Attempt = attempt
		done, out, err := l.attemptOnce(e, tr)
		if err != nil || done {
			return out, err
		}
		if tr.Retries >= maxRetries {
			return fail(decision.Say(decision.LandConflict, "moved-under-task", l.pol.PublicationBranch, task, tr.Retries+1).
				WithHint("land it again when the branch is quiet: wt-admin --repo %s land --task %s", l.opts.RepoArg, shell.Word(task)))
		}
		l.notify(fmt.Sprintf("%s: %s moved meanwhile; integrating again", task, l.pol.PublicationBranch))
	}
}

// checkTip is the check before an attempt of e's task: its writer has let
// go (waited for under --wait), the task is as the landing found it, and
// its branch is at the commit let go (pinned now if it was not), approved
// by wt's ledger (or --accept-ungated, said in tr). d is the refusal that
// keeps the task from landing.
func (l *lander) checkTip(e *entry, tr *TaskResult) (source string, d *decision.Error, err error) {
	a := e.a
	if _, d := l.quiescent(a); d != nil {
		return "", d, nil
	}
	if err := l.r.Store.Read(func(tx *store.Tx) error { return sameTask(tx, a, l.opts.RepoArg) }); err != nil {
		if d, ok := decision.As(err); ok {
			return "", d, nil
		}
		return "", nil, err
	}
	source, ok, err := l.r.Git.ResolveCommit(l.ctx, "refs/heads/"+branchName(a))
	if err != nil || !ok {
		return "", decision.Say(decision.GitFailed, "task-branch", a.TaskKey, branchName(a), err).
			WithHint("see it: wt-admin --repo %s status", l.opts.RepoArg), nil
	}
	if e.pinned == "" {
		e.pinned = source
	}
	if source != e.pinned {
		return "", l.tipMoved(a, e.pinned, source, e.by), nil
	}
	accepted, d := l.approved(a, source)
	if d != nil {
		return "", d, nil
	}
	tr.AcceptedUngated = accepted
	return source, nil, nil
}

// alreadyIn concludes a landing of source onto onto that would bring
// nothing: the branch holds source, or a landing recorded as rec put it
// there (rebased or squashed: not an ancestor) and the branch has not
// moved since. done is false when there is something to land.
func (l *lander) alreadyIn(a store.Allocation, rec store.Landing, tr TaskResult, source, onto string) (done bool, out TaskResult, err error) {
	if in, err := l.r.Git.IsAncestor(l.ctx, source, onto); err != nil {
		return true, tr, decision.SayWrap(decision.GitFailed, err, "is-in", source, l.ref)
	} else if in {
		tr.Result = onto
		out, err := l.landed(a, rec, tr, decision.AlreadyLanded, fmt.Sprintf("%s already holds task %s's branch (%.12s)", l.pol.PublicationBranch, tr.Task, source))
		return true, out, err
	}
	if rec.State == store.LandingLanded && rec.Source == source && rec.Result != "" {
		if in, err := l.r.Git.IsAncestor(l.ctx, rec.Result, onto); err == nil && in {
			tr.Result = rec.Result
			tr.Code, tr.Message = decision.AlreadyLanded, fmt.Sprintf("task %s's branch (%.12s) landed as %.12s, which %s holds", tr.Task, source, rec.Result, l.pol.PublicationBranch)
			return true, tr, nil
		}
	}
	return false, tr, nil
}

// attemptOnce integrates tr's source onto tr's onto, tests the result,
// checks the task once more and publishes it. done is false when the
// publication branch moved meanwhile (integrate again).
func (l *lander) attemptOnce(e *entry, tr TaskResult) (done bool, out TaskResult, err error) {
	a, rec, task := e.a, e.rec, tr.Task
	l.notify(fmt.Sprintf("%s: integrating %.12s onto %s (%.12s), %s, attempt %d", task, tr.Source, l.pol.PublicationBranch, tr.Onto, tr.Strategy, tr.Attempt))
	result, paths, err := l.integrate(task, tr.Source, tr.Onto, tr.Strategy)
	if err != nil {
		return true, tr, err
	}
	crashpoint.Here("land:integrated")
	if paths != nil {
		tr.Paths = paths
		out, err := l.handBack(a, rec, tr, store.LandingConflict, tr.Source, l.lastDiff,
			decision.Say(decision.LandConflict, "task-branch", task, tr.Strategy, l.pol.PublicationBranch, strings.Join(paths, ", ")))
		return true, out, err
	}
	tr.Result = result
	if result == tr.Onto {
		out, err := l.landed(a, rec, tr, decision.AlreadyLanded, fmt.Sprintf("task %s's changes are in %s already: integrating them changed nothing", task, l.pol.PublicationBranch))
		return true, out, err
	}
	if l.opts.Test != "" {
		exit, logPath, err := l.test(task, tr.Attempt, result)
		if err != nil {
			return true, tr, err
		}
		tr.TestUnconfined = l.opts.TestUnconfined
		crashpoint.Here("land:tested")
		if exit != 0 {
			tr.TestExit, tr.TestLog = exit, logPath
			out, err := l.handBack(a, rec, tr, store.LandingTestFailed, result, "",
				decision.Say(decision.LandTestFailed, "task-integrated", task, l.pol.PublicationBranch, exit, logPath))
			return true, out, err
		}
	}
	// The test took time: the writer, the task and its tip once more,
	// the writer's lease record again in the intent's own section.
	ws, d, err := l.recheck(e)
	if err != nil || d != nil {
		if d != nil {
			tr.Code, tr.Message = d.Code, d.Message
		}
		return true, tr, err
	}
	moved, d, err := l.publish(a, tr, ws, l.provenanceOf(a, rec, tr.Source))
	if err != nil || d != nil {
		if d != nil {
			tr.Code, tr.Message = d.Code, d.Message
		}
		return true, tr, err
	}
	if !moved {
		return false, tr, nil
	}
	l.checkouts = l.followCheckouts(tr.Onto, result)
	out, err = l.landed(a, rec, tr, decision.Landed, fmt.Sprintf("%s moved %.12s -> %.12s", l.pol.PublicationBranch, tr.Onto, result))
	return true, out, err
}

// ontoApproved refuses, under policy publication-lease on, to build on a
// publication tip that no lander put there: wt's ledger of the branch
// records every move the gate let through (the lander's own, by its
// secret) and every move the lander made, so a tip it does not account
// for was made with hooks off (by a test run unconfined, say): landing on
// it would publish it under the task. --accept-ungated builds on it, as
// told.
func (l *lander) ontoApproved(onto string) error {
	if !l.pol.PublicationLease || l.opts.AcceptUngated {
		return nil
	}
	led, err := store.ReadLedgerTail(l.r.Store.Root(), store.PublicationLedger, l.ref)
	if err != nil {
		return decision.SayWrap(decision.InvalidMetadata, err, "read-ledger", l.ref)
	}
	if !led.Exists || len(led.Lines) == 0 || led.Accounts(onto) {
		return nil
	}
	return decision.Say(decision.LandUngated, "which-no",
		l.pol.PublicationBranch, gitrepo.Short(onto), gitrepo.Short(led.Tip())).
		WithHint("see the move: wt-admin --repo %s audit; land on it as it is only if it is right: wt-admin --repo %s land --accept-ungated ...",
			l.opts.RepoArg, l.opts.RepoArg)
}

// nextAttempt is the first attempt number from n on that no earlier
// attempt of task used: no log of it (an attempt a killed lander began
// but never recorded), no kept attempt ref. Each attempt has its own log.
func (l *lander) nextAttempt(task string, n int) (int, error) {
	for ; ; n++ {
		if _, err := os.Lstat(l.logPath(task, n)); err == nil {
			continue
		} else if !errors.Is(err, os.ErrNotExist) {
			return n, decision.SayWrap(decision.Internal, err, "look-attempt", n)
		}
		if _, ok, err := l.r.Git.ResolveCommit(l.ctx, attemptRef(task, n)); err != nil {
			return n, decision.SayWrap(decision.GitFailed, err, "look-attempt", n)
		} else if ok {
			continue
		}
		return n, nil
	}
}

// logPath is where attempt n of task's test writes its output.
func (l *lander) logPath(task string, n int) string {
	return filepath.Join(l.r.Store.Root(), store.LandLogsDir, task, strconv.Itoa(n)+".log")
}

// attemptRef keeps attempt n of task when it fails.
func attemptRef(task string, n int) string { return fmt.Sprintf("%s%s/%d", AttemptRefPrefix, task, n) }

// AttemptRefPrefix is where failed attempts are kept:
// refs/wt/land/<task>/<n>; finish of the task removes them.
const AttemptRefPrefix = "refs/wt/land/"

// catchUp brings the local publication branch to the remote's (--push):
// the remote's tip is the one to integrate onto, and another machine's
// lander may have moved it. The local branch is fast-forwarded by the
// lander's compare-and-swap; one that holds commits the remote lacks is
// LAND_PUSH_REJECTED (a person decides which is right).
func (l *lander) catchUp() (*decision.Error, error) {
	if _, err := l.r.Git.Git(l.ctx, false, "fetch", "-q", "--end-of-options", l.opts.Push, l.ref); err != nil {
		return decision.SayWrap(decision.LandPushRejected, err, "fetch-from", l.ref, l.opts.Push).
			WithHint("check the remote: git -C %s ls-remote %s %s", l.opts.RepoArg, shell.Word(l.opts.Push), l.ref), nil
	}
	remote, ok, err := l.r.Git.ResolveCommit(l.ctx, "FETCH_HEAD")
	if err != nil || !ok {
		return nil, decision.Say(decision.GitFailed, "read-what", l.opts.Push, err)
	}
	local, _, err := l.r.Git.ResolveCommit(l.ctx, l.ref)
	if err != nil || local == remote {
		return nil, err
	}
	if ff, err := l.r.Git.IsAncestor(l.ctx, local, remote); err != nil {
		return nil, decision.SayWrap(decision.GitFailed, err, "compare", l.ref, l.opts.Push)
	} else if !ff {
		return decision.Say(decision.LandPushRejected, "holds-commits", l.ref, l.opts.Push, l.pol.PublicationBranch, local, remote).
			WithHint("see them: git -C %s log %s..%s", l.opts.RepoArg, remote, l.ref), nil
	}
	l.recordMove(local, remote)
	if err := l.cas("wt-admin land: fast-forward to "+l.opts.Push, local, remote); err != nil {
		return nil, decision.SayWrap(decision.GitFailed, err, "fast-forward", l.ref, l.opts.Push, remote).
			WithHint("if git names a lock file, doctor says whether a dead git left it and how to remove it: wt-admin --repo %s doctor", l.opts.RepoArg)
	}
	l.notify(fmt.Sprintf("%s fast-forwarded to %s's %.12s", l.pol.PublicationBranch, l.opts.Push, remote))
	l.checkouts = l.followCheckouts(local, remote)
	return nil, nil
}

// clearStaleLocks removes the lock files (its index, HEAD, the wt-land
// branch) and half-begun rebase a git killed with its lander left in the
// integration worktree, once
// no process uses that worktree: this lander holds the publication lease,
// so no other lander's git is at work there, and a killed lander's test
// or git that still runs is waited for, never raced. A reading of the
// processes that fails is not taken for none.
func (l *lander) clearStaleLocks() error { return l.clearStaleLocksIn(l.iwt) }

// clearStaleLocksIn is clearStaleLocks for integration worktree wt.
func (l *lander) clearStaleLocksIn(wt store.Allocation) error {
	admin := gitrepo.AdminDir(l.r.Git.CommonDir, wt.WorktreeKey)
	var locks []string
	for _, p := range []string{filepath.Join(admin, "index.lock"), filepath.Join(admin, "HEAD.lock"), filepath.Join(admin, "ORIG_HEAD.lock"),
		filepath.Join(l.r.Git.CommonDir, "refs", "heads", branchName(wt)+".lock")} {
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
			return decision.SayWrap(decision.Internal, err, "read-processes", wt.WorktreePath)
		}
		uses, err := s.PathsInUse(wt.WorktreePath)
		if err != nil {
			return decision.SayWrap(decision.Internal, err, "read-processes", wt.WorktreePath)
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
			return decision.SayWrap(decision.Internal, err, "remove-stale", p)
		}
	}
	for _, d := range ops {
		// git's own way first; a state git cannot read (killed while
		// writing it) goes as a whole: it is wt's worktree, and unused.
		l.gitIn(wt, "rebase", "--abort")
		if _, err := os.Lstat(d); err == nil {
			l.gitIn(wt, "rebase", "--quit")
		}
		if _, err := os.Lstat(d); err == nil {
			if err := os.RemoveAll(d); err != nil {
				return decision.SayWrap(decision.Internal, err, "remove-stale", d)
			}
		}
	}
	return l.r.Store.Write(func(tx *store.Tx) error {
		return tx.LogEvent("land_leftovers_removed", wt.AllocationID, map[string]any{"locks": locks, "operations": ops,
			"why": "left by a git killed with its lander; no process uses the integration worktree"})
	})
}

// integrate makes the integration of source onto onto in the integration
// worktree: the result commit, or the conflicting paths (nothing made).
func (l *lander) integrate(task, source, onto, strategy string) (string, []string, error) {
	// Whatever an interrupted lander left: git's locks and a half-begun
	// rebase (clearStaleLocks), files (clean), and changes or a merge in
	// progress (checkout -f, below, discards them and git's merge state).
	if err := l.clearStaleLocks(); err != nil {
		return "", nil, err
	}
	if _, err := l.git("clean", "-q", "-ffdx"); err != nil {
		return "", nil, decision.SayWrap(decision.GitFailed, err, "clean-integration", l.iwt.WorktreePath)
	}
	start := onto
	if strategy == Rebase {
		start = source
	}
	if _, err := l.git("checkout", "-q", "-f", "-B", IntegrationTask, start); err != nil {
		return "", nil, decision.SayWrap(decision.GitFailed, err, "check-out-integration", start)
	}
	var err error
	switch strategy {
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
	l.lastDiff = ""
	if err != nil {
		paths, _ := l.git("diff", "--name-only", "--diff-filter=U")
		if paths != "" {
			l.lastDiff, _ = l.git("diff") // the conflict, with git's markers
		}
		abort := map[string][]string{Rebase: {"rebase", "--abort"}, Merge: {"merge", "--abort"}, Squash: {"reset", "-q", "--hard"}}[strategy]
		l.git(abort...) // Best effort: the next integration resets anyway.
		if paths == "" {
			return "", nil, decision.SayWrap(decision.GitFailed, err, "task-onto", strategy, task, onto).
				WithHint("set git's identity if git asked for it (git config user.name NAME; git config user.email EMAIL), then land again")
		}
		return "", strings.Split(paths, "\n"), nil
	}
	head, err := l.git("rev-parse", "HEAD")
	if err != nil {
		return "", nil, decision.SayWrap(decision.GitFailed, err, "read-integration")
	}
	return head, nil, nil
}

// test runs --test in the integration worktree under wt-exec
// --sandbox, its output to the attempt's own log file, with the task in
// $WT_LAND_TASK and the commit under test (the integration worktree's
// HEAD) in $WT_LAND_RESULT; it returns the exit status.
//
// The test decides nothing with the lander's authority: in its sandbox
// (a private view of the repository that nothing leaves, no broker, its
// home caches private, loopback alone for a network) it cannot move a
// ref, write wt's store or reach a remote, hooks on or off; and it never
// holds the secret of the lander's compare-and-swap. Where the kernel
// cannot give it a sandbox, the run stops (LAND_TEST_UNCONFINED, with
// what is missing) before anything is tested, unless --test-unconfined.
func (l *lander) test(task string, attempt int, result string) (int, string, error) {
	l.testRuns++
	return l.runTest(l.iwt, task, []string{task}, l.logPath(task, attempt), result)
}

// runTest runs --test in integration worktree wt, checked out at result,
// for tasks (the last one is $WT_LAND_TASK, all of them, in queue order,
// $WT_LAND_TASKS), its output to logPath; label names the run in what the
// lander says.
func (l *lander) runTest(wt store.Allocation, label string, tasks []string, logPath, result string) (int, string, error) {
	task := tasks[len(tasks)-1]
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return 0, "", decision.SayWrap(decision.Internal, err, "make", filepath.Dir(logPath))
	}
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, "", decision.SayWrap(decision.Internal, err, "create", logPath)
	}
	defer f.Close()
	how := "in a sandbox"
	args := []string{"-C", wt.WorktreePath, "--json", "fd:3", "--sandbox", "--", "sh", "-c", l.opts.Test}
	if l.opts.TestUnconfined {
		how = "UNCONFINED (--test-unconfined): it runs with the lander's authority"
		args = []string{"-C", wt.WorktreePath, "--json", "fd:3", "--no-confine", "--", "sh", "-c", l.opts.Test}
	}
	l.notify(fmt.Sprintf("%s: testing %s: %s (output: %s)", label, how, l.opts.Test, logPath))
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, logPath, decision.SayWrap(decision.Internal, err, "make-pipe")
	}
	defer pr.Close()
	cmd := exec.CommandContext(l.ctx, l.opts.ExecBin, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = wt.WorktreePath, f, f
	cmd.ExtraFiles = []*os.File{pw}
	cmd.Env = append(testEnv(os.Environ()), "WT_LAND_TASK="+task, "WT_LAND_TASKS="+strings.Join(tasks, " "), "WT_LAND_RESULT="+result)
	if err := cmd.Start(); err != nil {
		pw.Close()
		return 0, logPath, decision.SayWrap(decision.CommandNotFound, err, "run-test", l.opts.ExecBin)
	}
	pw.Close()
	verdict, _ := io.ReadAll(io.LimitReader(pr, 1<<20)) // wt-exec's one JSON object; EOF once it ends
	err = cmd.Wait()
	if d := execRefusal(verdict); d != nil {
		// wt-exec refused before the test ran: nothing was tested.
		if d.Code == decision.ConfinementUnavailable {
			return 0, logPath, decision.Say(decision.LandTestUnconfined, "land-test", d.Message).
				WithHint("give wt-exec what it needs (%s), or run the test unconfined, with the lander's authority: wt-admin --repo %s land --test-unconfined ...", d.Hint, l.opts.RepoArg)
		}
		return 0, logPath, decision.Within(d, "test-could-not-start", task)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), logPath, nil
		}
		return ee.ExitCode(), logPath, nil
	}
	if err != nil {
		return 0, logPath, decision.SayWrap(decision.CommandNotFound, err, "run-test", l.opts.ExecBin)
	}
	return 0, logPath, nil
}

// testEnv is the lander's environment as its test gets it: without the
// variables of wt's own that carry authority or name a run (a lease, a
// broker, a lander's secret), should the lander's caller have any.
func testEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case store.PublicationTokenEnv, store.BrokerEnv, "WT_LEASE_ID", "WT_ALLOCATION_ID", "WT_HOLDER_PID", "WT_CLIENT_ID", "WT_SESSION_ID", "WT_RUN_ID":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// execRefusal is wt-exec's refusal in its --json output ({"ok": false,
// "error": {...}}), nil when it ran the command (or said nothing).
func execRefusal(b []byte) *decision.Error {
	var v struct {
		OK    bool `json:"ok"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Hint    string `json:"hint"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &v) != nil || v.OK || v.Error == nil || v.Error.Code == "" {
		return nil
	}
	return decision.Relay(v.Error.Code, v.Error.Message).WithHint("%s", v.Error.Hint)
}

// publish moves the publication branch from tr.Onto to tr.Result: the
// integration intent first (a journal), then the remote (--push, with the
// same compare-and-swap), then the local branch by compare-and-swap. moved
// is false when the branch was no longer at tr.Onto (integrate again); d
// is a refusal that keeps the task from landing.
//
// ws is the task's writer lease record as the lander found it let go: the
// intent's section refuses (WRITER_LEASE_HELD) when a writer took the
// lease since, and (TASK_NOT_READY) a task finished or changed since.
func (l *lander) publish(a store.Allocation, tr TaskResult, ws writerState, prov Provenance) (moved bool, d *decision.Error, err error) {
	in := l.intentOf(a, tr)
	prov.TestLog = tr.TestLog
	if l.opts.Test != "" {
		prov.TestLog, prov.Tested = l.logPath(tr.Task, tr.Attempt), tr.Result
	}
	in.Prov = &prov
	moved, _, d, err = l.publishParts([]part{{a, ws}}, in, tr.Task)
	return moved, d, err
}

// part is a task of a landing as publishParts checks it: its allocation
// and its writer's lease record as the lander found it let go.
type part struct {
	a  store.Allocation
	ws writerState
}

// publishParts is publish for the tasks of parts (in, their intent, says
// what lands): every task is checked in the intent's section, and bad is
// the index of the part that kept the landing from happening (d says
// why). label names the landing in what the lander says.
func (l *lander) publishParts(parts []part, in intent, label string) (moved bool, bad int, d *decision.Error, err error) {
	payload, _ := json.Marshal(in)
	self, err := proc.Self()
	if err != nil {
		return false, 0, nil, err
	}
	j := store.Journal{Meta: store.Meta{SchemaVersion: store.SchemaVersion}, TransactionID: ids.New(), Operation: OpLand, Phase: "INTEGRATED",
		Actor: self, Target: "publication:" + label, Payload: payload, CreatedAt: store.Now(), UpdatedAt: store.Now()}
	if err := l.r.Store.Write(func(tx *store.Tx) error {
		var err error
		if bad, err = l.stillToLand(tx, parts); err != nil {
			return err
		}
		return tx.PutJournal(&j)
	}); err != nil {
		if d, ok := decision.As(err); ok && (d.Code == decision.WriterLeaseHeld || d.Code == decision.NotReady) {
			return false, bad, d, nil
		}
		return false, 0, nil, err
	}
	crashpoint.Here("land:intent")
	if l.fleet != nil {
		select {
		case <-l.fleet.Lost():
			if cerr := l.r.Store.Write(func(tx *store.Tx) error { return tx.FinishJournal(j, "fleet_lease_lost", payload, store.Now()) }); cerr != nil {
				return false, 0, nil, cerr
			}
			return false, 0, nil, fleetLost(l.pol.PublicationBranch, l.opts.RepoArg)
		default:
		}
	}
	conclude := func(outcome string) error {
		return l.r.Store.Write(func(tx *store.Tx) error { return tx.FinishJournal(j, outcome, payload, store.Now()) })
	}
	if l.opts.Push != "" {
		if d := l.push(in, label); d != nil {
			if cerr := conclude("push_rejected"); cerr != nil {
				return false, 0, nil, cerr
			}
			return false, 0, d, nil
		}
		crashpoint.Here("land:pushed")
	}
	// The compare-and-swap, with hooks on: the gate sees the lander move
	// the branch (and refuses anyone else, under --publication-lease on).
	l.recordMove(in.Onto, in.Result)
	err = l.cas("wt-admin land: "+map[bool]string{true: "batch ", false: "task "}[len(in.Tasks) > 0]+label, in.Onto, in.Result)
	if err != nil {
		now, _, _ := l.r.Git.ResolveCommit(l.ctx, l.ref)
		if now == in.Result {
			err = nil // it moved after all (a retry of git's)
		} else {
			if cerr := conclude("moved_under"); cerr != nil {
				return false, 0, nil, cerr
			}
			if now != in.Onto {
				return false, 0, nil, nil // moved meanwhile: integrate again
			}
			return false, 0, decision.SayWrap(decision.GitFailed, err, "move-from", l.ref, in.Onto, in.Result).
				WithHint("if git names a lock file, doctor says whether a dead git left it and how to remove it: wt-admin --repo %s doctor", l.opts.RepoArg), nil
		}
	}
	crashpoint.Here("land:moved")
	if err := l.r.Store.Write(func(tx *store.Tx) error {
		if err := tx.FinishJournal(j, "landed", payload, store.Now()); err != nil {
			return err
		}
		for _, t := range in.landed() {
			if err := recordLanded(tx, t.AllocationID, t); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return true, 0, nil, err
	}
	var ps []Provenance
	for _, t := range in.landed() {
		if t.Prov != nil {
			ps = append(ps, t.provenance())
		}
	}
	l.publishNotes(ps)
	return true, 0, nil, nil
}

// stillToLand checks, in the intent's section, that this lander still
// holds the publication lease and that every task of parts is still to
// land: unchanged (TASK_NOT_READY) and with no writer that took its lease
// since it was let go (WRITER_LEASE_HELD); bad is the part that is not.
func (l *lander) stillToLand(tx *store.Tx, parts []part) (bad int, err error) {
	cur, ok, err := tx.PublicationLease()
	if err != nil {
		return 0, err
	}
	if !ok || cur.LeaseID != l.lease.LeaseID {
		return 0, lost(&l.lease)
	}
	for i, p := range parts {
		if err := sameTask(tx, p.a, l.opts.RepoArg); err != nil {
			return i, err
		}
		le, _, err := tx.Lease(p.a.AllocationID)
		if err != nil {
			return i, err
		}
		if (writerState{le.LeaseID, le.Generation}) != p.ws {
			return i, decision.HeldDuringLanding(p.a.TaskKey, le.Holder.ClientID, le.Holder.PID).
				WithHint("land it once its writer has let go: wt-admin --repo %s land --wait --task %s", l.opts.RepoArg, shell.Word(p.a.TaskKey))
		}
	}
	return 0, nil
}

// push publishes in's result to --push's remote by the same
// compare-and-swap (--force-with-lease from in's onto); the refusal when
// the remote refused.
func (l *lander) push(in intent, label string) *decision.Error {
	l.notify(fmt.Sprintf("%s: pushing %.12s to %s %s", label, in.Result, l.opts.Push, l.pol.PublicationBranch))
	out, err := l.r.Git.Git(l.ctx, false, "push", "--porcelain", "--force-with-lease="+l.ref+":"+in.Onto, l.opts.Push, in.Result+":"+l.ref)
	if err == nil {
		return nil
	}
	why := err.Error()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "!") { // git push --porcelain: a ref refused, and why
			why = strings.TrimSpace(line[strings.LastIndexByte(line, '\t')+1:])
		}
	}
	return decision.Say(decision.LandPushRejected, "refused-must", l.opts.Push, l.pol.PublicationBranch, in.Result, in.Onto, why).
		WithHint("bring %s up to date (git fetch %s; git -C %s merge --ff-only %s/%s), then land again", l.pol.PublicationBranch, l.opts.Push, shell.Word(l.r.Git.TopLevel), l.opts.Push, l.pol.PublicationBranch)
}

// intentOf is the integration intent of tr, a landing of allocation a.
func (l *lander) intentOf(a store.Allocation, tr TaskResult) intent {
	return intent{AllocationID: a.AllocationID, Task: tr.Task, Source: tr.Source, Onto: tr.Onto, Result: tr.Result, Attempt: tr.Attempt, Strategy: tr.Strategy,
		TestUnconfined: tr.TestUnconfined, AcceptedUngated: tr.AcceptedUngated}
}

// cas moves the publication branch from old to new by git's
// compare-and-swap, with hooks on (the gate records the move), carrying a
// secret made for this one move: its hash is written into the lease
// just before (store.PublicationLease.MoveToken) and cleared just after,
// and only this git's environment holds it. Under publication-lease on
// the gate lets the branch move for that secret alone, so nothing the
// lander started (its test, the integration's git, their hooks) can move
// it by descending from the lander.
func (l *lander) cas(msg, old, new string) error {
	secret := rand.Text()
	if err := l.setMoveToken(store.MoveTokenHash(secret)); err != nil {
		return err
	}
	defer l.setMoveToken("") // Best effort: the lease ends with the run anyway.
	_, err := l.r.Git.GitEnv(l.ctx, []string{store.PublicationTokenEnv + "=" + secret}, "update-ref", "-m", msg, l.ref, new, old)
	return err
}

// setMoveToken records hash as the lease's move token ("" clears it).
func (l *lander) setMoveToken(hash string) error {
	return l.r.Store.Write(func(tx *store.Tx) error {
		cur, ok, err := tx.PublicationLease()
		if err != nil {
			return err
		}
		if !ok || cur.LeaseID != l.lease.LeaseID {
			return lost(&l.lease)
		}
		cur.MoveToken = hash
		if err := tx.PutPublicationLease(&cur); err != nil {
			return err
		}
		l.lease = cur
		return nil
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
	rec.TestUnconfined, rec.AcceptedUngated = in.TestUnconfined, in.AcceptedUngated
	rec.Batch, rec.PassedLog = in.Batch, in.TestLog
	if rec.Handback != "" {
		if err := dropHandback(rec.Handback); err != nil {
			return err
		}
		rec.Handback = ""
	}
	rec.Attempts = max(rec.Attempts, in.Attempt)
	rec.UpdatedAt = store.Now()
	if err := tx.PutLanding(&rec); err != nil {
		return err
	}
	detail := map[string]any{"task": in.Task, "source": in.Source, "onto": in.Onto, "result": in.Result, "strategy": in.Strategy}
	if in.TestUnconfined {
		detail["test_unconfined"] = true
	}
	if in.AcceptedUngated {
		detail["accepted_ungated"] = true
	}
	if in.Batch != "" {
		detail["batch"] = in.Batch
	}
	if in.Prov != nil {
		detail["provenance"] = in.provenance()
	}
	return tx.LogEvent("task_landed", id, detail)
}

// landed records tr (LANDED or ALREADY_LANDED) when nothing recorded it.
func (l *lander) landed(a store.Allocation, rec store.Landing, tr TaskResult, code, msg string) (TaskResult, error) {
	tr.Code, tr.Message = code, msg
	if code == decision.AlreadyLanded {
		err := l.r.Store.Write(func(tx *store.Tx) error {
			return recordLanded(tx, a.AllocationID, intent{Task: tr.Task, Source: tr.Source, Onto: tr.Onto, Result: tr.Result, Attempt: rec.Attempts, Strategy: tr.Strategy})
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
func (l *lander) handBack(a store.Allocation, rec store.Landing, tr TaskResult, state, kept, diff string, d *decision.Error) (TaskResult, error) {
	tr.Code, tr.Message = d.Code, d.Message
	tr.AttemptRef = attemptRef(tr.Task, tr.Attempt)
	if _, err := l.r.Git.GitUnhooked(l.ctx, "update-ref", "-m", "wt-admin land: attempt kept", tr.AttemptRef, kept); err != nil {
		return tr, decision.SayWrap(decision.GitFailed, err, "keep-attempt", tr.AttemptRef)
	}
	hb, err := l.handbackOf(a, tr, state, d.Message, diff)
	if err != nil {
		return tr, err
	}
	tr.Handback = hb
	err = l.r.Store.Write(func(tx *store.Tx) error {
		cur, err := tx.LandingOrNew(a.AllocationID, tr.Task)
		if err != nil {
			return err
		}
		cur.State, cur.Attempts, cur.Source, cur.Onto, cur.Result = state, tr.Attempt, tr.Source, tr.Onto, tr.Result
		cur.AttemptRef, cur.Paths, cur.TestExit, cur.TestLog, cur.Strategy = tr.AttemptRef, tr.Paths, tr.TestExit, tr.TestLog, tr.Strategy
		cur.TestUnconfined, cur.AcceptedUngated = tr.TestUnconfined, tr.AcceptedUngated
		cur.Handback = hb
		cur.UpdatedAt = store.Now()
		if err := tx.PutLanding(&cur); err != nil {
			return err
		}
		return tx.LogEvent("task_handed_back", a.AllocationID, map[string]any{"task": tr.Task, "state": state, "attempt_ref": tr.AttemptRef,
			"paths": tr.Paths, "test_exit": tr.TestExit, "test_log": tr.TestLog, "owner": a.Owner, "handback": hb})
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
			return out, decision.SayWrap(decision.InvalidMetadata, err, "land-journal", j.TransactionID)
		}
		tip, _, err := l.r.Git.ResolveCommit(l.ctx, l.ref)
		if err != nil {
			return out, err
		}
		landed := false
		if tip != "" {
			if landed, err = l.r.Git.IsAncestor(l.ctx, in.Result, tip); err != nil {
				return out, decision.SayWrap(decision.GitFailed, err, "is-in", in.Result, l.ref)
			}
		}
		err = l.r.Store.Write(func(tx *store.Tx) error {
			if err := tx.FinishJournal(j, map[bool]string{true: "landed", false: "not_landed"}[landed], j.Payload, store.Now()); err != nil {
				return err
			}
			if landed {
				for _, t := range in.landed() {
					if err := recordLanded(tx, t.AllocationID, t); err != nil {
						return err
					}
				}
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
		what := "task " + in.Task
		if len(in.Tasks) > 0 {
			var ks []string
			for _, t := range in.Tasks {
				ks = append(ks, t.Task)
			}
			what = "batch " + strings.Join(ks, ", ")
		}
		out = append(out, fmt.Sprintf("%s: %s (a dead lander's landing of %.12s)", what, word, in.Result))
		l.notify(out[len(out)-1])
	}
	return out, nil
}
