package gitrepo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/shell"
)

// Checkout is the worktree that holds a directory, found by reading git's
// files instead of running git: the hot paths (wt-exec, the hooks) must not
// pay for a git process.
type Checkout struct {
	// TopLevel is the root of the checkout.
	TopLevel string
	// GitDir is the checkout's own git dir (the admin dir of a linked
	// worktree, the common dir in the main checkout).
	GitDir string
	// CommonDir is the repository's common dir.
	CommonDir string
	// Key is the admin dir name of a linked worktree, MainKey for the main
	// checkout.
	Key string
	// Branch is the short name of the checked-out branch, "" when detached.
	Branch string
	// Detached is true when HEAD is not a symbolic ref to a branch.
	Detached bool
}

// Locate finds the checkout that contains dir, as git would: the nearest
// ancestor directory with a .git entry. A .git directory is a main checkout;
// a .git file ("gitdir: PATH") names a linked worktree's admin dir, whose
// commondir file leads to the common dir and whose gitdir file must point
// back at this checkout (a copied or moved checkout is not the worktree git
// knows, and is refused as UNREGISTERED_WORKTREE).
//
// Locate runs no git process and reads at most five small files.
func Locate(dir string) (Checkout, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Checkout{}, decision.SayWrap(decision.NotAGitRepository, err, "as-given", dir)
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	} else {
		return Checkout{}, decision.Say(decision.NotAGitRepository, "does-not", dir).
			WithHint("pass -C naming a governed worktree")
	}
	for d := abs; ; d = filepath.Dir(d) {
		dotgit := filepath.Join(d, ".git")
		fi, err := os.Lstat(dotgit)
		if err == nil {
			c, err := checkoutAt(d, dotgit, fi.IsDir())
			if err == nil && (inside(abs, c.CommonDir) || inside(abs, c.GitDir)) {
				return c, decision.Say(decision.NotAGitRepository, "inside-git", abs).
					WithHint("pass -C naming a directory of the checkout")
			}
			return c, err
		}
		if d == filepath.Dir(d) {
			return Checkout{}, decision.Say(decision.NotAGitRepository, "not-git", abs).
				WithHint("pass -C naming a governed worktree, or allocate one with wt-admin allocate")
		}
	}
}

// inside reports whether path is dir or below it.
func inside(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

func checkoutAt(top, dotgit string, isDir bool) (Checkout, error) {
	c := Checkout{TopLevel: top}
	if isDir {
		if _, err := os.Stat(filepath.Join(dotgit, "commondir")); err == nil {
			return c, decision.Say(decision.UnregisteredWorktree, "linked-worktree", dotgit)
		}
		c.GitDir, c.CommonDir, c.Key = dotgit, dotgit, MainKey
	} else {
		gd, err := gitdirOf(dotgit)
		if err != nil {
			return c, decision.SayWrap(decision.NotAGitRepository, err, "read", dotgit)
		}
		c.GitDir = gd
		common, err := readGitFile(filepath.Join(c.GitDir, "commondir"))
		switch {
		case os.IsNotExist(err):
			// A submodule or a separate git dir: its own repository, whose
			// main checkout this is.
			c.CommonDir, c.Key = c.GitDir, MainKey
		case err != nil:
			return c, decision.SayWrap(decision.UnregisteredWorktree, err, "names-git", dotgit, c.GitDir).
				WithHint("git worktree repair, run in the checkout, fixes a moved worktree")
		default:
			cd := strings.TrimRight(string(common), "\r\n")
			if !filepath.IsAbs(cd) {
				cd = filepath.Join(c.GitDir, cd)
			}
			c.CommonDir = filepath.Clean(cd)
			c.Key = filepath.Base(c.GitDir)
			if err := checkBackPointer(c, dotgit); err != nil {
				return c, err
			}
		}
	}
	head, err := ReadHead(c.GitDir, c.CommonDir)
	if err != nil {
		d := decision.SayWrap(decision.InvalidTarget, err, "read-head", top)
		if c.Key != MainKey {
			// Planted (a FIFO, a symlink): put aside from the canonical
			// checkout, where no git reads this worktree's HEAD.
			d = d.WithHint("put it aside: wt-admin --repo %s quarantine %s", shell.Word(canonicalOf(c.CommonDir)), shell.Word(top))
		}
		return c, d
	}
	c.Branch = head.Branch()
	c.Detached = c.Branch == ""
	return c, nil
}

// checkBackPointer verifies that the admin dir's gitdir file points at this
// checkout's .git file: otherwise the checkout was copied or moved, and git
// (and wt) govern the original, not this copy.
func checkBackPointer(c Checkout, dotgit string) error {
	if filepath.Dir(c.GitDir) != filepath.Join(c.CommonDir, "worktrees") {
		if d := brokenCommondir(c.GitDir, c.TopLevel, c.CommonDir); d != nil {
			return d
		}
		return decision.Say(decision.UnregisteredWorktree, "names-git-dir", dotgit, c.GitDir, c.CommonDir)
	}
	back, err := CheckoutOf(c.CommonDir, c.Key)
	if err != nil {
		return decision.SayWrap(decision.UnregisteredWorktree, err, "worktree-admin", c.GitDir)
	}
	if !same(filepath.Join(back, ".git"), dotgit) {
		return decision.Say(decision.UnregisteredWorktree, "not-checkout",
			c.TopLevel, c.Key, back).
			WithHint("run git worktree repair in the checkout if it was moved")
	}
	return nil
}

// Lock states of a linked worktree (git's <admin dir>/locked file).
const lockedName = "locked"

// LockFile is the path of git's lock file for the linked worktree key.
func LockFile(commonDir, key string) string {
	return filepath.Join(AdminDir(commonDir, key), lockedName)
}

// ReadLock returns the reason in git's lock file of a linked worktree, and
// whether the file exists. git writes the reason followed by a newline; an
// empty file is a lock without a reason.
func ReadLock(commonDir, key string) (reason string, locked bool, err error) {
	b, err := readGitFile(LockFile(commonDir, key))
	if os.IsNotExist(err) {
		return "", false, nil
	}
	if err != nil {
		return "", true, fmt.Errorf("read lock of worktree %s: %w", key, err)
	}
	return strings.TrimRight(string(b), "\n"), true, nil
}

// ErrLocked means the worktree's lock file exists when it was expected not
// to, or says something else than expected.
var ErrLocked = errors.New("worktree lock changed")

// CreateLock writes git's lock file for worktree key with reason, only if
// none exists, and whole: the reason is written to a temporary file that is
// then hard-linked to the lock's name. link(2) fails when the name exists,
// so a concurrent `git worktree lock` is never overwritten (ErrLocked), and
// no reader, and no crash, ever sees the lock without its reason (a crash
// after the link leaves the lock whole; before it, no lock at all).
//
// The lock mirrors a lease for git's sake; it is not fsynced, since the
// lease, not the lock, is the truth.
func CreateLock(commonDir, key, reason string) error {
	tmp, err := writeTemp(commonDir, key, reason)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // Best effort: the lock, if made, is the link.
	err = os.Link(tmp, LockFile(commonDir, key))
	if errors.Is(err, fs.ErrExist) {
		return ErrLocked
	}
	return err
}

// ReplaceLock replaces the worktree's lock file with one holding reason,
// atomically (rename).
func ReplaceLock(commonDir, key, reason string) error {
	tmp, err := writeTemp(commonDir, key, reason)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, LockFile(commonDir, key)); err != nil {
		os.Remove(tmp) // Best effort: already failing.
		return err
	}
	return nil
}

// RemoveLock removes the worktree's lock file if it still holds reason. It
// reports whether it removed one.
func RemoveLock(commonDir, key, reason string) (bool, error) {
	got, locked, err := ReadLock(commonDir, key)
	if err != nil || !locked || got != reason {
		return false, err
	}
	err = os.Remove(LockFile(commonDir, key))
	if os.IsNotExist(err) {
		return false, nil
	}
	return err == nil, err
}

func writeTemp(commonDir, key, reason string) (string, error) {
	fd, tmp, err := safefile.CreateTemp(AdminDir(commonDir, key), ".wt-locked-")
	if err != nil {
		return "", err
	}
	err = safefile.WriteAll(fd, []byte(reason+"\n"))
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp) // Best effort: already failing.
		return "", err
	}
	return tmp, nil
}

// LocateGitDir finds the repository of a git dir named by $GIT_DIR, for a
// hook that git runs without a checkout: receive-pack runs hooks in the git
// dir of the repository pushed into, and git --git-dir=... runs them from
// wherever it was called. The result has no TopLevel. A linked worktree's
// admin dir gives that worktree's key; anything else is the main git dir
// (key MainKey) of its repository.
func LocateGitDir(cwd, gitDir string) (Checkout, error) {
	if !filepath.IsAbs(gitDir) {
		gitDir = filepath.Join(cwd, gitDir)
	}
	abs, err := filepath.EvalSymlinks(gitDir)
	if err != nil {
		return Checkout{}, decision.SayWrap(decision.NotAGitRepository, err, "git-dir", gitDir)
	}
	if _, err := os.Stat(filepath.Join(abs, "HEAD")); err != nil {
		return Checkout{}, decision.Say(decision.NotAGitRepository, "not-git-dir", abs)
	}
	c := Checkout{GitDir: abs, CommonDir: abs, Key: MainKey}
	common, err := readGitFile(filepath.Join(abs, "commondir"))
	switch {
	case os.IsNotExist(err):
	case err != nil:
		return c, decision.SayWrap(decision.NotAGitRepository, err, "read", filepath.Join(abs, "commondir"))
	default:
		cd := strings.TrimRight(string(common), "\r\n")
		if !filepath.IsAbs(cd) {
			cd = filepath.Join(abs, cd)
		}
		c.CommonDir, c.Key = filepath.Clean(cd), filepath.Base(abs)
	}
	return c, nil
}

// SameFile reports whether two paths name the same file.
func SameFile(a, b string) bool { return same(a, b) }

// InitializingReason is what git writes in a new worktree's lock file
// while git worktree add makes it; git removes the lock when it is done.
const InitializingReason = "initializing"

// Initializing reports whether git is making a linked worktree of the
// repository with common dir commonDir now: an admin dir whose lock says
// "initializing" (git worktree add --lock writes its own reason instead).
func Initializing(commonDir string) bool {
	found := false
	_ = eachAdminDir(commonDir, func(key string) { // Best effort: none read, none found.
		if found {
			return
		}
		if reason, locked, err := ReadLock(commonDir, key); err == nil && locked && reason == InitializingReason {
			found = true
		}
	})
	return found
}

// brokenCommondir is GIT_METADATA_UNTRUSTED, naming the worktree and the
// fix, when the admin dir gitDir of the checkout at top lies in a
// repository's worktrees/ but its commondir names another place (named):
// git cannot open the worktree at all, and every command there fails. nil
// when gitDir is not such an admin dir.
func brokenCommondir(gitDir, top, named string) *decision.Error {
	parent := filepath.Dir(gitDir)
	if filepath.Base(parent) != "worktrees" {
		return nil
	}
	common := filepath.Dir(parent)
	if fi, err := os.Stat(filepath.Join(common, "HEAD")); err != nil || fi.IsDir() || same(common, named) {
		return nil
	}
	repoTop := common
	if filepath.Base(common) == ".git" {
		repoTop = filepath.Dir(common)
	}
	return decision.Say(decision.GitMetadataUntrusted, "worktree-admin", top, gitDir, named, common).
		WithHint("printf '%%s\\n' ../.. > %s && git -C %s worktree repair %s", shell.Word(filepath.Join(gitDir, "commondir")), shell.Word(repoTop), shell.Word(top))
}

// DiagnoseCheckout says what keeps git from opening the checkout that
// holds dir when its .git file names an admin dir whose commondir leads
// elsewhere (brokenCommondir, which Locate's reading of the links finds);
// nil when that is not the cause.
func DiagnoseCheckout(dir string) *decision.Error {
	_, err := Locate(dir)
	if d, ok := decision.As(err); ok && d.Code == decision.GitMetadataUntrusted {
		return d
	}
	return nil
}

// PointsBack reports whether the checkout at path is linked worktree
// key's: its .git file names key's admin dir. When git's record of where
// key is (its admin dir's gitdir) names another place, git takes the
// worktree for deleted (prunable) while its checkout is in place: the
// admin dir's gitdir was rewritten, and git worktree repair puts it back.
func PointsBack(commonDir, key, path string) bool {
	gd, err := gitdirOf(filepath.Join(path, ".git"))
	return err == nil && same(gd, AdminDir(commonDir, key))
}

// canonicalOf is the canonical checkout of the repository with common dir
// commonDir (its parent, for a .git common dir), else the common dir.
func canonicalOf(commonDir string) string {
	if filepath.Base(commonDir) == ".git" {
		return filepath.Dir(commonDir)
	}
	return commonDir
}
