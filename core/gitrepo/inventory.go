package gitrepo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/shell"
)

// Worktree is one entry of the repository's worktree inventory.
type Worktree struct {
	Path string `json:"path"`
	// Key is the name of the worktree's admin dir under <common-dir>/worktrees
	// ("." for the main checkout).
	Key            string `json:"key"`
	Head           string `json:"head"`
	Branch         string `json:"branch"` // short name; "" when detached
	Detached       bool   `json:"detached"`
	Bare           bool   `json:"bare"`
	Locked         bool   `json:"locked"`
	LockReason     string `json:"lock_reason"`
	Prunable       bool   `json:"prunable"`
	PrunableReason string `json:"prunable_reason"`
}

// MainKey is the key of the main (canonical) checkout.
const MainKey = "."

// Inventory lists the repository's worktrees, the main checkout first.
func (r *Repo) Inventory(ctx context.Context) ([]Worktree, error) {
	if err := checkAdminFiles(r.CommonDir); err != nil {
		return nil, err
	}
	out, err := r.Git(ctx, true, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		if d := diagnoseAdminDirs(r.CommonDir); d != nil {
			return nil, d
		}
		return nil, err
	}
	wts, err := ParsePorcelain(out)
	if err != nil {
		return nil, err
	}
	keys, err := AdminKeys(r.CommonDir)
	if err != nil {
		return nil, err
	}
	for i := range wts {
		if i == 0 {
			wts[i].Key = MainKey
			continue
		}
		wts[i].Key = keys[filepath.Clean(wts[i].Path)]
	}
	return wts, nil
}

// ParsePorcelain parses `git worktree list --porcelain -z`: attributes are
// NUL-terminated "name[ value]" tokens, and an empty token ends a record.
// Keys are not part of git's output; Inventory fills them in.
func ParsePorcelain(b []byte) ([]Worktree, error) {
	var out []Worktree
	var cur *Worktree
	for len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return nil, fmt.Errorf("worktree list: unterminated attribute %q", b)
		}
		tok := string(b[:i])
		b = b[i+1:]
		if tok == "" {
			cur = nil
			continue
		}
		name, value, _ := strings.Cut(tok, " ")
		if name == "worktree" {
			out = append(out, Worktree{Path: value})
			cur = &out[len(out)-1]
			continue
		}
		if cur == nil {
			return nil, fmt.Errorf("worktree list: attribute %q outside a record", tok)
		}
		switch name {
		case "HEAD":
			cur.Head = value
		case "branch":
			cur.Branch = strings.TrimPrefix(value, "refs/heads/")
		case "detached":
			cur.Detached = true
		case "bare":
			cur.Bare = true
		case "locked":
			cur.Locked, cur.LockReason = true, value
		case "prunable":
			cur.Prunable, cur.PrunableReason = true, value
		}
	}
	return out, nil
}

// AdminKeys maps each linked worktree's checkout path to its admin dir name,
// from <common-dir>/worktrees/*/gitdir (which holds "<path>/.git"). It works
// for checkouts that no longer exist, unlike reading <path>/.git.
func AdminKeys(commonDir string) (map[string]string, error) {
	keys := map[string]string{}
	err := eachAdminDir(commonDir, func(key string) {
		if p, err := CheckoutOf(commonDir, key); err == nil {
			keys[p] = key
		}
	})
	return keys, err
}

// eachAdminDir calls fn with the key of every linked worktree's admin dir.
func eachAdminDir(commonDir string, fn func(key string)) error {
	ents, err := os.ReadDir(filepath.Join(commonDir, "worktrees"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		fn(e.Name())
	}
	return nil
}

// CheckoutOf returns the checkout git knows for the linked worktree key:
// its admin dir's gitdir file holds "<path>/.git". The checkout may no
// longer exist.
func CheckoutOf(commonDir, key string) (string, error) {
	b, err := readGitFile(filepath.Join(AdminDir(commonDir, key), "gitdir"))
	if err != nil {
		return "", err
	}
	return filepath.Dir(filepath.Clean(strings.TrimRight(string(b), "\r\n"))), nil
}

// gitdirOf reads a linked checkout's .git file ("gitdir: PATH") and returns
// the git dir it names; a relative PATH is taken from the checkout.
func gitdirOf(dotgit string) (string, error) {
	b, err := readGitFile(dotgit)
	if err != nil {
		return "", err
	}
	gd, ok := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), "gitdir: ")
	if !ok {
		return "", fmt.Errorf("%s is not a gitdir file", dotgit)
	}
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(filepath.Dir(dotgit), gd)
	}
	return filepath.Clean(gd), nil
}

// AdminDir is the admin dir of the linked worktree with key.
func AdminDir(commonDir, key string) string {
	return filepath.Join(commonDir, "worktrees", key)
}

// KeyOfCheckout finds the key of the worktree whose checkout is at path by
// reading <path>/.git (a file "gitdir: <common-dir>/worktrees/<key>" in a
// linked worktree, a directory in the main checkout). ok is false when path
// holds no checkout of the repository whose common dir is commonDir.
func KeyOfCheckout(commonDir, path string) (key string, ok bool) {
	dotgit := filepath.Join(path, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return "", false
	}
	if fi.IsDir() {
		if same(dotgit, commonDir) {
			return MainKey, true
		}
		return "", false
	}
	gd, err := gitdirOf(dotgit)
	if err != nil {
		return "", false
	}
	if !same(filepath.Dir(gd), filepath.Join(commonDir, "worktrees")) {
		return "", false
	}
	return filepath.Base(gd), true
}

func same(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// checkAdminFiles refuses, before git is asked to list worktrees, an admin
// dir whose files git reads are not regular files: git opens them with a
// blocking open, so a FIFO planted as worktrees/<key>/locked would hang
// `git worktree list` (and every wt command that lists) forever.
func checkAdminFiles(commonDir string) error {
	var bad error
	err := eachAdminDir(commonDir, func(key string) {
		for _, name := range []string{"locked", "gitdir", "HEAD", "commondir"} {
			p := filepath.Join(AdminDir(commonDir, key), name)
			fi, err := os.Stat(p)
			if err == nil && !fi.Mode().IsRegular() && bad == nil {
				bad = decision.Say(decision.InvalidMetadata, "not-regular", p, fi.Mode().Type()).
					WithHint("see what to put aside, and the command that does: wt-admin --repo %s doctor", shell.Word(canonicalOf(commonDir))).
					WithFact("file", p)
			}
		}
	})
	if err != nil {
		return err
	}
	return bad
}

// diagnoseAdminDirs says which worktree keeps git from listing any, when
// git's list failed: an admin dir whose commondir leads elsewhere (git
// stops at one whose path cannot be resolved, "fatal: Invalid path", and
// names no worktree) is GIT_METADATA_UNTRUSTED naming the worktree and
// its repair (brokenCommondir). nil when no admin dir is such.
func diagnoseAdminDirs(commonDir string) *decision.Error {
	var found *decision.Error
	_ = eachAdminDir(commonDir, func(key string) { // Best effort: git's own error stands.
		admin := AdminDir(commonDir, key)
		b, err := readGitFile(filepath.Join(admin, "commondir"))
		if found != nil || err != nil {
			return
		}
		named := strings.TrimRight(string(b), "\r\n")
		if !filepath.IsAbs(named) {
			named = filepath.Join(admin, named)
		}
		top, _ := CheckoutOf(commonDir, key) // unreadable: its admin dir, in the message, names it
		found = brokenCommondir(admin, top, named)
	})
	return found
}

// ListFailed is the error a caller returns when Inventory fails: a refusal
// Inventory made itself (an admin file git would block on) as it is, a
// failure of git as GIT_FAILED.
func ListFailed(err error) error {
	if _, ok := decision.As(err); ok {
		return err
	}
	return decision.SayWrap(decision.GitFailed, err, "list-worktrees")
}
