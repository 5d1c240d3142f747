package alloc

import (
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/ledger"
	"github.com/wt-tool/wt/core/store"
)

// AdoptChecks applies allocate's rules to a task that would take over an
// existing worktree on branch (wt-admin adopt): the task key is free
// (TASK_KEY_IN_USE), within the budget, not close to a live task's unless
// newTask (TASK_KEY_SIMILAR), and the branch is neither the publication
// branch nor one another task records or plans (BRANCH_EXISTS).
func (r *Repo) AdoptChecks(tx *store.Tx, task, branch string, newTask bool) error {
	pol, ok, err := tx.Policy()
	if err != nil {
		return err
	}
	if !ok {
		return decision.Say(decision.InvalidMetadata, "policy-json").WithHint("run wt-admin init")
	}
	if err := r.checkTaskAndBudget(tx, task, store.RoleFeature, "", pol); err != nil {
		return err
	}
	if !newTask {
		if err := checkSimilarKey(tx, task); err != nil {
			return err
		}
	}
	if branch == pol.PublicationBranch {
		return decision.Say(decision.InvalidBranch, "worktree-publication", branch).
			WithHint("check out a branch for the task in it first (git switch -c BRANCH), then adopt it")
	}
	return branchPlanned(tx, r, branch)
}

// WriteAdopted writes the records of an adopted worktree, as allocate's
// finish writes them for one git added: the branch index, the allocation
// (role feature, ACTIVE, its branch as it is, its tip now as its base),
// the binding, the registration and its marker, the event
// (allocation_adopted, with detail), and the branch ledger's baseline.
func (r *Repo) WriteAdopted(tx *store.Tx, task, owner, path, key, branch, tip string, detail map[string]any) (store.Allocation, error) {
	now := store.Now()
	b := branch
	a := store.Allocation{AllocationID: ids.New(), TaskKey: task, Owner: owner, Role: store.RoleFeature, Lifecycle: store.Active,
		WorktreePath: path, WorktreeKey: key, Branch: &b, BaseCommit: tip, ExternalBindings: []string{}, CreatedAt: now, UpdatedAt: now}
	if err := tx.PutBranch(a); err != nil {
		return a, err
	}
	if err := tx.PutAllocation(&a); err != nil {
		return a, err
	}
	if err := tx.PutBinding(&store.Binding{WorktreeKey: key, AllocationID: a.AllocationID}); err != nil {
		return a, err
	}
	reg := store.Registration{RegistrationID: ids.New(), WorktreeKey: key, WorktreePath: path, AllocationID: a.AllocationID, CreatedAt: now}
	if err := tx.PutRegistration(&reg); err != nil {
		return a, err
	}
	d := map[string]any{"task_key": task, "owner": owner, "worktree_path": path, "worktree_key": key, "branch": branch, "base_commit": tip,
		"registration_id": reg.RegistrationID}
	for k, v := range detail {
		d[k] = v
	}
	if err := event(tx, "allocation_adopted", &a, d); err != nil {
		return a, err
	}
	// The branch's history before it was adopted is the baseline of its
	// ledger, not a finding.
	ledger.Begin(r.Git.CommonDir, r.Store.Root(), a.AllocationID, "refs/heads/"+branch)
	return a, nil
}
