package hooks

import (
	"context"
	"io"
	"os"
	"strings"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/store"
)

// RefTransaction judges the "prepared" state of a reference transaction
// (SPEC §7), the gate that `git commit --no-verify` cannot skip: git runs it
// for every ref update. The whole transaction is refused if it moves
// refs/heads/B where B is checked out by a governed feature worktree, or the
// HEAD of the governed feature worktree it runs in, and the calling process
// (pid) is not entitled to that worktree. Other refs (remote-tracking refs,
// tags, unowned branches) pass, and so do the other states.
//
// Which worktree owns B is read from the HEAD files of the linked worktrees
// (O(worktrees) small files, never every allocation). A feature allocation
// whose worktree no longer has its branch checked out does not gate it.
// Each worktree is judged once: a commit moves HEAD and its branch.
func RefTransaction(dir, state string, stdin io.Reader, pid int) ([]Verdict, error) {
	if state != "prepared" {
		return nil, nil
	}
	updates, err := ParseRefUpdates(stdin)
	if err != nil {
		return nil, err
	}
	c, err := gitrepo.Locate(dir)
	if err != nil {
		return nil, err
	}
	var owners map[string]string // branch -> worktree key
	judged := map[string]bool{}
	var out []Verdict
	for _, u := range updates {
		key := ""
		switch {
		case u.Ref == "HEAD":
			key = c.Key
		case strings.HasPrefix(u.Ref, "refs/heads/"):
			if owners == nil {
				if owners, err = gitrepo.CheckedOutBranches(c.CommonDir); err != nil {
					return nil, decision.Wrap(decision.Internal, err, "list worktrees")
				}
			}
			key = owners[strings.TrimPrefix(u.Ref, "refs/heads/")]
		}
		if key == "" || judged[key] {
			continue
		}
		judged[key] = true
		var v Verdict
		if key == c.Key {
			v, err = entitled(c, pid)
		} else {
			path, perr := gitrepo.CheckoutOf(c.CommonDir, key)
			if perr != nil {
				continue // an admin dir being created or removed right now
			}
			v, err = Entitled(path, pid)
		}
		if err != nil {
			return nil, err
		}
		if v.Role != store.RoleFeature {
			continue // only feature worktrees are gated here
		}
		if u.Ref != "HEAD" && v.Branch != strings.TrimPrefix(u.Ref, "refs/heads/") {
			continue
		}
		if v.Refusal != nil {
			v.Refusal = decision.New(v.Refusal.Code, "this transaction moves %s: %s", u.Ref, v.Refusal.Message).WithHint("%s", v.Refusal.Hint)
			v.Reason = v.Refusal.Message
			out = append(out, v)
		}
	}
	return out, nil
}

// PrePush judges a push from the worktree that holds dir (SPEC §7): the same
// entitlement as a commit, and every pushed local ref must be the
// allocation's branch (PUSH_REF_NOT_OWNED). Unmanaged worktrees and roles
// with their own gates push freely (unless policy unmanaged is refuse).
func PrePush(dir string, stdin io.Reader, pid int) (Verdict, error) {
	updates, err := ParsePushUpdates(stdin)
	if err != nil {
		return Verdict{}, err
	}
	v, err := Entitled(dir, pid)
	if err != nil || v.Role != store.RoleFeature || v.Refusal != nil {
		return v, err
	}
	own := "refs/heads/" + v.Branch
	for _, u := range updates {
		if u.LocalRef != own {
			v.refuse(decision.New(decision.PushRefNotOwned, "this push updates %s from %s; worktree %s (task %s) may push only %s", u.RemoteRef, u.LocalRef, v.Path, v.TaskKey, own).
				WithHint("push only the task's branch: git push <remote> %s", v.Branch))
			return v, nil
		}
	}
	if v.pol.FleetOn() && len(updates) > 0 {
		if err := fenced(v); err != nil {
			v.refuse(err)
		}
	}
	return v, nil
}

// fenced checks, in fleet mode, that the task's fleet key still exists
// with the create revision recorded in the local lease (SPEC §10): a
// holder whose fleet lease expired or was taken over is refused even while
// its local lease reads live, and so is any push when etcd cannot be asked
// (fail closed). It runs the wt-fleet helper; commits never get here.
func fenced(v Verdict) *decision.Error {
	if v.Lease == nil || v.Lease.Fleet == nil {
		return decision.New(decision.FleetFenced, "fleet mode is on, and the lease of %s holds no fleet lease (it was taken before fleet mode, or by a wt-exec without it)", v.Path).
			WithHint("end this run and start it again under wt-exec, which takes the fleet lease")
	}
	fl := v.Lease.Fleet
	h, err := fleet.NewHelper(fl.Endpoints, os.Stderr)
	if err != nil {
		d, _ := decision.As(err)
		return d
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Check(ctx, fl.Key, fl.Revision); err != nil {
		d, ok := decision.As(err)
		if !ok {
			d = decision.Wrap(decision.FleetUnreachable, err, "check the fleet lease")
		}
		return d
	}
	return nil
}
