package land

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/crashpoint"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// A batch lands several tasks of the queue by one compare-and-swap of
// the publication branch, once the commit that integrates them all has
// passed the test.
//
// The lander integrates the queue in order onto the publication tip, one
// task onto the last one's result (the chain: link i is main + tasks
// 0..i). The prefix of length k is the chain's link k-1, a commit that
// exists once the chain is built, so any prefix can be tested without
// integrating again. A round tests up to Jobs prefixes at once, each in an
// integration worktree of its own (a slot), and then:
//
//   - the longest prefix that passed (within --batch when a shorter
//     passing one is) is published (one compare-and-swap, every task in
//     it LANDED), and the chain goes on from there, unchanged; a shorter
//     prefix that failed does not keep it back, as it would not in a
//     batch tested once;
//   - when the prefix of length 1 (main and the next task alone) failed,
//     that task is handed back (LAND_TEST_FAILED), and the chain is built
//     again, onto the publication tip, from the tasks after it;
//   - otherwise the next round tests prefixes between the longest that
//     passed and the shortest that failed (bisection, Jobs points at a
//     time), or, when nothing failed yet, the next batch (--batch) and,
//     with slots to spare, prefixes of it (speculation: the tests a
//     failure would need next, run while the batch's own runs).
//
// A task that does not integrate onto the chain before it is left out of
// it; it is handed back (LAND_CONFLICT) once every task before it in the
// queue has landed or been handed back, since only then is what it
// conflicts with what main holds. A task handed back leaves the chain
// built on it invalid: it is built again without it, and the tasks that
// conflicted after it are tried again.
//
// Nothing is half landed: the branch moves only by the compare-and-swap
// of a tested prefix, its intent (every task of it, with its own commit)
// journaled first, and a lander killed anywhere leaves the branch at its
// old tip or at the tested prefix, which land --recover records.

// entry is a task of the queue, checked and pinned: what lands is pinned.
type entry struct {
	idx    int // its place in the queue
	a      store.Allocation
	rec    store.Landing
	pinned string
	by     string
	tr     TaskResult
	diff   string // its conflict, when it conflicted
}

// link is an entry integrated onto the chain before it: result is main +
// every link up to this one; tested says how the prefix ending here fared
// (0 not tested, 1 passed, -1 failed, with its log).
type link struct {
	e       *entry
	onto    string // the commit it was integrated onto
	result  string
	tested  int
	log     string
	exit    int
	attempt int
}

// slotTask is the task key of integration slot n (0: wt's one
// integration worktree).
func slotTask(n int) string {
	if n == 0 {
		return IntegrationTask
	}
	return IntegrationTask + "-" + strconv.Itoa(n+1)
}

// slot is integration worktree n, allocated the first time it is needed.
func (l *lander) slot(n int) (store.Allocation, error) {
	for len(l.slots) <= n {
		k := len(l.slots)
		if k == 0 {
			l.slots = append(l.slots, l.iwt)
			continue
		}
		task := slotTask(k)
		a, err := l.r.TaskAllocation(task)
		if err != nil {
			return store.Allocation{}, err
		}
		if a != nil {
			if a.Role != store.RoleIntegration {
				return *a, decision.Say(decision.TaskKeyInUse, "task-which", task, a.Role, a.WorktreePath).
					WithHint("finish that task (wt-admin --repo %s finish --task %s --owner %s), or land with --jobs %d", l.opts.RepoArg, task, shell.Word(a.Owner), k)
			}
			l.slots = append(l.slots, *a)
			continue
		}
		l.notify(fmt.Sprintf("making integration worktree %d for tests run at once", k+1))
		res, err := l.r.Allocate(l.ctx, alloc.Request{TaskKey: task, Owner: ClientID, Role: store.RoleIntegration,
			Branch: task, Path: IntegrationPath(l.r.Git.TopLevel) + "-" + strconv.Itoa(k+1), NewTask: true})
		if err != nil {
			return res.Allocation, err
		}
		l.slots = append(l.slots, res.Allocation)
	}
	return l.slots[n], nil
}

// prepare checks task as landOne does before its first attempt: its
// allocation, its writer let go, the commit pinned, approved by the
// ledger; e is nil when the task is concluded here (refused, or landed
// already), tr its result.
func (l *lander) prepare(idx int, task, onto string) (*entry, TaskResult, error) {
	tr := TaskResult{Task: task}
	a, rec, d := l.taskOf(task)
	if d != nil {
		tr.Code, tr.Message = d.Code, d.Message
		return nil, tr, nil
	}
	tr.Owner, tr.Worktree, tr.Strategy = a.Owner, a.WorktreePath, l.strategyOf(rec)
	e := &entry{idx: idx, a: a, rec: rec, by: "its writer let go"}
	if rec.State == store.LandingReady && rec.ReadyTip != "" {
		e.pinned, e.by = rec.ReadyTip, "marked ready by "+rec.ReadyBy
	}
	source, d, err := l.checkTip(e, &tr)
	if err != nil || d != nil {
		if d != nil {
			tr.Code, tr.Message = d.Code, d.Message
		}
		return nil, tr, err
	}
	tr.Source, tr.Onto = source, onto
	if done, out, err := l.alreadyIn(a, rec, tr, source, onto); err != nil || done {
		return nil, out, err
	}
	e.tr = tr
	return e, tr, nil
}

// recheck is the check before a publication, for each entry of a tested
// prefix: its writer let go (waited for under --wait), the task as the
// landing found it, its branch still at the commit pinned.
func (l *lander) recheck(e *entry) (writerState, *decision.Error, error) {
	ws, d := l.quiescent(e.a)
	if d != nil {
		return ws, d, nil
	}
	if err := l.r.Store.Read(func(tx *store.Tx) error { return sameTask(tx, e.a, l.opts.RepoArg) }); err != nil {
		if d, ok := decision.As(err); ok {
			return ws, d, nil
		}
		return ws, nil, err
	}
	now, err := gitrepo.ReadRef(l.r.Git.CommonDir, "refs/heads/"+branchName(e.a))
	if err != nil {
		return ws, nil, decision.SayWrap(decision.GitFailed, err, "read-task", e.a.TaskKey)
	}
	if now != e.pinned {
		return ws, l.tipMoved(e.a, e.pinned, now, e.by), nil
	}
	return ws, nil, nil
}

// build integrates queue, in order, onto onto in the integration
// worktree: the chain, and the entries that conflicted (each with its
// paths in its result) and were left out of it.
func (l *lander) build(queue []*entry, onto string) ([]*link, []*entry, error) {
	var chain []*link
	var conflicts []*entry
	at := onto
	for _, e := range queue {
		n, err := l.nextAttempt(e.tr.Task, e.rec.Attempts+1)
		if err != nil {
			return nil, nil, err
		}
		l.notify(fmt.Sprintf("%s: integrating %.12s onto %.12s, %s, attempt %d", e.tr.Task, e.pinned, at, e.tr.Strategy, n))
		result, paths, err := l.integrate(e.tr.Task, e.pinned, at, e.tr.Strategy)
		if err != nil {
			return nil, nil, err
		}
		if paths != nil {
			e.tr.Paths, e.tr.Attempt, e.tr.Onto, e.tr.Source, e.diff = paths, n, at, e.pinned, l.lastDiff
			conflicts = append(conflicts, e)
			continue
		}
		if result == at {
			// Its changes are in what it integrated onto already: it
			// lands with the prefix before it, changing nothing.
			chain = append(chain, &link{e: e, onto: at, result: at, attempt: n})
			continue
		}
		chain = append(chain, &link{e: e, onto: at, result: result, attempt: n})
		at = result
	}
	crashpoint.Here("land:integrated")
	return chain, conflicts, nil
}

// longestPassed is the longest prefix of chain whose test passed (0:
// none). A shorter prefix that failed does not keep it from landing: main
// moves to what passed, never to what failed (a task that needs a later
// one of the batch lands with it, as it would in a batch tested once).
func longestPassed(chain []*link) int {
	for i := len(chain) - 1; i >= 0; i-- {
		if chain[i].tested > 0 {
			return i + 1
		}
	}
	return 0
}

// endpoints are the prefix lengths the next round tests, at most jobs of
// them, ascending: between the longest prefix that passed (lo) and the
// shortest that failed (hi, or none: len(chain)+1), and none tested yet.
func endpoints(chain []*link, batch, jobs int) []int {
	m := len(chain)
	lo, hi := longestPassed(chain), m+1
	for i := lo; i < m; i++ {
		if chain[i].tested < 0 {
			hi = i + 1
			break
		}
	}
	pick := map[int]bool{}
	add := func(e int) {
		if e > lo && e < hi && e <= m && chain[e-1].tested == 0 && len(pick) < jobs {
			pick[e] = true
		}
	}
	if hi == m+1 {
		// Nothing failed: the batches after lo, then, with slots to
		// spare, the halves a failure of the first would test next.
		for e := lo + batch; len(pick) < jobs; e += batch {
			add(min(e, m))
			if e >= m {
				break
			}
		}
		first := min(lo+batch, m)
		for span := first - lo; span > 1 && len(pick) < jobs; span /= 2 {
			add(lo + span/2)
		}
	} else {
		// Bisection: jobs points spread over (lo, hi).
		for k := 1; k <= jobs; k++ {
			add(lo + (k*(hi-lo)+jobs)/(jobs+1))
		}
		for e := lo + 1; e < hi && len(pick) < jobs && len(pick) < hi-lo-1; e++ {
			add(e)
		}
	}
	out := make([]int, 0, len(pick))
	for e := 1; e <= m; e++ {
		if pick[e] {
			out = append(out, e)
		}
	}
	return out
}

// candidateLog is where the test of a batch's candidate writes its
// output: land-logs/batches/<batch>/<n>.log.
func (l *lander) candidateLog(n int) string {
	return filepath.Join(l.r.Store.Root(), store.LandLogsDir, "batches", l.batchID, strconv.Itoa(n)+".log")
}

// testRound tests the prefixes ends of chain at once, one in each slot.
func (l *lander) testRound(chain []*link, ends []int) error {
	type outcome struct {
		exit int
		log  string
		err  error
	}
	outs := make([]outcome, len(ends))
	slots := make([]store.Allocation, len(ends))
	for i := range ends {
		s, err := l.slot(i)
		if err != nil {
			return err
		}
		slots[i] = s
	}
	var wg sync.WaitGroup
	for i, e := range ends {
		l.candidates++
		n := l.candidates
		c := chain[e-1]
		var tasks []string
		for _, k := range chain[:e] {
			tasks = append(tasks, k.e.tr.Task)
		}
		label := fmt.Sprintf("candidate %d (%s + %s)", n, l.pol.PublicationBranch, strings.Join(tasks, " + "))
		if err := l.checkoutIn(slots[i], c.result); err != nil {
			return err
		}
		l.testRuns++
		wg.Add(1)
		go func() {
			defer wg.Done()
			exit, log, err := l.runTest(slots[i], label, tasks, l.candidateLog(n), c.result)
			outs[i] = outcome{exit, log, err}
		}()
	}
	wg.Wait()
	crashpoint.Here("land:tested")
	for i, e := range ends {
		if outs[i].err != nil {
			return outs[i].err
		}
		c := chain[e-1]
		c.log, c.exit = outs[i].log, outs[i].exit
		c.tested = 1
		if outs[i].exit != 0 {
			c.tested = -1
		}
	}
	return nil
}

// checkoutIn puts commit in integration worktree wt, nothing else there.
func (l *lander) checkoutIn(wt store.Allocation, commit string) error {
	if err := l.clearStaleLocksIn(wt); err != nil {
		return err
	}
	if _, err := l.gitIn(wt, "clean", "-q", "-ffdx"); err != nil {
		return decision.SayWrap(decision.GitFailed, err, "clean-integration", wt.WorktreePath)
	}
	if _, err := l.gitIn(wt, "checkout", "-q", "-f", "-B", branchName(wt), commit); err != nil {
		return decision.SayWrap(decision.GitFailed, err, "check-out", commit, wt.WorktreePath)
	}
	return nil
}

// queueRun is one landQueue: the queue's tasks still to conclude, the
// chain built for them, and each task's result as it is concluded.
type queueRun struct {
	l         *lander
	n         int           // the queue's length
	done      []*TaskResult // by place in the queue
	queue     []*entry      // not concluded yet, in order
	chain     []*link       // the current chain
	conflicts []*entry      // left out of the chain, provisionally
	retries   int           // moves of the branch under the landing
}

// conclude records e's result (or tr for a task that never became an
// entry) and takes it out of the queue.
func (q *queueRun) conclude(idx int, tr TaskResult) {
	q.done[idx] = &tr
	q.l.notify(fmt.Sprintf("%s: %s: %s", tr.Task, tr.Code, tr.Message))
	q.queue = slices.DeleteFunc(q.queue, func(e *entry) bool { return e.idx == idx })
}

// concludeAll concludes every task still queued with d.
func (q *queueRun) concludeAll(d *decision.Error) {
	for _, e := range slices.Clone(q.queue) {
		e.tr.Code, e.tr.Message = d.Code, d.Message
		q.conclude(e.idx, e.tr)
	}
}

// results are the results in queue order.
func (q *queueRun) results() []TaskResult {
	var out []TaskResult
	for _, d := range q.done {
		if d != nil {
			out = append(out, *d)
		}
	}
	return out
}

// landQueue lands tasks in batches (see above); each task's result is
// in the results, in queue order, once it is concluded.
func (l *lander) landQueue(tasks []string) ([]TaskResult, error) {
	q := &queueRun{l: l, n: len(tasks), done: make([]*TaskResult, len(tasks))}
	onto, err := l.tip()
	if err != nil {
		return q.results(), err
	}
	for i, task := range tasks {
		e, tr, err := l.prepare(i, task, onto)
		if err != nil {
			return q.results(), err
		}
		if e == nil {
			q.conclude(i, tr)
			continue
		}
		q.queue = append(q.queue, e)
	}
	for len(q.queue) > 0 {
		stop, err := q.build()
		if err != nil || stop {
			return q.results(), err
		}
		for rebuild := false; !rebuild && err == nil && !stop; {
			rebuild, stop, err = q.round()
		}
		if err != nil || stop {
			return q.results(), err
		}
	}
	return q.results(), nil
}

// build builds the chain of the queue onto the publication tip (caught
// up with the remote first, under --push); stop is set when a refusal
// concluded every task.
func (q *queueRun) build() (stop bool, err error) {
	l := q.l
	if err := setTask(l.r, &l.lease, q.queue[0].tr.Task); err != nil {
		return false, err
	}
	if l.opts.Push != "" {
		if d, err := l.catchUp(); err != nil || d != nil {
			if d != nil {
				q.concludeAll(d)
				return true, nil
			}
			return false, err
		}
	}
	onto, err := l.tip()
	if err != nil {
		return false, err
	}
	if err := l.ontoApproved(onto); err != nil {
		return false, err
	}
	q.chain, q.conflicts, err = l.build(q.queue, onto)
	return false, err
}

// round takes one step on the chain: it lands the longest prefix that
// passed, hands back a task that fails alone, or tests the next prefixes.
// rebuild is set when the chain must be built again; stop when the run
// is over.
func (q *queueRun) round() (rebuild, stop bool, err error) {
	l := q.l
	if len(q.chain) == 0 {
		return true, false, q.handBackConflicts(q.n)
	}
	switch p := q.landable(); {
	case p > 0:
		return q.publish(p)
	case q.chain[0].tested < 0:
		return true, false, q.evict()
	case l.opts.Test == "":
		for _, c := range q.chain[:min(l.batch, len(q.chain))] {
			c.tested = 1
		}
		return false, false, nil
	default:
		return false, false, l.testRound(q.chain, endpoints(q.chain, l.batch, l.jobs))
	}
}

// landable is the prefix that lands next: the longest that passed, or
// the longest within --batch when a shorter one passed too (0: none).
func (q *queueRun) landable() int {
	p, b := longestPassed(q.chain), 0
	for i, c := range q.chain[:min(p, q.l.batch)] {
		if c.tested > 0 {
			b = i + 1
		}
	}
	if b == 0 {
		return p
	}
	return b
}

// publish lands the chain's prefix of length p by one move; the chain
// goes on from there. A task of it that is no longer to land is concluded
// with its refusal, and the chain built again without it; a branch that
// moved under the landing is integrated again (at most maxRetries times).
func (q *queueRun) publish(p int) (rebuild, stop bool, err error) {
	l := q.l
	moved, bad, d, err := l.publishPrefix(q.chain[:p])
	if err != nil {
		return false, false, err
	}
	if d != nil {
		e := q.chain[bad].e
		e.tr.Code, e.tr.Message = d.Code, d.Message
		q.conclude(e.idx, e.tr)
		return true, false, nil
	}
	if !moved {
		if q.retries++; q.retries > maxRetries {
			q.concludeAll(decision.Say(decision.LandConflict, "moved-under", l.pol.PublicationBranch, q.retries).
				WithHint("land again when the branch is quiet: wt-admin --repo %s land --ready", l.opts.RepoArg))
			return false, true, nil
		}
		l.notify(fmt.Sprintf("%s moved meanwhile; integrating again", l.pol.PublicationBranch))
		return true, false, nil
	}
	for _, c := range q.chain[:p] {
		q.conclude(c.e.idx, c.e.tr)
	}
	q.chain = q.chain[p:]
	return false, false, q.handBackConflicts(q.next(0))
}

// evict hands back the chain's first task, which fails the test on the
// publication tip alone; what was built on it is built again.
func (q *queueRun) evict() error {
	l := q.l
	c := q.chain[0]
	e := c.e
	e.tr.Attempt, e.tr.Onto, e.tr.Result, e.tr.Source = c.attempt, c.onto, c.result, e.pinned
	e.tr.TestExit, e.tr.TestUnconfined = c.exit, l.opts.TestUnconfined
	e.tr.TestLog = l.logPath(e.tr.Task, c.attempt)
	if err := linkLog(c.log, e.tr.TestLog); err != nil {
		return err
	}
	tr, err := l.handBack(e.a, e.rec, e.tr, store.LandingTestFailed, c.result, "",
		decision.Say(decision.LandTestFailed, "task-integrated", e.tr.Task, l.pol.PublicationBranch, c.exit, e.tr.TestLog))
	if err != nil {
		return err
	}
	q.conclude(e.idx, tr)
	return q.handBackConflicts(q.next(1))
}

// next is the queue place of the chain's link i (the queue's length when
// the chain ends before it).
func (q *queueRun) next(i int) int {
	if i < len(q.chain) {
		return q.chain[i].e.idx
	}
	return q.n
}

// handBackConflicts hands back the tasks left out of the chain for their
// conflict whose place in the queue is before upto: every task before
// them has landed or been handed back, so what they conflict with is what
// main holds.
func (q *queueRun) handBackConflicts(upto int) error {
	l := q.l
	var keep []*entry
	for _, e := range q.conflicts {
		if e.idx >= upto {
			keep = append(keep, e)
			continue
		}
		tr, err := l.handBack(e.a, e.rec, e.tr, store.LandingConflict, e.pinned, e.diff,
			decision.Say(decision.LandConflict, "task-branch", e.tr.Task, e.tr.Strategy, l.pol.PublicationBranch, strings.Join(e.tr.Paths, ", ")))
		if err != nil {
			return err
		}
		q.conclude(e.idx, tr)
	}
	q.conflicts = keep
	return nil
}

// tip is the publication branch's commit.
func (l *lander) tip() (string, error) {
	onto, ok, err := l.r.Git.ResolveCommit(l.ctx, l.ref)
	if err != nil || !ok {
		return "", decision.Say(decision.PublicationUnknown, "publication-branch", l.ref, err)
	}
	return onto, nil
}

// publishPrefix lands prefix, a tested prefix of the chain, by one
// compare-and-swap; each of its tasks is rechecked first (bad is the
// index of the one that kept it from landing, d why).
func (l *lander) publishPrefix(prefix []*link) (moved bool, bad int, d *decision.Error, err error) {
	last := prefix[len(prefix)-1]
	in := intent{Onto: prefix[0].onto, Result: last.result, Strategy: l.opts.Strategy, TestUnconfined: l.opts.TestUnconfined && l.opts.Test != "",
		Batch: ids.New(), TestLog: last.log}
	parts := make([]part, len(prefix))
	var keys []string
	for i, c := range prefix {
		ws, d, err := l.recheck(c.e)
		if err != nil || d != nil {
			return false, i, d, err
		}
		parts[i] = part{c.e.a, ws}
		keys = append(keys, c.e.tr.Task)
		prov := l.provenanceOf(c.e.a, c.e.rec, c.e.pinned)
		in.Tasks = append(in.Tasks, intent{AllocationID: c.e.a.AllocationID, Task: c.e.tr.Task, Source: c.e.pinned, Onto: c.onto, Result: c.result, Strategy: c.e.tr.Strategy,
			Attempt: c.attempt, AcceptedUngated: c.e.tr.AcceptedUngated, Prov: &prov})
	}
	for i := range in.Tasks {
		in.Tasks[i].Prov.BatchTasks, in.Tasks[i].Prov.Tested = keys, last.result
	}
	in.AllocationID, in.Task, in.Source, in.Attempt = last.e.a.AllocationID, last.e.tr.Task, last.e.pinned, last.attempt
	label := strings.Join(keys, ", ")
	moved, bad, d, err = l.publishParts(parts, in, label)
	if err != nil || d != nil || !moved {
		return moved, bad, d, err
	}
	l.checkouts = l.followCheckouts(in.Onto, in.Result)
	msg := fmt.Sprintf("%s moved %.12s -> %.12s", l.pol.PublicationBranch, in.Onto, in.Result)
	if len(prefix) > 1 {
		msg += fmt.Sprintf(" (a batch of %d: %s)", len(prefix), label)
	}
	for _, c := range prefix {
		c.e.tr.Code, c.e.tr.Message = decision.Landed, msg
		c.e.tr.Onto, c.e.tr.Result, c.e.tr.Attempt, c.e.tr.Source = c.onto, c.result, c.attempt, c.e.pinned
		c.e.tr.TestUnconfined, c.e.tr.Batch = in.TestUnconfined, in.Batch
		if c.result == c.onto {
			c.e.tr.Code = decision.AlreadyLanded
			c.e.tr.Message = fmt.Sprintf("task %s's changes are in %s already: integrating them changed nothing", c.e.tr.Task, l.pol.PublicationBranch)
		}
	}
	crashpoint.Here("land:recorded")
	return true, 0, nil, nil
}

// linkLog makes the failed candidate's log (from) the handed-back task's
// own attempt log (to): a hard link, or a copy where one cannot be made.
func linkLog(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return decision.SayWrap(decision.Internal, err, "make", filepath.Dir(to))
	}
	if err := os.Link(from, to); err == nil {
		return nil
	}
	b, err := os.ReadFile(from)
	if err != nil {
		return decision.SayWrap(decision.Internal, err, "read-test", from)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		return decision.SayWrap(decision.Internal, err, "write", to)
	}
	return nil
}
