// Package doctor checks a governed repository (`wt-admin doctor`): the
// store is readable, wt's hooks are installed in the hooks dir of every
// governed worktree and point at a binary that exists, no lease outlives
// its holder, every binding is registered, no retained worktree waits to be
// pruned, and every gate holds (no feature worktree off its task branch, no
// task branch checked out elsewhere, no live allocation without its
// worktree). Each finding carries the
// command that fixes it. It reads only; it changes nothing.
package doctor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/land"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/ledger"
	"github.com/wt-tool/wt/core/maint"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/core/view"
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
	// Notes are facts a person should know that need no action: worktrees
	// of roles that wt leaves ungated by design.
	Notes []Finding `json:"notes"`
}

// Run checks the repository that holds dir. A store that cannot be opened
// at all is a finding, not an error: doctor is what a person runs when
// something is wrong.
func Run(ctx context.Context, dir string) (Report, error) {
	rep := Report{Checked: []string{"store", "admin", "hooks", "leases", "registrations", "prune", "journals", "gates", "objects", "audit", "publication"}, Findings: []Finding{}, Notes: []Finding{}}
	r, err := alloc.Open(ctx, dir)
	switch decision.CodeOf(err) {
	case "":
	case decision.NotInitialized:
		rep.Findings = append(rep.Findings, Finding{Check: "store", Subject: dir, Problem: "the repository is not set up for wt",
			Fix: fmt.Sprintf("wt-admin --repo %s init", shell.Word(dir))})
		return rep, nil
	default:
		return rep, err
	}
	rep.Repository = r.Git.TopLevel
	var pol store.Policy
	var tips, bases []string
	live := map[string]bool{} // the task keys with a live allocation
	repo := shell.Word(r.Git.TopLevel)
	// The admin dirs first, without git: a FIFO as a worktree's HEAD would
	// hang the git worktree list below, and its fix must not.
	adminFix := rep.checkAdminDirs(r, repo)
	inv, invErr := r.Git.Inventory(ctx)
	if invErr != nil {
		f := Finding{Check: "gates", Subject: "git worktree list", Problem: invErr.Error(), Hint: fmt.Sprintf("run git -C %s worktree list", repo)}
		if d, ok := decision.As(invErr); ok && d.Code == decision.GitMetadataUntrusted {
			f.Hint = d.Hint // the worktree git stopped at, and its repair (Inventory's diagnosis)
		}
		if adminFix != "" {
			f.Hint, f.Fix = "", adminFix
		}
		rep.Findings = append(rep.Findings, f)
	}
	rep.checkHooks(ctx, r)
	rep.checkRefLocks(r)
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
		// One reading of the processes for the leases and the views.
		scan := sync.OnceValues(proc.NewScan)
		rep.checkLeases(tx, allocs, r.Git.CommonDir, repo, scan)
		rep.checkViews(tx, allocs, r.Store.Root(), scan)
		rep.checkRegistrations(tx, repo)
		rep.checkPrunable(allocs, repo)
		rep.checkJournals(tx, repo, r.Git.TopLevel)
		rep.checkPublication(tx, repo)
		if invErr == nil {
			rep.checkGates(ctx, tx, r, pol, inv, allocs, repo)
		}
		tips = governedTips(pol, allocs)
		for _, a := range allocs {
			if a.Lifecycle != store.Released {
				live[a.TaskKey] = true
			}
		}
		bases = governedBases(r, pol, allocs)
		return nil
	})
	if err == nil {
		// Outside the store's lock: the walk reads every reachable object.
		rep.checkObjects(ctx, r, tips, bases, repo)
		rep.checkLeftovers(ctx, r, pol, live, repo)
		rep.checkAudit(r, repo)
	}
	if err == nil && pol.FleetOn() {
		rep.checkFleet(ctx, r, pol)
	}
	return rep, err
}

// checkAudit: moves of live task branches that no gate approved, since
// wt-admin audit last showed them (maint.Audit); the fix is to look.
func (rep *Report) checkAudit(r *alloc.Repo, repo string) {
	res, err := maint.Audit(r, time.Time{}, maint.LastAudit(r.Git.CommonDir))
	if err != nil {
		rep.Findings = append(rep.Findings, Finding{Check: "audit", Subject: "task branches", Problem: err.Error(), Hint: fmt.Sprintf("run wt-admin --repo %s audit", repo)})
		return
	}
	for _, t := range res.Tasks {
		if t.Missing != nil {
			rep.Findings = append(rep.Findings, Finding{Check: "audit", Subject: t.TaskKey,
				Problem: fmt.Sprintf("ALARM: %s: task %s's %s", t.Missing.Code, t.TaskKey, t.Missing.Message),
				Fix:     t.Missing.Restore})
		}
		if s := t.Symref; s != nil {
			rep.Findings = append(rep.Findings, Finding{Check: "audit", Subject: t.Branch,
				Problem: fmt.Sprintf("ALARM: %s: %s", s.Code, s.Message),
				Fix:     strings.Join(s.Repair, " && ")})
		}
		if t.Unseen != "" {
			rep.Findings = append(rep.Findings, Finding{Check: "audit", Subject: cmp.Or(t.TaskKey, t.Branch),
				Problem: "branch " + t.Branch + " is not audited: what cannot be read: " + t.Unseen,
				Hint:    fmt.Sprintf("run wt-admin --repo %s audit", repo)})
		}
	}
	if res.Ungated == 0 {
		return
	}
	var tasks []string
	for _, t := range res.Tasks {
		if len(t.Ungated) > 0 {
			tasks = append(tasks, cmp.Or(t.TaskKey, t.Branch))
		}
	}
	rep.Findings = append(rep.Findings, Finding{Check: "audit", Subject: strings.Join(tasks, ", "),
		Problem: fmt.Sprintf("%s: %d move(s) of governed branches that no gate saw (hooks off, or a ref written by hand) since the last audit", decision.UngatedRefMove, res.Ungated),
		Fix:     fmt.Sprintf("wt-admin --repo %s audit", repo)})
}

// governedTips are the refs whose history wt governs: the publication
// branch and the branch of every allocation not released.
func governedTips(pol store.Policy, allocs []store.Allocation) []string {
	var tips []string
	if pol.PublicationBranch != "" {
		tips = append(tips, "refs/heads/"+pol.PublicationBranch)
	}
	for _, a := range allocs {
		if a.Branch != nil && a.Lifecycle != store.Released {
			tips = append(tips, "refs/heads/"+*a.Branch)
		}
	}
	return tips
}

// governedBases are where the history wt governs begins: each live
// allocation's base commit, and the publication branch's tip when wt began
// to watch it (its ledger's baseline; none for a store older than
// ledgers: then its whole history is walked).
func governedBases(r *alloc.Repo, pol store.Policy, allocs []store.Allocation) []string {
	var bases []string
	seen := map[string]bool{}
	add := func(oid string) {
		if gitrepo.FullObjectName(oid) && !ledger.IsZeroOID(oid) && !seen[oid] {
			seen[oid] = true
			bases = append(bases, oid)
		}
	}
	if pol.PublicationBranch != "" {
		led, err := store.ReadLedger(r.Store.Root(), store.PublicationLedger, "refs/heads/"+pol.PublicationBranch)
		if bl, ok := led.Baseline(); err == nil && ok {
			add(bl.New)
		}
	}
	for _, a := range allocs {
		if a.Branch != nil && a.Lifecycle != store.Released {
			add(a.BaseCommit)
		}
	}
	return bases
}

// checkObjects: every object the governed branches added over their
// bases (governedBases) is in the object store: what wt governs, walked
// at a cost that grows with it, not with the repository's history (a
// confined agent's writes land in its private view, and a store's objects
// are lost by hand or by a disk, which git fsck finds). What it does not
// walk is said in a note.
func (rep *Report) checkObjects(ctx context.Context, r *alloc.Repo, tips, bases []string, repo string) {
	refs, err := r.Git.Refs(ctx)
	if err != nil {
		rep.Findings = append(rep.Findings, Finding{Check: "objects", Subject: "git for-each-ref", Problem: err.Error(), Hint: "run git for-each-ref in the repository"})
		return
	}
	present := tips[:0:0]
	for _, t := range tips {
		if _, ok := refs[t]; ok {
			present = append(present, t)
		}
	}
	missing, walked, err := r.Git.MissingSince(ctx, present, bases)
	if err != nil {
		rep.Findings = append(rep.Findings, Finding{Check: "objects", Subject: "git rev-list", Problem: err.Error(),
			Hint: fmt.Sprintf("run git -C %s fsck --connectivity-only and read what it says", repo)})
		return
	}
	rep.Notes = append(rep.Notes, Finding{Check: "objects", Subject: fmt.Sprintf("%d governed branch(es)", len(present)),
		Problem: fmt.Sprintf("walked the %d object(s) the governed branches added over their bases (%d base commit(s): each task's base at allocate, the publication branch's tip at init); the history before them is not walked here: git -C %s fsck --connectivity-only checks it", walked, len(bases), repo)})
	if len(missing) == 0 {
		return
	}
	shown := missing
	if len(shown) > 5 {
		shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(missing)-5))
	}
	rep.Findings = append(rep.Findings, Finding{Check: "objects", Subject: strings.Join(present, " "),
		Problem: fmt.Sprintf("%d object(s) reachable from the governed refs are missing: %s", len(missing), strings.Join(shown, ", ")),
		Hint:    fmt.Sprintf("fetch them again from a remote that has them (git -C %s fetch --refetch origin), or restore them from a backup; git -C %s fsck --connectivity-only lists them", repo, repo)})
}

// checkFleet: in fleet mode, the wt-fleet helper is installed and etcd
// answers (outside the store's lock: the network may be slow).
func (rep *Report) checkFleet(ctx context.Context, r *alloc.Repo, pol store.Policy) {
	rep.Checked = append(rep.Checked, "fleet")
	h, err := fleet.NewHelper(pol.EtcdEndpoints, pol.EtcdAuth(), nil)
	if err != nil {
		rep.Findings = append(rep.Findings, Finding{Check: "fleet", Subject: fleet.HelperName, Problem: err.Error(), Hint: "install wt again (make install), which installs " + fleet.HelperName})
		return
	}
	space, err := fleet.KeySpace(ctx, r.Git, pol)
	if err != nil {
		rep.Findings = append(rep.Findings, Finding{Check: "fleet", Subject: "remote " + pol.FleetRemoteName(),
			Problem: "fleet mode names the task keys after remote " + pol.FleetRemoteName() + ", which this repository lacks",
			Fix:     fmt.Sprintf("git -C %s remote add %s URL", shell.Word(r.Git.TopLevel), pol.FleetRemoteName())})
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

// checkHooks: wt's gate is where the git on PATH runs it (hooks defined
// in configuration for git 2.54 and later, shims in the hooks dir for
// older gits), each shim current with its binary in place, and a commit in
// each governed worktree meets it (install.CheckGate asks git there).
func (rep *Report) checkHooks(ctx context.Context, r *alloc.Repo) {
	dir, problems, err := install.CheckGate(ctx, r.Git)
	rep.HooksDir = dir
	if err != nil {
		rep.Findings = append(rep.Findings, Finding{Check: "hooks", Subject: r.Git.TopLevel, Problem: err.Error(), Fix: install.GateFix(r.Git.TopLevel)})
		return
	}
	for _, p := range problems {
		rep.Findings = append(rep.Findings, Finding{Check: "hooks", Subject: p.Path, Problem: p.Message, Fix: p.Fix})
	}
}

// checkRefLocks: the locks git takes on the repository's refs as a whole
// (each reftable stack's tables.list.lock, the files backend's
// packed-refs.lock) and on its config (config.lock, which wt-hook install
// needs) are held by a live process. git takes one only by
// creating its file, and keeps the file open until it renames it into
// place; one that no process holds open was left by a git that died, and
// blocks every update behind it ("cannot lock references") until it is
// removed. Removing it cannot take it from anyone: while the file is
// there, no git can take it. git closes the file an instant before it
// renames it, so a lock younger than refLockSettle is left alone: doctor
// never names one that git is about to put in place.
func (rep *Report) checkRefLocks(r *alloc.Repo) {
	var locks []string
	for _, p := range refLocks(r.Git.CommonDir) {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) >= refLockSettle {
			locks = append(locks, p)
		}
	}
	if len(locks) == 0 {
		return
	}
	scan, err := proc.NewScan()
	if err != nil {
		rep.Findings = append(rep.Findings, Finding{Check: "refs", Subject: locks[0], Problem: "who holds git's ref locks cannot be read: " + err.Error(), Hint: "run wt-admin doctor again"})
		return
	}
	for _, p := range locks {
		users, err := scan.PathsInUse(p)
		if err != nil || len(users) > 0 {
			continue // held, or not known to be free: never evidence
		}
		rep.Findings = append(rep.Findings, Finding{Check: "refs", Subject: p,
			Problem: fmt.Sprintf("%s: %s is held by no process (a git that died holding it): every update behind it fails until it is gone", decision.RefLockStale, p),
			Fix:     "rm -f -- " + shell.Word(p)})
	}
}

// checkLeftovers: wt's refs of a task that has ended (finished before
// finish took them along, or released otherwise): its landing attempts,
// which only the lander made, go; a kept ungated tip goes once the
// publication branch holds it, else it is a note (someone's work that
// nothing else holds: look before deleting it).
func (rep *Report) checkLeftovers(ctx context.Context, r *alloc.Repo, pol store.Policy, live map[string]bool, repo string) {
	refs, err := r.Git.Refs(ctx)
	if err != nil {
		rep.Findings = append(rep.Findings, Finding{Check: "refs", Subject: "refs/wt/", Problem: "wt's refs cannot be listed: " + err.Error(), Hint: fmt.Sprintf("run git -C %s for-each-ref refs/wt/", repo)})
		return
	}
	pub := refs["refs/heads/"+pol.PublicationBranch]
	for _, ref := range slices.Sorted(maps.Keys(refs)) {
		oid := refs[ref]
		for _, prefix := range []string{maint.LandAttemptPrefix, maint.UngatedPrefix} {
			rest, ok := strings.CutPrefix(ref, prefix)
			i := strings.LastIndexByte(rest, '/')
			if !ok || i <= 0 {
				continue
			}
			if _, err := strconv.Atoi(rest[i+1:]); err != nil || live[rest[:i]] {
				continue
			}
			task := rest[:i]
			fix := fmt.Sprintf("git -C %s update-ref -d %s %s", repo, shell.Word(ref), oid)
			if prefix == maint.UngatedPrefix {
				if in, err := r.Git.IsAncestor(ctx, oid, pub); pub == "" || err != nil || !in {
					rep.Notes = append(rep.Notes, Finding{Check: "refs", Subject: ref,
						Problem: fmt.Sprintf("task %s has ended, and %s keeps an ungated tip (%s) that %s does not hold: look at it (git -C %s log %s), then delete it: %s", task, ref, gitrepo.Short(oid), pol.PublicationBranch, repo, oid, fix)})
					continue
				}
			}
			rep.Findings = append(rep.Findings, Finding{Check: "refs", Subject: ref,
				Problem: fmt.Sprintf("task %s has ended, and %s is left of it (%s): nothing needs it", task, ref, map[bool]string{true: "a landing attempt", false: "an ungated tip the publication branch holds"}[prefix == maint.LandAttemptPrefix]),
				Fix:     fix})
		}
	}
}

// checkAdminDirs: what a governed worktree's admin dir holds that git, or
// a program after it, would trip on or run (alloc.CheckAdminDirs: a FIFO
// or symlink as HEAD, a planted core.hooksPath, an executable); its fix
// puts it aside. It returns the first fix ("" for none).
func (rep *Report) checkAdminDirs(r *alloc.Repo, repo string) string {
	checks, err := r.CheckAdminDirs("")
	if err != nil {
		rep.store(err)
		return ""
	}
	first := ""
	// The hooks wt's hooks run from each worktree's own copy of a hook
	// manager's generated dir (husky's .husky/_): a run may have changed
	// them; the next wt-exec there puts them back.
	var allocs []store.Allocation
	_ = r.Store.Read(func(tx *store.Tx) error { // Best effort: the store's own check says what it cannot read.
		var err error
		allocs, err = tx.Allocations()
		return err
	})
	for _, a := range allocs {
		if a.Lifecycle == store.Released || a.WorktreeKey == "" || a.WorktreeKey == gitrepo.MainKey {
			continue
		}
		c := gitrepo.Checkout{CommonDir: r.Git.CommonDir, Key: a.WorktreeKey, TopLevel: a.WorktreePath}
		if _, _, rel, differ, err := install.ManagerDirDrift(c); err == nil && len(differ) > 0 {
			rep.Findings = append(rep.Findings, Finding{Check: "admin", Subject: a.WorktreePath,
				Problem: fmt.Sprintf("the hooks %s that wt's hooks run in task %s's worktree differ from the main checkout's (%s): the next commit there would run them", rel, a.TaskKey, strings.Join(differ, ", ")),
				Fix:     fmt.Sprintf("wt-exec -C %s --no-confine -- true", shell.Word(a.WorktreePath))})
		}
	}
	for _, c := range checks {
		var what []string
		for _, p := range c.Problems {
			what = append(what, p.Rel+" "+p.Why)
		}
		fix := fmt.Sprintf("wt-admin --repo %s quarantine %s", repo, shell.Word(c.Allocation.WorktreePath))
		rep.Findings = append(rep.Findings, Finding{Check: "admin", Subject: c.Allocation.WorktreePath,
			Problem: fmt.Sprintf("%s: task %s's admin dir holds what git, or a program after it, would trip on or run: %s", decision.AdminDirUnsafe, c.Allocation.TaskKey, strings.Join(what, "; ")),
			Fix:     fix})
		if first == "" {
			first = fix
		}
	}
	return first
}

// refLockSettle is how old a lock file must be before doctor asks who
// holds it (checkRefLocks).
const refLockSettle = 2 * time.Second

// refLocks are the paths of the locks checkRefLocks looks for in the
// repository with common dir common: its table stack's, its packed refs',
// its config's, its HEAD's and loose refs', and each linked worktree's own
// table stack's and HEAD's.
func refLocks(common string) []string {
	// The canonical checkout's index's (wt-admin land brings a clean
	// checkout of the publication branch along with git read-tree -u -m:
	// one killed meanwhile leaves it).
	out := []string{filepath.Join(common, "reftable", "tables.list.lock"), filepath.Join(common, "packed-refs.lock"),
		filepath.Join(common, "config.lock"), filepath.Join(common, "HEAD.lock"), filepath.Join(common, "index.lock")}
	ents, _ := os.ReadDir(filepath.Join(common, "worktrees")) // none: no linked worktree to look in
	for _, e := range ents {
		out = append(out, filepath.Join(gitrepo.AdminDir(common, e.Name()), "reftable", "tables.list.lock"),
			filepath.Join(gitrepo.AdminDir(common, e.Name()), "HEAD.lock"))
	}
	// A loose ref's own lock (files backend): a git killed while it moved
	// the ref (wt-admin land's compare-and-swap of the publication branch,
	// a fetch's remote-tracking ref) leaves it.
	filepath.WalkDir(filepath.Join(common, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".lock") {
			out = append(out, p)
		}
		return nil // an unreadable directory holds no lock doctor can name
	})
	return out
}

// checkGates: every checkout's gate problems (a feature worktree off its
// task branch, a task branch checked out elsewhere), every live allocation
// without a registered worktree, and a note for each worktree of a role
// that wt leaves ungated.
func (rep *Report) checkGates(ctx context.Context, tx *store.Tx, r *alloc.Repo, pol store.Policy, inv []gitrepo.Worktree, allocs []store.Allocation, repo string) {
	seen := map[string]bool{}
	for _, wt := range inv {
		var a *store.Allocation
		if wt.Key != "" && wt.Key != gitrepo.MainKey {
			got, err := r.RegisteredAllocation(tx, wt.Key)
			if err != nil {
				rep.store(err)
				continue
			}
			a = got
			// A binding awaiting backfill (checkRegistrations reports it
			// with that fix): its task has a worktree, not one to finish.
			if a == nil {
				if id, awaiting, err := alloc.AwaitingBackfill(tx, wt.Key); err != nil {
					rep.store(err)
					continue
				} else if awaiting {
					seen[id] = true
				}
			}
		}
		gitDir := r.Git.CommonDir
		if wt.Key != gitrepo.MainKey {
			gitDir = gitrepo.AdminDir(r.Git.CommonDir, wt.Key)
		}
		problems, err := view.GateProblems(tx, repo, wt, gitDir, a)
		if err != nil {
			rep.store(err)
			continue
		}
		for _, p := range problems {
			rep.Findings = append(rep.Findings, Finding{Check: "gates", Subject: wt.Path, Problem: p.Code + ": " + p.Message, Fix: p.Fix, Hint: p.Hint})
		}
		if a == nil {
			continue
		}
		seen[a.AllocationID] = true
		rep.checkAllocated(ctx, tx, r, pol, wt, a, repo)
	}
	for _, a := range allocs {
		if seen[a.AllocationID] || a.Lifecycle == store.Released {
			continue
		}
		rep.Findings = append(rep.Findings, Finding{Check: "gates", Subject: a.WorktreePath,
			Problem: fmt.Sprintf("%s: task %s is %s but has no registered worktree at %s (removed, or re-created by git): nobody can take its lease, its branch stays guarded, and its task key is stuck until it is finished", decision.UnregisteredWorktree, a.TaskKey, a.Lifecycle, a.WorktreePath),
			Fix:     view.FinishCommand(repo, a, maint.FinishNeedsArchive(ctx, r, pol.PublicationBranch, a, "")),
			Hint:    "the dry run shows what finishing keeps; --archive keeps unmerged commits under refs/wt/archive/"})
	}
}

// checkAllocated is the gates check of worktree wt, which allocation a
// governs: a worktree moved or gone from under wt's records, git's files
// that disagree with them, and a role whose writes wt does not gate.
func (rep *Report) checkAllocated(ctx context.Context, tx *store.Tx, r *alloc.Repo, pol store.Policy, wt gitrepo.Worktree, a *store.Allocation, repo string) {
	if !wt.Prunable && wt.Path != a.WorktreePath && a.Lifecycle != store.Released {
		// git worktree move: wt's records, and every wt command, still
		// name the old path (a leased one is checkLeases' finding).
		if _, leased, err := tx.Lease(a.AllocationID); err == nil && !leased {
			rep.Findings = append(rep.Findings, Finding{Check: "gates", Subject: wt.Path,
				Problem: fmt.Sprintf("%s: task %s's worktree was moved (git worktree move) from %s, where wt's records keep it: wt-exec and every lease command there refuse it", decision.InvalidTarget, a.TaskKey, a.WorktreePath),
				Fix:     fmt.Sprintf("git -C %s worktree move %s %s", repo, shell.Word(wt.Path), shell.Word(a.WorktreePath))})
		}
	}
	if !wt.Prunable {
		if err := gitrepo.VerifyMetadata(r.Git.CommonDir, wt.Key, wt.Path); err != nil {
			f := Finding{Check: "gates", Subject: wt.Path, Problem: decision.CodeOf(err) + ": " + err.Error()}
			var d *decision.Error
			if errors.As(err, &d) {
				f.Problem, f.Fix = d.Code+": "+d.Message, d.Hint
			}
			rep.Findings = append(rep.Findings, f)
		}
	}
	if wt.Prunable && a.Lifecycle != store.Released && wt.Path != a.WorktreePath && gitrepo.PointsBack(r.Git.CommonDir, wt.Key, a.WorktreePath) {
		pr := view.GitdirRewritten(repo, *a, wt.Path)
		rep.Findings = append(rep.Findings, Finding{Check: "gates", Subject: a.WorktreePath, Problem: pr.Code + ": " + pr.Message, Fix: pr.Fix})
		return
	}
	if wt.Prunable && a.Role != store.RoleAudit && a.Lifecycle != store.Released {
		rep.Findings = append(rep.Findings, Finding{Check: "gates", Subject: wt.Path,
			Problem: fmt.Sprintf("%s: the checkout of task %s (%s) was deleted; its task key is stuck until the task is finished", decision.CheckoutMissing, a.TaskKey, a.Lifecycle),
			Fix:     view.FinishCommand(repo, *a, maint.FinishNeedsArchive(ctx, r, pol.PublicationBranch, *a, wt.Head)),
			Hint:    "the dry run shows what finishing keeps; --archive keeps unmerged commits under refs/wt/archive/"})
	}
	if _, ungated := alloc.RoleGate[a.Role]; ungated && a.Lifecycle != store.Released {
		rep.Notes = append(rep.Notes, Finding{Check: "gates", Subject: wt.Path,
			Problem: fmt.Sprintf("%s: task %s has role %s, whose writes wt does not gate: the role expects %s", decision.UngatedRole, a.TaskKey, a.Role, alloc.RoleGate[a.Role])})
	} else if alloc.GateOf(*a) != alloc.GateLease && alloc.GateOf(*a) != alloc.GateReadOnly {
		rep.Findings = append(rep.Findings, Finding{Check: "gates", Subject: wt.Path,
			Problem: fmt.Sprintf("%s: task %s has role %q, which wt does not know: every write there is refused", decision.InvalidRole, a.TaskKey, a.Role),
			Hint:    "look at its record with wt-admin status --json"})
	}
}

// checkLeases: a lease whose holder is gone, or whose worktree is gone.
func (rep *Report) checkLeases(tx *store.Tx, allocs []store.Allocation, commonDir, repo string, scan func() (*proc.Scan, error)) {
	now := time.Now()
	for _, a := range allocs {
		for _, o := range lease.Occupants(a) {
			p := view.OccupantProblem(repo, a.WorktreePath, o)
			rep.Findings = append(rep.Findings, Finding{Check: "leases", Subject: a.WorktreePath, Problem: p.Code + ": " + p.Message, Fix: p.Fix, Hint: p.Hint})
		}
		l, ok, err := tx.Lease(a.AllocationID)
		if err != nil {
			rep.store(err)
			continue
		}
		if !ok {
			if reason := lease.OrphanLock(commonDir, a); reason != "" {
				rep.Findings = append(rep.Findings, Finding{Check: "leases", Subject: a.WorktreePath,
					Problem: fmt.Sprintf("git's lock says %q but wt has no such lease: the lock file is not authoritative (%s), and only makes git refuse to remove or prune the worktree", reason, lease.FileOrCommentNotAuthoritative),
					Fix:     fmt.Sprintf("git -C %s worktree unlock %s", repo, shell.Word(a.WorktreePath))})
			}
			continue
		}
		ev, err := scan()
		if err != nil {
			rep.Findings = append(rep.Findings, Finding{Check: "leases", Subject: "/proc", Problem: err.Error()})
			return
		}
		p := lease.Assess(ev, l, now, lease.Caller{})
		path := shell.Word(l.WorktreePath)
		f := Finding{Check: "leases", Subject: l.WorktreePath}
		at, atErr := gitrepo.CheckoutOf(commonDir, a.WorktreeKey)
		switch {
		case atErr == nil && at != l.WorktreePath:
			// Moved (git worktree move): every lease command refuses the
			// mismatch, so the fix is to move it back.
			f.Problem = fmt.Sprintf("the worktree of lease %s (client %s) was moved to %s; the lease and the allocation record %s", l.LeaseID, l.Holder.ClientID, at, l.WorktreePath)
			f.Fix = fmt.Sprintf("git -C %s worktree move %s %s", repo, shell.Word(at), path)
		case p.HolderLive && p.MissingWorktree:
			alarm := view.VanishedUnderHolder(repo, l)
			f.Problem = "ALARM: " + alarm.Code + ": " + alarm.Message
			f.Hint = alarm.Hint
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

// checkViews: a confined run's private view whose run ended without
// wt-exec (killed) holds what that run did not publish yet; its record
// stays in the store until the next wt-exec on the worktree recovers it
// (confine.Recover), which is the fix. A view whose worktree's lease has
// a live holder is that run's own.
func (rep *Report) checkViews(tx *store.Tx, allocs []store.Allocation, root string, scan func() (*proc.Scan, error)) {
	keys, err := store.ViewRecords(root)
	if err != nil {
		rep.Findings = append(rep.Findings, Finding{Check: "leases", Subject: store.ViewsDir(root), Problem: "the records of confined runs' views cannot be read: " + err.Error()})
		return
	}
	if len(keys) == 0 {
		return
	}
	ev, err := scan()
	if err != nil {
		rep.Findings = append(rep.Findings, Finding{Check: "leases", Subject: "/proc", Problem: err.Error()})
		return
	}
	for _, key := range keys {
		rec, _, err := store.ReadViewRecord(root, key)
		if err != nil {
			rep.Findings = append(rep.Findings, Finding{Check: "leases", Subject: key, Problem: err.Error(), Hint: "look at it: cat " + shell.Word(store.ViewRecordPath(root, key))})
			continue
		}
		if rec.Runner != nil {
			if live, err := proc.IsLive(proc.NewReader(), *rec.Runner); err != nil || live {
				continue // its wt-exec runs (or cannot be told from one that does)
			}
		}
		var a *store.Allocation
		for i := range allocs {
			if allocs[i].WorktreeKey == key {
				a = &allocs[i]
			}
		}
		if a != nil {
			if l, ok, err := tx.Lease(a.AllocationID); err != nil || (ok && lease.Assess(ev, l, time.Now(), lease.Caller{}).HolderLive) {
				continue // its run goes on (or cannot be told from one that does)
			}
		}
		f := Finding{Check: "leases", Subject: rec.Dir,
			Problem: fmt.Sprintf("%s: a confined run of task %s ended without wt-exec (killed): its private view %s holds what it did not publish", decision.ViewLeft, rec.Task, rec.Dir)}
		if rec.Discard {
			f.Problem = fmt.Sprintf("%s: a sandboxed run of task %s ended without wt-exec (killed): its private view %s is left, with nothing in it to keep", decision.ViewLeft, rec.Task, rec.Dir)
		}
		if a != nil {
			f.Fix = fmt.Sprintf("wt-exec -C %s --no-confine -- true", shell.Word(a.WorktreePath))
		} else {
			f.Hint = fmt.Sprintf("its worktree is no longer allocated; look at what it holds: git --git-dir=%s log --oneline --all", shell.Word(filepath.Join(rec.Dir, "upper")))
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

// checkJournals: every multi-step operation that was interrupted (its
// actor is gone), with the command that finishes or undoes it. One whose
// actor still runs is in flight, not a finding.
func (rep *Report) checkJournals(tx *store.Tx, repo, repoPath string) {
	js, err := tx.Journals()
	if err != nil {
		rep.store(err)
		return
	}
	pr := proc.NewReader()
	for _, j := range js {
		if live, err := proc.IsLive(pr, j.Actor); err != nil || live {
			continue
		}
		f := Finding{Check: "journals", Subject: j.Target,
			Problem: fmt.Sprintf("a %s of %s was interrupted (transaction %s, phase %s, by pid %d, gone)", j.Operation, j.Target, j.TransactionID, j.Phase, j.Actor.PID)}
		if j.Operation == "allocate" {
			f.Fix = fmt.Sprintf("wt-admin --repo %s recover", repo)
		} else if j.Operation == land.OpLand {
			f.Fix = fmt.Sprintf("wt-admin --repo %s land --recover", repo)
		} else if cmd, ok := maint.ResumeCommand(repoPath, j); ok {
			f.Fix = cmd
		} else {
			f.Hint = fmt.Sprintf("look at %s by hand; wt never overwrites what it cannot read", shell.Word(filepath.Join(tx.EventsPath(), "..", "journal", j.TransactionID+".json")))
		}
		rep.Findings = append(rep.Findings, f)
	}
}

// checkPublication: the publication lease of a lander that is gone keeps
// every other lander waiting (and, under publication-lease on, the
// branch shut) until one takes it over; a live one is a note.
func (rep *Report) checkPublication(tx *store.Tx, repo string) {
	p, err := view.ReadPublication(tx)
	if err != nil {
		rep.store(err)
		return
	}
	if p == nil {
		return
	}
	subject := "the publication lease of " + p.Branch
	switch {
	case p.Unknown != "":
		rep.Findings = append(rep.Findings, Finding{Check: "publication", Subject: subject,
			Problem: fmt.Sprintf("whether its lander, pid %d, runs cannot be read: %s", p.Holder.PID, p.Unknown),
			Hint:    fmt.Sprintf("look at the process (ps -p %d); wt does not take what it cannot read for dead", p.Holder.PID)})
	case p.Live:
		rep.Notes = append(rep.Notes, Finding{Check: "publication", Subject: subject,
			Problem: fmt.Sprintf("held by lander pid %d since %s%s", p.Holder.PID, p.AcquiredAt, map[bool]string{true: ", landing task " + p.Task}[p.Task != ""])})
	default:
		rep.Findings = append(rep.Findings, Finding{Check: "publication", Subject: subject,
			Problem: fmt.Sprintf("its lander, pid %d, is gone and left it held: the next lander takes it over", p.Holder.PID),
			Fix:     fmt.Sprintf("wt-admin --repo %s land --recover", repo)})
	}
}

// checkPrunable: a retained audit worktree whose checkout is gone keeps a
// registration that prune can release (docs/decisions.md, "Registration maintenance"; prune's dry run checks
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
			Fix:     fmt.Sprintf("wt-admin --repo %s prune %s --owner %s", repo, shell.Word(a.WorktreePath), shell.Word(a.Owner))})
	}
}
