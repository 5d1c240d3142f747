package hooks

import (
	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/store"
)

// PostCheckout runs after git checked something out in the checkout that
// holds dir. git before 2.46 does not show a branch switch (a symbolic-ref
// update of HEAD) to reference-transaction, so a governed feature worktree
// can be switched off its task branch unseen; this reports it after the
// fact: it records a head_left_task_branch event and returns the
// HEAD_OFF_TASK_BRANCH decision (warn is true under policy enforcement
// warn). Commits there are refused until HEAD is back (see Entitled), and
// wt-exec refuses the worktree. Nothing to report is (nil, false, nil).
func PostCheckout(dir string) (d *decision.Error, warn bool, err error) {
	c, err := gitrepo.Locate(dir)
	if err != nil {
		return nil, false, err
	}
	r, err := alloc.OpenCheckout(c)
	if decision.CodeOf(err) == decision.NotInitialized {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var a store.Allocation
	err = r.Store.Read(func(tx *store.Tx) error {
		t, err := r.ResolveCheckout(tx, c)
		if decision.CodeOf(err) == decision.UnregisteredWorktree {
			return nil
		}
		if err != nil {
			return err
		}
		if c.Key == gitrepo.MainKey || t.Allocation.Role != store.RoleFeature {
			return nil
		}
		if d = alloc.HeadOffTaskBranch(c, t.Allocation); d != nil {
			a = t.Allocation
			pol, _, err := tx.Policy()
			warn = err == nil && pol.Enforcement == store.EnforcementWarn
		}
		return nil
	})
	if err != nil || d == nil {
		return nil, false, err
	}
	head := "(detached)"
	if !c.Detached {
		head = "refs/heads/" + c.Branch
	}
	err = r.Store.Write(func(tx *store.Tx) error {
		return tx.LogEvent("head_left_task_branch", a.AllocationID, map[string]any{
			"worktree_path": c.TopLevel, "branch": a.Branch, "head": head})
	})
	return d, warn, err
}
