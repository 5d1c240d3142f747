package land

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/shell"
)

// A landing moves the publication branch under every checkout that has it
// checked out (the canonical checkout on main, as a rule): their HEAD
// follows the branch, their index and files do not, and git status shows
// every landed change as a staged reversal. After each landing the lander
// does what git's receive.denyCurrentBranch=updateInstead does for a push:
// a checkout whose index and files are those of the tip the landing
// integrated onto is brought to the new tip (git read-tree -u -m OLD NEW:
// the files the landing changed, nothing else; an untracked file in the
// way stops it, changing nothing); one with changes of its own is left as
// it is, recorded as behind (BehindName), and the lander says which and
// the command that brings it forward keeping its changes. status shows it
// as behind, not as changed.

// Checkout codes: what a landing did to a checkout of the publication
// branch.
const (
	CheckoutUpdated = "CHECKOUT_UPDATED"
	CheckoutBehind  = "CHECKOUT_BEHIND"
)

// CheckoutNote is one checkout of the publication branch after a landing.
type CheckoutNote struct {
	Path string `json:"path"`
	Code string `json:"code"`
	// From is the tip whose files the checkout had (its index's), To the
	// branch's tip now.
	From string `json:"from"`
	To   string `json:"to"`
	// Why says why a checkout was left behind; Fix brings it forward.
	Why string `json:"why,omitempty"`
	Fix string `json:"fix,omitempty"`
}

// BehindName is the file in the store recording the checkouts a landing
// left behind: a JSON object from checkout path to the tip whose files it
// has. Only a lander (one at a time, under the publication lease) writes
// it; status reads it and checks it against git.
const BehindName = "checkouts-behind.json"

// Behind is the store at root's record of checkouts left behind (empty
// when none, or when it cannot be read: status then shows none).
func Behind(root string) map[string]string {
	out := map[string]string{}
	b, err := safefile.Read(filepath.Join(root, BehindName), 1<<20, safefile.NoFollow)
	if err == nil {
		_ = json.Unmarshal(b, &out) // Best effort: unreadable is as none.
	}
	return out
}

// writeBehind records m (the file goes when m is empty).
func writeBehind(root string, m map[string]string) error {
	p := filepath.Join(root, BehindName)
	if len(m) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return safefile.Replace(p, append(b, '\n'), 0o644)
}

// followCheckouts brings the checkouts of the publication branch from
// onto to result where they are clean, and notes the others (see above).
// It never fails the landing: a checkout it cannot read is left as it is
// and said so.
func (l *lander) followCheckouts(onto, result string) []CheckoutNote {
	wts, err := l.r.Git.Inventory(l.ctx)
	if err != nil {
		l.notify("the checkouts of " + l.pol.PublicationBranch + " cannot be listed, so none was brought to its new tip: " + err.Error())
		return nil
	}
	behind := Behind(l.r.Store.Root())
	var notes []CheckoutNote
	for _, wt := range wts {
		if wt.Bare || wt.Detached || wt.Branch != l.pol.PublicationBranch || wt.Prunable {
			continue
		}
		from := onto
		if b, ok := behind[wt.Path]; ok {
			from = b
		}
		g := &gitrepo.Repo{TopLevel: wt.Path}
		from, why := l.filesOf(g, from)
		n := CheckoutNote{Path: wt.Path, From: from, To: result}
		if why != "" {
			n.Code, n.Why = CheckoutBehind, why
		} else if _, err := g.GitUnhooked(l.ctx, "read-tree", "-u", "-m", from, result); err != nil {
			n.Code, n.Why = CheckoutBehind, "git read-tree refused to bring it forward: "+err.Error()
		} else {
			n.Code = CheckoutUpdated
			delete(behind, wt.Path)
			l.notify(fmt.Sprintf("%s (on %s) brought to its new tip %s: it had no changes of its own", wt.Path, l.pol.PublicationBranch, gitrepo.Short(result)))
		}
		if n.Code == CheckoutBehind {
			behind[wt.Path] = from
			n.Fix = fmt.Sprintf("git -C %s read-tree -u -m %s %s", shell.Word(wt.Path), from, result)
			l.notify(fmt.Sprintf("%s has %s checked out and was left as it is (%s): its files are %s's of %s; bring them to %s, keeping its changes (git refuses, changing nothing, where a change of its own meets the landing's): %s",
				wt.Path, l.pol.PublicationBranch, n.Why, l.pol.PublicationBranch, gitrepo.Short(from), gitrepo.Short(result), n.Fix))
		}
		notes = append(notes, n)
	}
	for p := range behind {
		if !hasCheckout(wts, p, l.pol.PublicationBranch) {
			delete(behind, p) // gone, or on another branch now
		}
	}
	if err := writeBehind(l.r.Store.Root(), behind); err != nil {
		l.notify("the checkouts left behind cannot be recorded for status: " + err.Error())
	}
	sort.Slice(notes, func(i, j int) bool { return notes[i].Path < notes[j].Path })
	return notes
}

// filesOf finds the tip whose files the checkout g has: from (where the
// landing found the branch, or where an earlier landing left the checkout
// behind), else one of the branch's last values in its reflog (a lander
// killed between its move and this step, a move by someone else). It
// returns from and why the checkout is not clean when none fits.
func (l *lander) filesOf(g *gitrepo.Repo, from string) (string, string) {
	why := l.dirty(g, from)
	if why == "" || why != dirtyStaged {
		return from, why
	}
	entries, _ := gitrepo.ReadReflog(l.r.Git.CommonDir, l.ref) // unreadable: from alone
	for i, tried := len(entries)-1, 0; i >= 0 && tried < 10; i-- {
		old := entries[i].Old
		if old == "" || old == from || !gitrepo.FullObjectName(old) || strings.Trim(old, "0") == "" {
			continue
		}
		tried++
		if _, err := g.Git(l.ctx, true, "diff-index", "--quiet", "--cached", "--ignore-submodules", old, "--"); err == nil {
			return old, ""
		}
	}
	return from, why
}

// dirtyStaged is dirty's answer for an index that is not from's.
const dirtyStaged = "it has staged changes of its own"

// dirty says why the checkout g, whose files should be those of from,
// is not as from left it ("" when it is): changes of its own, staged or
// not (untracked files are no change: read-tree keeps them, and refuses
// to overwrite one).
func (l *lander) dirty(g *gitrepo.Repo, from string) string {
	// The index's stat data first, as git does before it compares.
	if _, err := g.GitUnhooked(l.ctx, "update-index", "-q", "--ignore-submodules", "--refresh"); err != nil {
		return "its index cannot be refreshed: " + err.Error()
	}
	if _, err := g.Git(l.ctx, true, "diff-files", "--quiet", "--ignore-submodules"); err != nil {
		return "it has changes not staged"
	}
	if _, err := g.Git(l.ctx, true, "diff-index", "--quiet", "--cached", "--ignore-submodules", from, "--"); err != nil {
		return dirtyStaged
	}
	return ""
}

// hasCheckout reports whether wts has a checkout at path on branch.
func hasCheckout(wts []gitrepo.Worktree, path, branch string) bool {
	for _, wt := range wts {
		if wt.Path == path && !wt.Detached && wt.Branch == branch {
			return true
		}
	}
	return false
}

// StillBehind reports whether the checkout at path, recorded as behind at
// from, still is: it has branch checked out and its index still has
// from's files (for status, which shows it as behind, not changed).
func StillBehind(ctx context.Context, wts []gitrepo.Worktree, path, branch, from string) bool {
	if !hasCheckout(wts, path, branch) {
		return false
	}
	g := &gitrepo.Repo{TopLevel: path}
	_, err := g.Git(ctx, true, "diff-index", "--quiet", "--cached", "--ignore-submodules", from, "--")
	return err == nil
}
