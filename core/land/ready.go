package land

import (
	"context"
	"os"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// ReadyResult is a task put in the ready queue.
type ReadyResult struct {
	Code    string        `json:"code"`
	Landing store.Landing `json:"landing"`
	// Position is the task's place in the queue (1: next).
	Position int `json:"position"`
}

// MarkReady puts task in the ready queue, after every task already in
// it. Its owner marks it (owner, which must be the allocation's), or its
// writer, from inside its run (owner ""; this process descends from the
// live holder of the task's writer lease). A task already ready keeps its
// place; a task landed or handed back goes to the end of the queue.
//
// The mark records the task branch's tip (ReadyTip): what land lands. A
// mark made again records the tip anew (its place in the queue kept).
//
// strategy, when set, is how the task asks to be integrated (rebase,
// merge, squash): land uses it for this task whatever its --strategy.
func MarkReady(r *alloc.Repo, task, owner, strategy, repoArg string) (ReadyResult, error) {
	var res ReadyResult
	switch strategy {
	case "", Rebase, Merge, Squash:
	default:
		return res, decision.Say(decision.Usage, "strategy-not", strategy).
			WithHint("wt-admin --repo %s ready %s --strategy squash", repoArg, shell.Word(task))
	}
	pre, err := r.TaskAllocation(task)
	if err != nil {
		return res, err
	}
	tip := ""
	if pre != nil && pre.Branch != nil {
		t, ok, err := r.Git.ResolveCommit(context.Background(), "refs/heads/"+*pre.Branch)
		if err != nil {
			return res, decision.SayWrap(decision.GitFailed, err, "read-task", task)
		}
		if !ok {
			return res, decision.Say(decision.NotReady, "task-branch", task, *pre.Branch).
				WithHint("see the tasks: wt-admin --repo %s status", repoArg)
		}
		tip = t
	}
	err = r.Store.Write(func(tx *store.Tx) error {
		all, err := tx.Allocations()
		if err != nil {
			return err
		}
		var a *store.Allocation
		for i, x := range all {
			if x.TaskKey == task && x.Lifecycle == store.Active && x.Role == store.RoleFeature {
				a = &all[i]
			}
		}
		if a == nil {
			return decision.Say(decision.NotReady, "task-has-no", task).
				WithHint("see the tasks: wt-admin --repo %s status", repoArg)
		}
		by, err := readyBy(tx, *a, owner, repoArg)
		if err != nil {
			return err
		}
		ls, err := tx.Landings()
		if err != nil {
			return err
		}
		rec, err := tx.LandingOrNew(a.AllocationID, task)
		if err != nil {
			return err
		}
		if pre == nil || pre.AllocationID != a.AllocationID || a.Branch == nil || tip == "" || branchName(*pre) != *a.Branch {
			return decision.Say(decision.NotReady, "task-branch-changed", task).
				WithHint("mark it again: wt-admin --repo %s ready %s", repoArg, shell.Word(task))
		}
		if rec.State != store.LandingReady || rec.ReadyTip != tip || rec.ReadyStrategy != strategy {
			if err := markReady(tx, &rec, ls, by, tip, strategy); err != nil {
				return err
			}
		}
		res.Code, res.Landing, res.Position = decision.TaskReady, rec, 1
		for _, l := range ls {
			if l.State == store.LandingReady && l.ReadySeq < rec.ReadySeq {
				res.Position++
			}
		}
		return nil
	})
	return res, err
}

// markReady writes rec (from the landing records ls) as ready, marked by
// by, at tip, asking for strategy: at the end of the queue unless it is in
// it already; a hand-back it had is answered, and goes.
func markReady(tx *store.Tx, rec *store.Landing, ls []store.Landing, by, tip, strategy string) error {
	if rec.State != store.LandingReady {
		last := 0
		for _, l := range ls {
			last = max(last, l.ReadySeq)
		}
		rec.State, rec.ReadySeq = store.LandingReady, last+1
	}
	rec.ReadyAt, rec.ReadyBy, rec.ReadyTip, rec.ReadyStrategy = store.Now(), by, tip, strategy
	if rec.Handback != "" {
		if err := dropHandback(rec.Handback); err != nil {
			return err
		}
		rec.Handback = ""
	}
	rec.UpdatedAt = rec.ReadyAt
	if err := tx.PutLanding(rec); err != nil {
		return err
	}
	return tx.LogEvent("task_ready", rec.AllocationID, map[string]any{"task": rec.TaskKey, "by": by, "seq": rec.ReadySeq, "tip": tip, "strategy": strategy})
}

// readyBy is who marks allocation a ready: its owner (owner given), or
// its live writer's client when this process runs under that writer.
func readyBy(tx *store.Tx, a store.Allocation, owner, repoArg string) (string, error) {
	if owner != "" {
		if owner != a.Owner {
			return "", decision.Say(decision.OwnerMismatch, "task-owned", a.TaskKey, a.Owner, owner).
				WithHint("wt-admin --repo %s ready %s --owner %s", repoArg, shell.Word(a.TaskKey), shell.Word(a.Owner))
		}
		return owner, nil
	}
	l, live, err := alloc.LiveWriter(tx, a)
	if err != nil {
		return "", err
	}
	if live {
		in, err := proc.NewReader().HasAncestor(os.Getpid(), l.Holder.Identity())
		if err != nil {
			return "", err
		}
		if in {
			return "writer " + l.Holder.ClientID, nil
		}
	}
	return "", decision.Say(decision.NotReady, "only-task", a.TaskKey).
		WithHint("wt-admin --repo %s ready %s --owner %s", repoArg, shell.Word(a.TaskKey), shell.Word(a.Owner))
}
