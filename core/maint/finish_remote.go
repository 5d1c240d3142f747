package maint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/forge"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/core/strictjson"
)

// A finished task's branch may be on the remotes its writer pushed it to.
// Once finish has released the task, it deletes the branch there too,
// where the remote holds it at a commit the finish proved kept (the task
// branch's tip, or one the publication branch or an archive ref of the
// task contains): by compare-and-delete (--force-with-lease) and, where
// the remote checks fencing tokens (policy fleet-server-fence on), with a
// token of a grant of the finish's own, as a writer's push carries one:
// in fleet mode the task's key in etcd, taken for the deletion (refused,
// FLEET_LEASE_HELD, while a writer holds the task anywhere) and released
// after it; in local mode a token of a grant made now, naming the finish's
// process as its holder. A remote's fence takes that deletion as it takes
// a writer's push, and fences every older grant of the task from then on.
// Nothing of it runs under the store's lock; a remote that cannot be
// reached keeps its branch, and finish says so: run again, finish (which
// answers GC_ALREADY_APPLIED) tries the remotes once more.

// Remote deletion outcomes.
const (
	RemoteDeleted  = "deleted"
	RemoteAbsent   = "absent"
	RemoteKept     = "kept"
	RemoteUnasked  = "unreachable"
	remoteDeadline = 30 * time.Second
)

// RemoteDeletion is what finish did to the task branch on one remote.
type RemoteDeletion struct {
	Remote  string `json:"remote"`
	Branch  string `json:"branch"`
	Outcome string `json:"outcome"`
	// OID is where the remote held the branch ("" when it did not).
	OID     string `json:"oid,omitempty"`
	Message string `json:"message"`
}

// FinishedPlan is the plan of the finish that finished target or task
// (its receipt's), ok false when there is none.
func FinishedPlan(r *alloc.Repo, target, task string) (FinishPlan, bool, error) {
	var plan FinishPlan
	var ok bool
	err := r.Store.Read(func(tx *store.Tx) error {
		if target != "" {
			if t, err := proc.Canonical(target); err == nil {
				target = t
			}
		}
		rc, found, err := finishReceipt(tx, target, task)
		if err != nil || !found {
			return err
		}
		var p finishReceiptPayload
		if err := strictjson.Decode(rc.Payload, &p); err != nil {
			return decision.SayWrap(decision.InvalidMetadata, err, "receipt", rc.TransactionID)
		}
		plan, ok = p.Plan, true
		return nil
	})
	return plan, ok, err
}

// DeleteRemoteBranches deletes the finished task's branch (plan's) on each
// remote of the repository that holds it at a commit the finish proved
// kept (see above). stderr gets the wt-fleet helper's complaints.
func DeleteRemoteBranches(ctx context.Context, r *alloc.Repo, plan FinishPlan, stderr io.Writer) []RemoteDeletion {
	if plan.Branch == "" {
		return nil
	}
	out, err := r.Git.Git(ctx, true, "remote")
	if err != nil {
		return []RemoteDeletion{{Branch: plan.Branch, Outcome: RemoteUnasked, Message: "the remotes cannot be listed: " + err.Error()}}
	}
	pol, perr := policy.Read(r.Store)
	var res []RemoteDeletion
	for _, remote := range strings.Fields(string(out)) {
		d := RemoteDeletion{Remote: remote, Branch: plan.Branch}
		if perr != nil {
			d.Outcome, d.Message = RemoteUnasked, "the policy cannot be read: "+perr.Error()
		} else {
			deleteOn(ctx, r, pol, plan, &d, stderr)
		}
		res = append(res, d)
	}
	return res
}

// deleteOn deletes plan's branch on remote d.Remote, filling d.
func deleteOn(ctx context.Context, r *alloc.Repo, pol store.Policy, plan FinishPlan, d *RemoteDeletion, stderr io.Writer) {
	ctx, cancel := context.WithTimeout(ctx, remoteDeadline)
	defer cancel()
	ref := preservingPrefix + plan.Branch
	top := shell.Word(r.Git.TopLevel)
	out, err := r.Git.GitUnhooked(ctx, "ls-remote", "--exit-code", "--end-of-options", d.Remote, ref)
	var ge *gitrepo.Error
	switch {
	case errors.As(err, &ge) && ge.ExitCode == 2:
		d.Outcome, d.Message = RemoteAbsent, fmt.Sprintf("%s has no branch %s", d.Remote, plan.Branch)
		return
	case err != nil:
		d.Outcome, d.Message = RemoteUnasked, fmt.Sprintf("%s cannot be asked for %s (%v); run finish again to try once more", d.Remote, plan.Branch, err)
		return
	}
	oid, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\t")
	d.OID = oid
	if !keptByFinish(ctx, r, plan, oid) {
		d.Outcome = RemoteKept
		d.Message = fmt.Sprintf("%s holds %s at %s, a commit this finish did not prove kept (not the task's tip, not in %s nor an archive of it): left there; see it: git -C %s fetch %s %s",
			d.Remote, plan.Branch, gitrepo.Short(oid), strings.TrimPrefix(plan.PublicationRef, "refs/heads/"), top, shell.Word(d.Remote), ref)
		return
	}
	args := []string{"push", "--porcelain", "--force-with-lease=" + ref + ":" + oid}
	if pol.FleetServerFence {
		opts, release, err := finishToken(ctx, r, pol, plan, d.Remote, stderr)
		if err != nil {
			d.Outcome = RemoteKept
			d.Message = fmt.Sprintf("no fencing token for the deletion on %s: %v; run finish again once it can be had", d.Remote, err)
			return
		}
		defer release()
		for _, o := range opts {
			args = append(args, "-o", o)
		}
	}
	args = append(args, "--end-of-options", d.Remote, ":"+ref)
	if out, err := r.Git.GitUnhooked(ctx, args...); err != nil {
		why := err.Error()
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "!") {
				why = strings.TrimSpace(line[strings.LastIndexByte(line, '\t')+1:])
			}
		}
		d.Outcome, d.Message = RemoteKept, fmt.Sprintf("%s refused the deletion of %s: %s", d.Remote, plan.Branch, why)
		return
	}
	d.Outcome, d.Message = RemoteDeleted, fmt.Sprintf("deleted %s on %s (it was at %s)", plan.Branch, d.Remote, gitrepo.Short(oid))
}

// keptByFinish reports whether oid is a commit plan proved kept: the task
// branch's tip, an archive ref's, or one the publication tip (or an
// archive) contains. A commit this repository lacks is not.
func keptByFinish(ctx context.Context, r *alloc.Repo, plan FinishPlan, oid string) bool {
	if oid == plan.BranchOID {
		return true
	}
	keep := []string{plan.PublicationOID}
	for _, a := range plan.Archive {
		if a.OID == oid {
			return true
		}
		keep = append(keep, a.OID)
	}
	for _, k := range keep {
		if in, err := r.Git.IsAncestor(ctx, oid, k); err == nil && in {
			return true
		}
	}
	return false
}

// finishToken is the push options that carry a fencing token of a grant
// of the finish's own for plan's task (see above), and what ends that
// grant once the push is done.
func finishToken(ctx context.Context, r *alloc.Repo, pol store.Policy, plan FinishPlan, remote string, stderr io.Writer) ([]string, func(), error) {
	secret, err := fleet.NewFenceSecret()
	if err != nil {
		return nil, nil, err
	}
	self, err := proc.Self()
	if err != nil {
		return nil, nil, err
	}
	if !pol.FleetOn() {
		token := fleet.FenceToken(plan.TaskKey, time.Now().UnixNano(), secret)
		return []string{token, fleet.HolderOption + "=" + fleet.HolderValue(self)}, func() {}, nil
	}
	if remote != pol.FleetRemoteName() {
		return nil, nil, fmt.Errorf("fleet mode's key space is remote %s's, not %s's", pol.FleetRemoteName(), remote)
	}
	ttl, err := pol.FleetTTLDuration()
	if err != nil {
		return nil, nil, err
	}
	space, err := fleet.KeySpace(ctx, r.Git, pol)
	if err != nil {
		return nil, nil, err
	}
	helper, err := fleet.NewHelper(pol.EtcdEndpoints, pol.EtcdAuth(), stderr)
	if err != nil {
		return nil, nil, err
	}
	holder := fleet.HolderOf(proc.Holder{ClientID: "wt-finish", PID: self.PID, BootID: self.BootID, StartTicks: self.StartTicks}, "finish-"+plan.AllocationID, plan.TaskKey)
	holder.FenceHash = fleet.FenceHash(secret)
	sess, err := helper.Acquire(ctx, fleet.Key(space, plan.TaskKey), holder, ttl)
	if err != nil {
		helper.Close()
		return nil, nil, err
	}
	token := fleet.FenceToken(plan.TaskKey, sess.Revision(), secret)
	release := func() {
		_ = sess.Release(context.WithoutCancel(ctx)) // Best effort: the key expires with its TTL.
	}
	return []string{token, fleet.SpaceOption + "=" + space}, release, nil
}

// refuseOpenPR refuses (OPEN_PULL_REQUEST, or FORGE_UNREACHABLE) when the
// branch of allocation id has an open pull request on the forge the
// policy names; what says what would have been done. Outside the store's
// lock: it asks the forge.
func refuseOpenPR(ctx context.Context, r *alloc.Repo, id, what string) error {
	var branch string
	err := r.Store.Read(func(tx *store.Tx) error {
		a, err := tx.Allocation(id)
		if err == nil && a.Branch != nil {
			branch = *a.Branch
		}
		return err
	})
	if err != nil {
		return err
	}
	return RefuseOpenPRFor(ctx, r, branch, what)
}

// RefuseOpenPRFor refuses (OPEN_PULL_REQUEST, or FORGE_UNREACHABLE) when
// branch has an open pull request on the forge the policy names.
func RefuseOpenPRFor(ctx context.Context, r *alloc.Repo, branch, what string) error {
	pol, err := policy.Read(r.Store)
	if err != nil {
		return err
	}
	return forge.Refuse(ctx, r.Git, pol, branch, what)
}

// RefuseOpenPRAt is RefuseOpenPRFor for the branch of the live allocation
// of the worktree at path (none: nothing to refuse).
func RefuseOpenPRAt(ctx context.Context, r *alloc.Repo, path, what string) error {
	target, err := proc.Canonical(path)
	if err != nil {
		return nil // the command itself says what is wrong with the path
	}
	var branch string
	err = r.Store.Read(func(tx *store.Tx) error {
		all, err := tx.Allocations()
		for _, a := range all {
			if a.Lifecycle != store.Released && a.Branch != nil && gitrepo.SameFile(a.WorktreePath, target) {
				branch = *a.Branch
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	return RefuseOpenPRFor(ctx, r, branch, what)
}
