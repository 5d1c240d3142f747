package wrapper

import (
	"context"
	"fmt"
	"strings"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/wrapper/confine"
)

// preparePublisher makes the publisher of a confined run's task branch
// when the run has a private view (confine.View) and a branch: where the
// real branch stands now, before the command starts, is the first tip
// the publication swaps from. Every publication is recorded in the store
// (event task_branch_published) as well as in the branch's reflog.
func (s *supervisor) preparePublisher(c gitrepo.Checkout, g lease.Grant, conf *confine.Plan) error {
	v := conf.View()
	if v == nil {
		return nil
	}
	s.view = v
	v.Recorded(s.repo.Store.Root(), c.Key, g.Allocation.TaskKey)
	if g.Allocation.Branch == nil {
		return nil
	}
	branch, base := *g.Allocation.Branch, s.viewBase
	p := confine.NewPublisher(v, g.Allocation.TaskKey, branch, base, g.Policy.PublicationBranch)
	p.Notify = s.notify
	p.Exclusive = s.child.WithoutReaping
	id, lid := g.Allocation.AllocationID, g.Lease.LeaseID
	h := g.Lease.Holder
	// Recorded in the store off the publication's path: under many
	// launchers the store's lock can be minutes away at worst, and the
	// next move must not wait for it.
	moves := make(chan confine.Move, 64)
	s.recorded = make(chan struct{})
	go func() {
		defer close(s.recorded)
		for m := range moves {
			if err := s.repo.Store.Write(func(tx *store.Tx) error {
				return tx.AppendEvent(store.Event{At: store.Now(), Event: "task_branch_published",
					AllocationID: &id, LeaseID: &lid, Holder: &h, Actor: proc.Actor(),
					Detail: map[string]any{"ref": m.Ref, "old": m.Old, "new": m.New, "rewrite": m.Rewrite, "kept": m.Kept}})
			}); err != nil {
				s.notify("the publication of " + m.Ref + " could not be recorded in wt's store (the branch's reflog has it): " + err.Error())
			}
		}
	}()
	s.moves = moves
	p.Published = func(m confine.Move) { moves <- m }
	p.Ledger = publishLedger(s.repo.Store.Root(), g.Allocation, g.Lease)
	s.pub = p
	return nil
}

// publishLedger records a publication of allocation a's branch, under
// lease l, in the branch's ledger (store.AppendLedger). Best effort, as
// the gate's: a move not recorded shows as one no gate saw.
func publishLedger(root string, a store.Allocation, l store.Lease) func(old, new string) {
	if a.Branch == nil {
		return nil
	}
	ref := "refs/heads/" + *a.Branch
	return func(old, new string) {
		_ = store.AppendLedger(root, a.AllocationID, store.LedgerLine{Via: store.ViaPublish, Ref: ref, Old: old, New: new,
			LeaseID: l.LeaseID, Generation: l.Generation, ClientID: l.Holder.ClientID}) // Best effort, as above.
	}
}

// branchBase is where the allocation's branch stands now ("" for none):
// the first tip a confined run's publication swaps from.
func branchBase(c gitrepo.Checkout, a store.Allocation) (string, error) {
	if a.Branch == nil {
		return "", nil
	}
	base, err := gitrepo.ReadRef(c.CommonDir, "refs/heads/"+*a.Branch)
	if err != nil {
		return "", decision.SayWrap(decision.PathStateUnknown, err, "read-task", *a.Branch)
	}
	if strings.HasPrefix(base, "ref:") {
		base = ""
	}
	return base, nil
}

// recoverView recovers the view a run on this worktree left when its
// wt-exec was killed (confine.Recover), before this run starts anything.
// One that cannot be recovered stops this run: its record would be
// replaced by this run's, and what it holds lost track of.
func (s *supervisor) recoverView(c gitrepo.Checkout, g lease.Grant) error {
	err := confine.Recover(context.Background(), c.CommonDir, s.repo.Store.Root(), c.Key, s.notify, publishLedger(s.repo.Store.Root(), g.Allocation, g.Lease))
	if err != nil {
		return decision.SayWrap(decision.PublishFailed, err, "recover-earlier").
			WithHint("see it with wt-admin --repo %s doctor", shell.Word(c.TopLevel))
	}
	return nil
}

// startPublisher watches the view once the command runs in it.
func (s *supervisor) startPublisher() {
	if s.pub == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.endPub, s.pubEnd = cancel, make(chan struct{})
	go func() {
		defer close(s.pubEnd)
		s.pub.Watch(ctx)
	}()
}

// endView ends a confined run's view once the command and everything it
// started have ended: the branch published a last time, the refs the run
// moved in its view and did not publish listed (REFS_UNPUBLISHED), and
// the view's layers removed, but when the publication failed: then they
// stay, and the notice names them.
func (s *supervisor) endView() {
	if s.view == nil {
		return
	}
	v := s.view
	s.view = nil
	keep := false
	if s.pub != nil {
		if s.endPub != nil {
			s.endPub()
			<-s.pubEnd
		}
		ctx := context.Background()
		if err := s.pub.Publish(ctx); err != nil {
			keep = true
			s.notify(err.Error() + fmt.Sprintf("; the run's view is kept in %s", v.Upper()))
		}
		if err := s.pub.KeepObjects(ctx); err != nil {
			keep = true
			s.notify(err.Error() + fmt.Sprintf("; the run's view is kept in %s", v.Upper()))
		}
		close(s.moves) // every move is recorded before the run is done
		<-s.recorded
		if refs, err := s.pub.Unpublished(ctx); err != nil {
			s.notify("the refs the run moved in its view cannot be listed: " + err.Error())
		} else if len(refs) > 0 {
			s.notify(decision.Say(decision.RefsUnpublished, "run-moved",
				len(refs), strings.Join(refs, "; ")).Error())
		}
	}
	if keep {
		v.Close()
		return
	}
	if s.transferred {
		// What the command left runs on in the view under the lease it
		// was given: the view and its record stay, and the next wt-exec
		// on the worktree recovers what it publishes no more.
		s.notify("the run's private view " + v.Dir + " stays for the processes the lease was transferred to; the next wt-exec on the worktree publishes what they leave")
		v.Close()
		return
	}
	if err := v.Remove(); err != nil {
		s.notify("the run's private view " + v.Dir + " could not be removed: " + err.Error())
	}
}

// dropView removes a view whose command never ran.
func (s *supervisor) dropView() {
	if s.view != nil {
		_ = s.view.Remove() // Best effort: layers nothing was written in.
		s.view = nil
	}
}
