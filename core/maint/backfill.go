package maint

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/store"
)

// BackfillContract names the backfill plan's shape.
const BackfillContract = "binding-registration-backfill/v1"

// RegistrationWindow is how long after an allocation's created_at git's
// registration of its worktree may have been made: allocate stamps
// created_at before `git worktree add` runs. A registration made later is
// another worktree under a reused admin name.
const RegistrationWindow = 900 * time.Second

// Evidence is what backfill saw of one linked binding: the allocation it
// names and the live registration git has under its key.
type Evidence struct {
	WorktreeKey   string `json:"worktree_key"`
	AllocationID  string `json:"allocation_id"`
	RecordVersion int    `json:"record_version"`
	CreatedAt     string `json:"created_at"`
	// AdminDir is git's admin dir, relative to the common dir.
	AdminDir string `json:"admin_dir"`
	Path     string `json:"path"`
	Head     string `json:"head"`
	Branch   string `json:"branch"`
	// RegisteredAtNS is the mtime of the admin dir's commondir file, which
	// `git worktree add` writes once; nil when unknown.
	RegisteredAtNS *int64 `json:"registered_at_ns"`
}

// Refusal is a binding backfill will not register, with every blocker
// that applies.
type Refusal struct {
	Evidence
	Blockers []string `json:"blockers"`
}

// BackfillResult is a backfill plan, and what apply wrote.
type BackfillResult struct {
	Code              string     `json:"-"`
	PlanID            string     `json:"plan_id"`
	Contract          string     `json:"contract"`
	Candidates        []Evidence `json:"candidates"`
	Refused           []Refusal  `json:"refused"`
	AlreadyRegistered int        `json:"already_registered"`
	DryRun            bool       `json:"dry_run"`
	Written           int        `json:"written"`
}

// backfillPlan is what the plan id covers.
type backfillPlan struct {
	Contract     string     `json:"contract"`
	RepositoryID string     `json:"repository_id"`
	Candidates   []Evidence `json:"candidates"`
}

// Backfill lists every linked binding without a registration document and
// plans to register those whose live evidence says the registration is the
// one their allocation created (docs/decisions.md, "Registration maintenance"). With apply "" it is a dry run
// under the shared lock; otherwise the plan is made once under the shared
// lock, where git is asked, and again under the exclusive lock from what
// git answered (no git runs there: a question not asked before counts
// against the candidate), apply must be its plan id, and the registrations
// (document and marker) are written. One `git worktree list` per plan; a git
// process per candidate only when its HEAD moved from its base commit.
func Backfill(ctx context.Context, r *alloc.Repo, apply string) (BackfillResult, error) {
	if apply != "" {
		if err := ValidPlanID("--apply", apply); err != nil {
			return BackfillResult{}, err
		}
	}
	var res BackfillResult
	facts := &gitFacts{ctx: ctx, r: r, ancestor: map[[2]string]bool{}}
	body := func(tx *store.Tx) error {
		var err error
		if res, err = planBackfill(tx, facts); err != nil {
			return err
		}
		if apply == "" {
			res.DryRun, res.Code = true, decision.BackfillNothing
			if len(res.Candidates) > 0 {
				res.Code = decision.BackfillReady
			}
			return nil
		}
		if apply != res.PlanID {
			return decision.Say(decision.ResourcePlanMismatch, "backfill-plan", res.PlanID, apply).
				WithHint("run wt-admin backfill again, check the plan, and apply its plan_id").WithFact("plan_id", res.PlanID)
		}
		now := store.Now()
		for _, c := range res.Candidates {
			reg := store.Registration{RegistrationID: ids.New(), WorktreeKey: c.WorktreeKey, WorktreePath: c.Path,
				AllocationID: c.AllocationID, CreatedAt: now}
			if err := tx.PutRegistration(&reg); err != nil {
				return err
			}
			if err := tx.LogEvent("registration_backfilled", c.AllocationID, map[string]any{
				"evidence": c, "registration_id": reg.RegistrationID, "plan_id": res.PlanID}); err != nil {
				return err
			}
			res.Written++
		}
		res.Code = decision.BackfillNothing
		if res.Written > 0 {
			res.Code = decision.Backfilled
			repo, err := tx.Repository()
			if err != nil {
				return err
			}
			repo.UpdatedAt = now
			return tx.PutRepository(&repo)
		}
		return nil
	}
	if apply == "" {
		return res, r.Store.Read(body)
	}
	if err := r.Store.Read(func(tx *store.Tx) error {
		_, err := planBackfill(tx, facts)
		return err
	}); err != nil {
		return res, err
	}
	facts.offline = true
	return res, r.Store.Write(body)
}

// gitFacts answers planBackfill's questions of git, and remembers them;
// offline, it answers only from what it remembers.
type gitFacts struct {
	ctx      context.Context
	r        *alloc.Repo
	offline  bool
	listed   bool
	wts      []gitrepo.Worktree
	ancestor map[[2]string]bool
}

func (f *gitFacts) inventory() ([]gitrepo.Worktree, error) {
	if f.listed {
		return f.wts, nil
	}
	if f.offline {
		return nil, decision.Say(decision.Internal, "backfill-asked")
	}
	wts, err := f.r.Git.Inventory(f.ctx)
	if err != nil {
		return nil, gitrepo.ListFailed(err)
	}
	f.wts, f.listed = wts, true
	return wts, nil
}

// isAncestor reports whether a is an ancestor of b; offline, a question
// not asked before is no.
func (f *gitFacts) isAncestor(a, b string) bool {
	k := [2]string{a, b}
	if ok, seen := f.ancestor[k]; seen || f.offline {
		return ok
	}
	ok, err := f.r.Git.IsAncestor(f.ctx, a, b)
	f.ancestor[k] = err == nil && ok
	return f.ancestor[k]
}

func planBackfill(tx *store.Tx, facts *gitFacts) (BackfillResult, error) {
	res := BackfillResult{Contract: BackfillContract, Candidates: []Evidence{}, Refused: []Refusal{}}
	repo, err := tx.Repository()
	if err != nil {
		return res, err
	}
	wts, err := facts.inventory()
	if err != nil {
		return res, err
	}
	live := map[string]gitrepo.Worktree{}
	for _, w := range wts {
		if w.Key != "" && w.Key != gitrepo.MainKey {
			live[w.Key] = w
		}
	}
	keys, err := tx.Bindings()
	if err != nil {
		return res, err
	}
	for _, key := range keys {
		item, ok := live[key]
		if !ok {
			continue // the canonical checkout, or a binding git no longer lists
		}
		b, ok, err := tx.Binding(key)
		if err != nil || !ok {
			return res, err
		}
		if _, _, has, err := tx.Registration(key); err != nil {
			return res, err
		} else if has {
			res.AlreadyRegistered++
			continue
		}
		a, err := tx.Allocation(b.AllocationID)
		if errors.Is(err, store.ErrNotFound) {
			res.Refused = append(res.Refused, Refusal{Evidence: Evidence{WorktreeKey: key, AllocationID: b.AllocationID},
				Blockers: []string{decision.RecordMissing}})
			continue
		}
		if err != nil {
			return res, err
		}
		blockers, ev := evaluate(facts, item, a)
		if len(blockers) > 0 {
			res.Refused = append(res.Refused, Refusal{Evidence: ev, Blockers: blockers})
		} else {
			res.Candidates = append(res.Candidates, ev)
		}
	}
	res.PlanID, err = PlanID(backfillPlan{Contract: BackfillContract, RepositoryID: repo.RepositoryID, Candidates: res.Candidates})
	return res, err
}

// evaluate gathers the evidence for one binding and every blocker that
// applies (docs/decisions.md, "Registration maintenance").
func evaluate(facts *gitFacts, item gitrepo.Worktree, a store.Allocation) ([]string, Evidence) {
	admin := gitrepo.AdminDir(facts.r.Git.CommonDir, item.Key)
	ev := Evidence{WorktreeKey: item.Key, AllocationID: a.AllocationID, RecordVersion: a.RecordVersion, CreatedAt: a.CreatedAt,
		AdminDir: filepath.ToSlash(filepath.Join("worktrees", item.Key)), Path: item.Path, Head: item.Head, Branch: item.Branch}
	var blockers []string
	if fi, err := os.Lstat(admin); err != nil || !fi.IsDir() {
		blockers = append(blockers, decision.AdminDirUnavailable)
	}
	if fi, err := os.Stat(item.Path); item.Prunable || err != nil || !fi.IsDir() {
		blockers = append(blockers, decision.CheckoutMissing)
	}
	if staleMarker(filepath.Join(admin, store.MarkerName), item, a) {
		blockers = append(blockers, decision.StaleRegistrationMarker)
	}
	pointer, err := safefile.Read(filepath.Join(admin, "gitdir"), 64<<10, safefile.Follows)
	p := strings.TrimRight(string(pointer), "\r\n")
	if err != nil || p != filepath.Join(item.Path, ".git") || item.Path != a.WorktreePath {
		blockers = append(blockers, decision.GitPointerMismatch)
	}
	created, cerr := time.Parse(time.RFC3339Nano, a.CreatedAt)
	if fi, err := os.Lstat(filepath.Join(admin, "commondir")); err != nil || !fi.Mode().IsRegular() || cerr != nil {
		blockers = append(blockers, decision.RegistrationTimeUnknown)
	} else {
		ns := fi.ModTime().UnixNano()
		ev.RegisteredAtNS = &ns
		if fi.ModTime().After(created.Add(RegistrationWindow)) {
			blockers = append(blockers, decision.RegistrationNewer)
		}
	}
	switch {
	case item.Head == "":
		blockers = append(blockers, decision.HeadUnresolved)
	case a.BaseCommit != "" && len(blockers) == 0 && item.Head != a.BaseCommit:
		if !facts.isAncestor(a.BaseCommit, item.Head) {
			blockers = append(blockers, decision.BaseNotInHistory)
		}
	}
	return blockers, ev
}

// staleMarker reports whether the admin dir holds a registration marker
// that is not the first half of this very registration: a marker that
// names this key, allocation and path with no document beside it is a
// registration cut short (the marker is written first, see
// store.PutRegistration), which backfill writes again. Any other marker, or
// one that cannot be read, blocks.
func staleMarker(p string, item gitrepo.Worktree, a store.Allocation) bool {
	data, err := safefile.Read(p, store.MaxRecord, safefile.NoFollow)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		return true
	}
	r, err := store.ParseRegistration(data)
	return err != nil || r.WorktreeKey != item.Key || r.AllocationID != a.AllocationID || r.WorktreePath != item.Path
}
