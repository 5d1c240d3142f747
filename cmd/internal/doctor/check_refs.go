package doctor

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/maint"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
)

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
func checkRefLocks(s *scope) {
	r := s.r
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
		s.find(Finding{Subject: locks[0], Problem: "who holds git's ref locks cannot be read: " + err.Error(), Hint: "run wt-admin doctor again"})
		return
	}
	for _, p := range locks {
		users, err := scan.PathsInUse(p)
		if err != nil || len(users) > 0 {
			continue // held, or not known to be free: never evidence
		}
		s.find(Finding{Subject: p,
			Problem: decision.RefLockStale + ": " + decision.Words(decision.RefLockStale, "held-by-no-process", p),
			Fix:     "rm -f -- " + shell.Word(p)})
	}
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

// checkLeftovers: wt's refs of a task that has ended (finished before
// finish took them along, or released otherwise): its landing attempts,
// which only the lander made, go; a kept ungated tip goes once the
// publication branch holds it, else it is a note (someone's work that
// nothing else holds: look before deleting it).
func checkLeftovers(s *scope) {
	ctx, r, pol, live, repo := s.ctx, s.r, s.pol, s.live, s.repo
	refs, err := r.Git.Refs(ctx)
	if err != nil {
		s.find(Finding{Subject: "refs/wt/", Problem: "wt's refs cannot be listed: " + err.Error(), Hint: fmt.Sprintf("run git -C %s for-each-ref refs/wt/", repo)})
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
					s.note(Finding{Subject: ref,
						Problem: fmt.Sprintf("task %s has ended, and %s keeps an ungated tip (%s) that %s does not hold: look at it (git -C %s log %s), then delete it: %s", task, ref, gitrepo.Short(oid), pol.PublicationBranch, repo, oid, fix)})
					continue
				}
			}
			s.find(Finding{Subject: ref,
				Problem: fmt.Sprintf("task %s has ended, and %s is left of it (%s): nothing needs it", task, ref, map[bool]string{true: "a landing attempt", false: "an ungated tip the publication branch holds"}[prefix == maint.LandAttemptPrefix]),
				Fix:     fix})
		}
	}
}
