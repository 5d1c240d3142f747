package doctor

import (
	"fmt"
	"strings"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ledger"
	"github.com/wt-tool/wt/core/store"
)

// governedHistory reads, in the store's section, what checkObjects walks
// after it: the governed refs and where their history begins.
func governedHistory(s *scope) {
	s.tips = governedTips(s.pol, s.allocs)
	s.bases = governedBases(s.r, s.pol, s.allocs)
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
func checkObjects(s *scope) {
	ctx, r, tips, bases, repo := s.ctx, s.r, s.tips, s.bases, s.repo
	refs, err := r.Git.Refs(ctx)
	if err != nil {
		s.find(Finding{Subject: "git for-each-ref", Problem: err.Error(), Hint: "run git for-each-ref in the repository"})
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
		s.find(Finding{Subject: "git rev-list", Problem: err.Error(),
			Hint: fmt.Sprintf("run git -C %s fsck --connectivity-only and read what it says", repo)})
		return
	}
	s.note(Finding{Subject: fmt.Sprintf("%d governed branch(es)", len(present)),
		Problem: fmt.Sprintf("walked the %d object(s) the governed branches added over their bases (%d base commit(s): each task's base at allocate, the publication branch's tip at init); the history before them is not walked here: git -C %s fsck --connectivity-only checks it", walked, len(bases), repo)})
	if len(missing) == 0 {
		return
	}
	shown := missing
	if len(shown) > 5 {
		shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(missing)-5))
	}
	s.find(Finding{Subject: strings.Join(present, " "),
		Problem: fmt.Sprintf("%d object(s) reachable from the governed refs are missing: %s", len(missing), strings.Join(shown, ", ")),
		Hint:    fmt.Sprintf("fetch them again from a remote that has them (git -C %s fetch --refetch origin), or restore them from a backup; git -C %s fsck --connectivity-only lists them", repo, repo)})
}
