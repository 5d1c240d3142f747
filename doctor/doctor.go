// Package doctor checks a governed repository (SPEC §5, `wt-admin doctor`):
// the store is readable, wt's hooks are installed and point at a binary
// that exists, no lease outlives its holder, every binding is registered,
// and no retained worktree waits to be pruned. Each finding carries the
// command that fixes it. It reads only; it changes nothing.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/install"
)

// Finding is one thing that needs a person's action.
type Finding struct {
	// Check names the check: store, hooks, lease, registration, prune.
	Check string `json:"check"`
	// Subject is what the finding is about: a file, a hook, a worktree.
	Subject string `json:"subject"`
	Problem string `json:"problem"`
	// Fix is the command that fixes it; "" when a person must look first
	// (then Hint says where).
	Fix  string `json:"fix,omitempty"`
	Hint string `json:"hint,omitempty"`
}

// Report is what doctor found.
type Report struct {
	Repository string    `json:"repository"`
	HooksDir   string    `json:"hooks_dir"`
	Checked    []string  `json:"checked"`
	Findings   []Finding `json:"findings"`
}

// Run checks the repository that holds dir. A store that cannot be opened
// at all is a finding, not an error: doctor is what a person runs when
// something is wrong.
func Run(ctx context.Context, dir string) (Report, error) {
	rep := Report{Checked: []string{"store", "hooks", "leases", "registrations", "prune"}, Findings: []Finding{}}
	r, err := alloc.Open(ctx, dir)
	switch decision.CodeOf(err) {
	case "":
	case decision.NotInitialized:
		rep.Findings = append(rep.Findings, Finding{Check: "store", Subject: dir, Problem: "the repository is not set up for wt",
			Fix: fmt.Sprintf("wt-admin --repo %s init", alloc.ShellWord(dir))})
		return rep, nil
	default:
		return rep, err
	}
	rep.Repository = r.Git.TopLevel
	var pol store.Policy
	repo := alloc.ShellWord(r.Git.TopLevel)
	rep.checkHooks(ctx, repo, dir)
	err = r.Store.Read(func(tx *store.Tx) error {
		if _, err := tx.Repository(); err != nil {
			rep.store(err)
		}
		if p, ok, err := tx.Policy(); err != nil {
			rep.store(err)
		} else if ok {
			pol = p
		} else {
			rep.Findings = append(rep.Findings, Finding{Check: "store", Subject: "policy.json", Problem: "the policy is missing",
				Fix: fmt.Sprintf("wt-admin --repo %s init", repo)})
		}
		allocs, err := tx.Allocations()
		if err != nil {
			rep.store(err)
		}
		rep.checkLeases(tx, allocs, r.Git.CommonDir, repo)
		rep.checkRegistrations(tx, repo)
		rep.checkPrunable(allocs, repo)
		return nil
	})
	if err == nil && pol.FleetOn() {
		rep.checkFleet(ctx, r, pol)
	}
	return rep, err
}

// checkFleet: in fleet mode, the wt-fleet helper is installed and etcd
// answers (outside the store's lock: the network may be slow).
func (rep *Report) checkFleet(ctx context.Context, r *alloc.Repo, pol store.Policy) {
	rep.Checked = append(rep.Checked, "fleet")
	h, err := fleet.NewHelper(pol.EtcdEndpoints, nil)
	if err != nil {
		rep.Findings = append(rep.Findings, Finding{Check: "fleet", Subject: fleet.HelperName, Problem: err.Error(), Hint: "install wt again (make install), which installs " + fleet.HelperName})
		return
	}
	space, err := fleet.KeySpace(ctx, r.Git, pol)
	if err != nil {
		rep.Findings = append(rep.Findings, Finding{Check: "fleet", Subject: "remote " + pol.FleetRemoteName(),
			Problem: "fleet mode names the task keys after remote " + pol.FleetRemoteName() + ", which this repository lacks",
			Fix:     fmt.Sprintf("git -C %s remote add %s URL", alloc.ShellWord(r.Git.TopLevel), pol.FleetRemoteName())})
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := h.List(cctx, fleet.Prefix(space)); err != nil {
		rep.Findings = append(rep.Findings, Finding{Check: "fleet", Subject: strings.Join(pol.EtcdEndpoints, ","), Problem: err.Error(),
			Hint: "start etcd or fix the endpoints (wt-admin policy --etcd-endpoints URL[,URL]); until then wt-exec refuses to start and pushes are refused"})
	}
}

// store records a record that cannot be read: wt never overwrites what it
// cannot read, so a person looks at it.
func (rep *Report) store(err error) {
	d, _ := decision.As(err)
	msg := err.Error()
	if d != nil {
		msg = d.Message
	}
	rep.Findings = append(rep.Findings, Finding{Check: "store", Subject: "store", Problem: msg,
		Hint: "look at the file named; wt refuses to read it and never overwrites it"})
}

// checkHooks: every hook wt installs is a wt shim whose recorded binary
// exists.
func (rep *Report) checkHooks(ctx context.Context, repo, dir string) {
	fix := fmt.Sprintf("(cd %s && wt-hook install)", repo)
	hooksDir, _, err := install.HooksDir(ctx, dir)
	if err != nil {
		rep.Findings = append(rep.Findings, Finding{Check: "hooks", Subject: "hooks", Problem: err.Error(), Hint: "run git rev-parse --git-path hooks in the repository"})
		return
	}
	rep.HooksDir = hooksDir
	st, err := install.Status(hooksDir)
	if err != nil {
		rep.Findings = append(rep.Findings, Finding{Check: "hooks", Subject: hooksDir, Problem: err.Error(), Fix: fix})
		return
	}
	for _, h := range st.Hooks {
		switch {
		case h.State == "missing":
			rep.Findings = append(rep.Findings, Finding{Check: "hooks", Subject: h.Path, Problem: "the " + h.Hook + " hook is not installed: nothing gates writes", Fix: fix})
		case h.State == "foreign":
			rep.Findings = append(rep.Findings, Finding{Check: "hooks", Subject: h.Path, Problem: "the " + h.Hook + " hook is someone else's: wt does not gate writes through it", Fix: fix})
		case h.ShimVersion != install.Version:
			rep.Findings = append(rep.Findings, Finding{Check: "hooks", Subject: h.Path, Problem: fmt.Sprintf("the %s hook is shim v%d; this wt-hook writes v%d", h.Hook, h.ShimVersion, install.Version), Fix: fix})
		default:
			if fi, err := os.Stat(h.Binary); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
				rep.Findings = append(rep.Findings, Finding{Check: "hooks", Subject: h.Path,
					Problem: fmt.Sprintf("the %s hook runs %s, which is not an executable file: commits there are refused (HOOK_BINARY_MISSING)", h.Hook, h.Binary), Fix: fix})
			}
		}
	}
}

// checkLeases: a lease whose holder is gone, or whose worktree is gone.
func (rep *Report) checkLeases(tx *store.Tx, allocs []store.Allocation, commonDir, repo string) {
	var ev *proc.Scan
	now := time.Now()
	for _, a := range allocs {
		l, ok, err := tx.Lease(a.AllocationID)
		if err != nil {
			rep.store(err)
			continue
		}
		if !ok {
			continue
		}
		if ev == nil {
			if ev, err = proc.NewScan(); err != nil {
				rep.Findings = append(rep.Findings, Finding{Check: "leases", Subject: "/proc", Problem: err.Error()})
				return
			}
		}
		p := lease.Assess(ev, l, now, lease.Caller{})
		path := alloc.ShellWord(l.WorktreePath)
		f := Finding{Check: "leases", Subject: l.WorktreePath}
		at, atErr := gitrepo.CheckoutOf(commonDir, a.WorktreeKey)
		switch {
		case atErr == nil && at != l.WorktreePath:
			// Moved (git worktree move): every lease command refuses the
			// mismatch, so the fix is to move it back.
			f.Problem = fmt.Sprintf("the worktree of lease %s (client %s) was moved to %s; the lease and the allocation record %s", l.LeaseID, l.Holder.ClientID, at, l.WorktreePath)
			f.Fix = fmt.Sprintf("git -C %s worktree move %s %s", repo, alloc.ShellWord(at), path)
		case p.HolderLive:
			continue // a live holder's lease, expired or not, is its own business
		case !p.NoLiveMutationRisk:
			f.Problem = fmt.Sprintf("the holder of lease %s (client %s, pid %d) exited, but %s", l.LeaseID, l.Holder.ClientID, l.Holder.PID, p.Risk)
			f.Hint = fmt.Sprintf("see who is there with wt-admin --repo %s ps %s; the lease can be ended when they are gone", repo, path)
		case p.MissingWorktree:
			f.Problem = fmt.Sprintf("lease %s (client %s, pid %d) holds a worktree that is gone", l.LeaseID, l.Holder.ClientID, l.Holder.PID)
			f.Fix = fmt.Sprintf("wt-admin --repo %s lease abandon %s --reason 'worktree removed'", repo, path)
		case p.Expired:
			f.Problem = fmt.Sprintf("lease %s (client %s, pid %d) expired and its holder is dead", l.LeaseID, l.Holder.ClientID, l.Holder.PID)
			f.Fix = fmt.Sprintf("wt-admin --repo %s lease expire", repo)
		default:
			f.Problem = fmt.Sprintf("the holder of lease %s (client %s, pid %d) is dead and nothing of it runs", l.LeaseID, l.Holder.ClientID, l.Holder.PID)
			f.Fix = fmt.Sprintf("wt-admin --repo %s lease release %s --lease-id %s", repo, path, l.LeaseID)
		}
		rep.Findings = append(rep.Findings, f)
	}
}

// checkRegistrations: a binding with no registration document (written by
// versions before registrations existed) does not govern its worktree until
// backfilled.
func (rep *Report) checkRegistrations(tx *store.Tx, repo string) {
	keys, err := tx.Bindings()
	if err != nil {
		rep.store(err)
		return
	}
	for _, key := range keys {
		_, _, ok, err := tx.Registration(key)
		if err != nil {
			rep.store(err)
			continue
		}
		if !ok {
			rep.Findings = append(rep.Findings, Finding{Check: "registrations", Subject: "bindings/" + key + ".json",
				Problem: "binding " + key + " has no registration: its worktree reads as unmanaged",
				Fix:     fmt.Sprintf("wt-admin --repo %s backfill", repo)})
		}
	}
}

// checkPrunable: a retained audit worktree whose checkout is gone keeps a
// registration that prune can release (SPEC §5.3; prune's dry run checks
// every other precondition).
func (rep *Report) checkPrunable(allocs []store.Allocation, repo string) {
	for _, a := range allocs {
		if a.Role != store.RoleAudit || a.Lifecycle != store.Retained {
			continue
		}
		if _, err := os.Lstat(a.WorktreePath); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		rep.Findings = append(rep.Findings, Finding{Check: "prune", Subject: a.WorktreePath,
			Problem: fmt.Sprintf("retained audit worktree of task %s is gone; its registration can be pruned", a.TaskKey),
			Fix:     fmt.Sprintf("wt-admin --repo %s prune %s --owner %s", repo, alloc.ShellWord(a.WorktreePath), alloc.ShellWord(a.Owner))})
	}
}
