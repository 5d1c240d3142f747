package view

import (
	"context"
	"slices"
	"sync"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/liveness"
	"github.com/wt-tool/wt/core/proc"
)

// Relations of a process to a governed worktree, in the ps view.
const (
	RelHolder     = "holder"
	RelChild      = "child group"
	RelDescendant = "descendant"
	RelCarrier    = "carries WT_LEASE_ID"
	RelCgroup     = "in its cgroup"
	RelUser       = "user"
)

// PsProcess is one process in the ps view.
type PsProcess struct {
	PID      int    `json:"pid"`
	Command  string `json:"command"`
	Relation string `json:"relation"`
	// Why and Path say how a user uses the worktree (cwd, open file,
	// mapping), for relation "user".
	Why  string `json:"why,omitempty"`
	Path string `json:"path,omitempty"`
}

// PsRow is one governed worktree and the processes in it.
type PsRow struct {
	Path      string      `json:"path"`
	TaskKey   string      `json:"task_key"`
	Owner     string      `json:"owner"`
	Lease     *LeaseView  `json:"lease"`
	Processes []PsProcess `json:"processes"`
}

// PsResult is the ps view.
type PsResult struct {
	Code      string  `json:"code"`
	Rows      []PsRow `json:"worktrees"`
	Processes int     `json:"processes_read"`
}

// Ps answers "who is in my worktree?" for every governed worktree (or the
// one at path): the lease holder and its process tree, the child's group,
// processes that carry the lease id, and every other process whose cwd,
// open files or mappings lie inside the worktree. One reading of /proc
// serves every worktree and the leases' freshness.
func Ps(ctx context.Context, r *alloc.Repo, path string) (PsResult, error) {
	res := PsResult{Code: decision.PsShown, Rows: []PsRow{}}
	getScan := sync.OnceValues(proc.NewScan)
	st, err := status(ctx, r, getScan, nil)
	if err != nil {
		return res, err
	}
	want := ""
	if path != "" {
		if want, err = proc.Canonical(path); err != nil {
			return res, decision.SayWrap(decision.UnregisteredWorktree, err, "path", path)
		}
	}
	s, err := getScan()
	if err != nil {
		return res, decision.SayWrap(decision.Internal, err, "read-proc")
	}
	res.Processes = s.Len()
	for _, row := range st.Rows {
		if !row.Managed || want != "" && row.Path != want {
			continue
		}
		pr := PsRow{Path: row.Path, TaskKey: row.TaskKey, Owner: row.Owner, Lease: row.Lease, Processes: []PsProcess{}}
		seen := map[int]bool{}
		add := func(pid int, rel string, u *proc.Use) {
			if seen[pid] {
				return
			}
			seen[pid] = true
			p := PsProcess{PID: pid, Command: proc.Command(pid), Relation: rel}
			if u != nil {
				p.Why, p.Path = u.Why, u.Path
			}
			pr.Processes = append(pr.Processes, p)
		}
		if l := row.Lease; l != nil {
			if s.IsLive(l.Holder.Identity()) {
				add(l.Holder.PID, RelHolder, nil)
				for _, d := range s.Descendants(l.Holder.PID) {
					add(d, RelDescendant, nil)
				}
			}
			if c := l.Child; c != nil {
				for _, m := range s.GroupMembers(c.PID, c.StartTicks) {
					add(m, RelChild, nil)
				}
				if c.Cgroup != "" {
					members, err := s.CgroupMembers(c.Cgroup)
					if err != nil {
						return res, decision.SayWrap(decision.Internal, err, "read-cgroup", c.Cgroup, row.Path)
					}
					for _, m := range members {
						add(m, RelCgroup, nil)
					}
				}
			}
			for _, pid := range s.CarryingEnv(liveness.LeaseEnv, l.LeaseID) {
				add(pid, RelCarrier, nil)
			}
		}
		uses, err := s.PathsInUse(row.Path)
		if err != nil {
			return res, decision.SayWrap(decision.Internal, err, "read-users", row.Path)
		}
		for _, u := range uses {
			add(u.PID, RelUser, &u)
		}
		slices.SortStableFunc(pr.Processes, func(a, b PsProcess) int { return a.PID - b.PID })
		res.Rows = append(res.Rows, pr)
	}
	if want != "" && len(res.Rows) == 0 {
		return res, decision.Say(decision.UnregisteredWorktree, "not-governed", want).
			WithHint("list the governed worktrees with wt-admin status")
	}
	return res, nil
}
