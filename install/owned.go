package install

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/safefile"
)

// A hook manager that keeps its hooks in the working tree (husky 9 sets
// core.hooksPath to .husky/_, an untracked directory a new worktree lacks;
// a tracked .githooks/ differs from commit to commit) gives every worktree
// a hooks dir of its own, or none. wt then takes core.hooksPath: its shims
// live in one directory of the common dir, which every worktree shares,
// and run the manager's hook of the same name from the manager's dir, by
// the path git would have run it by (husky's dispatcher picks the script
// by its own file name). The manager's dir is recorded in wt-chain-dir;
// wt-hook uninstall puts core.hooksPath back as it was.

// OwnDirName is wt's own hooks dir, in the common dir.
const OwnDirName = gitrepo.OwnHooksDirName

// chainFile, in wt's own hooks dir, holds the hooks path wt took over (as
// configured, relative or not) and whether it was the repository's own
// setting ("local") or came from a wider config ("inherited").
const chainFile = "wt-chain-dir"

// ForwardHooks are the hooks a manager may run that wt does not judge: in
// its own hooks dir wt writes a forwarder for each, which runs the
// manager's hook (husky's list of client hooks).
var ForwardHooks = []string{"applypatch-msg", "commit-msg", "post-applypatch", "post-commit", "post-merge",
	"post-rewrite", "pre-applypatch", "pre-auto-gc", "pre-merge-commit", "pre-rebase", "prepare-commit-msg"}

// BackupSuffixes are the names hook managers keep a hook they replace
// under: pre-commit's HOOK.legacy (which it runs), lefthook's HOOK.old
// (which it does not). A wt shim found there is wt's to remove.
var BackupSuffixes = []string{".legacy", ".old"}

// Target is where wt's shims go for a repository.
type Target struct {
	// Dir is the hooks dir the shims go in.
	Dir string `json:"hooks_dir"`
	// Owned: Dir is wt's own (core.hooksPath is, or is to be, Dir).
	Owned bool `json:"owned,omitempty"`
	// Chain is the hooks path of the manager whose hooks the shims run
	// (Owned only; "" when none), as configured.
	Chain string `json:"chain,omitempty"`
	// ChainLocal: Chain was set in the repository's own config.
	ChainLocal bool `json:"chain_local,omitempty"`
	// Takeover: core.hooksPath is still the manager's; install sets it.
	Takeover bool `json:"-"`
	// Before is the hooks dir git used before a takeover, in this worktree.
	Before string `json:"-"`
}

// OwnDir is wt's own hooks dir of the repository with common dir common.
func OwnDir(common string) string { return filepath.Join(common, OwnDirName) }

// PlanTarget works out where the shims of the repository g go: wt's own
// hooks dir when core.hooksPath is it, or is relative, or lies inside the
// working tree; else the hooks dir git uses (the common dir's hooks, or an
// absolute core.hooksPath outside the tree, shared by every worktree).
//
// It is worked out as in the main checkout: a governed worktree's own
// core.hooksPath (config.worktree) names wt's own dir, and says nothing of
// where the repository's hooks are.
func PlanTarget(ctx context.Context, g *gitrepo.Repo) (Target, error) {
	g = baseRepo(g)
	own := OwnDir(g.CommonDir)
	raw, err := configValue(ctx, g, "")
	if err != nil {
		return Target{}, err
	}
	if raw == own {
		t := Target{Dir: own, Owned: true}
		t.Chain, t.ChainLocal, err = readChain(own)
		return t, err
	}
	if raw != "" && managedInTree(raw, g.TopLevel) {
		local, err := configValue(ctx, g, "--local")
		if err != nil {
			return Target{}, err
		}
		before, _, err := HooksDirOf(ctx, g)
		if err != nil {
			return Target{}, err
		}
		return Target{Dir: own, Owned: true, Chain: raw, ChainLocal: local == raw, Takeover: true, Before: before}, nil
	}
	// What git would answer, without asking it again: the common dir's
	// hooks when core.hooksPath is unset, the path itself when absolute
	// (git expands a leading ~ itself: asked).
	switch {
	case raw == "":
		return Target{Dir: filepath.Join(g.CommonDir, "hooks")}, nil
	case filepath.IsAbs(raw):
		return Target{Dir: filepath.Clean(raw)}, nil
	}
	dir, _, err := HooksDirOf(ctx, g)
	return Target{Dir: dir}, err
}

// baseRepo is the repository g seen from its main checkout (a common dir
// named .git beside it), or g itself when there is none.
func baseRepo(g *gitrepo.Repo) *gitrepo.Repo {
	if filepath.Base(g.CommonDir) != ".git" {
		return g
	}
	top := filepath.Dir(g.CommonDir)
	if fi, err := os.Stat(top); err != nil || !fi.IsDir() {
		return g
	}
	return &gitrepo.Repo{CommonDir: g.CommonDir, GitDir: g.CommonDir, TopLevel: top}
}

// managedInTree reports whether a core.hooksPath value names a directory
// that differs between worktrees: relative (git resolves it in each
// worktree's root) or inside the working tree.
func managedInTree(raw, top string) bool {
	if strings.HasPrefix(raw, "~") {
		return false
	}
	if !filepath.IsAbs(raw) {
		return true
	}
	p := filepath.Clean(raw)
	return p == top || strings.HasPrefix(p, top+string(filepath.Separator))
}

// configValue is core.hooksPath as git reads it ("" when unset); scope is
// "" (every config) or "--local".
//
// A value in a worktree's own config (config.worktree) is not counted:
// that is where wt points a governed worktree at its own hooks dir.
func configValue(ctx context.Context, g *gitrepo.Repo, scope string) (string, error) {
	args := []string{"config"}
	if scope != "" {
		args = append(args, scope)
	}
	out, err := g.Git(ctx, true, append(args, "--show-scope", "-z", "--get-all", "core.hooksPath")...)
	var ge *gitrepo.Error
	if errors.As(err, &ge) && ge.ExitCode == 1 {
		return "", nil // unset
	}
	if err != nil {
		return "", decision.SayWrap(decision.GitFailed, err, "read-core")
	}
	// "SCOPE\0VALUE\0" for each value, in git's order: the last wins.
	value := ""
	f := strings.Split(string(out), "\x00")
	for i := 0; i+1 < len(f); i += 2 {
		if f[i] != "worktree" {
			value = f[i+1]
		}
	}
	return value, nil
}

func readChain(own string) (chain string, local bool, err error) {
	b, err := safefile.Read(filepath.Join(own, chainFile), 1<<16, safefile.NoFollow)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, decision.SayWrap(decision.HookConflict, err, "read", filepath.Join(own, chainFile))
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 2 {
		return "", false, decision.Say(decision.HookConflict, "not-wt-hooks", filepath.Join(own, chainFile))
	}
	return lines[0], lines[1] == "local", nil
}

// InstallTarget writes wt's shims where t says, recording bin. Into its own
// hooks dir it also writes the forwarders and the chain file, then (a
// takeover) sets core.hooksPath; wt shims an older wt left in the
// manager's dir (wt-hook install --force) are removed first, putting the
// manager's hooks back byte for byte.
func InstallTarget(ctx context.Context, g *gitrepo.Repo, t Target, bin string) (Result, error) {
	if !t.Owned {
		res, err := Install(t.Dir, bin)
		if err != nil {
			return res, err
		}
		// The governed worktrees' dir: wt's own, running t.Dir's hooks.
		_, err = installOwn(OwnDir(g.CommonDir), bin, t.Dir, "base")
		return res, err
	}
	if t.Takeover && t.Before != "" && t.Before != t.Dir {
		if st, err := Status(t.Before); err == nil && holdsShim(st) {
			if _, err := Uninstall(t.Before); err != nil {
				return Result{HooksDir: t.Dir}, err
			}
		}
	}
	scope := "inherited"
	if t.ChainLocal {
		scope = "local"
	}
	res, err := installOwn(t.Dir, bin, t.Chain, scope)
	if err != nil {
		return res, err
	}
	if t.Takeover {
		if _, err := g.Git(ctx, false, "config", "--local", "core.hooksPath", t.Dir); err != nil {
			return res, decision.SayWrap(decision.GitFailed, err, "set-core-hookspath", t.Dir)
		}
		for i := range res.Hooks {
			res.Hooks[i].Changed += "; core.hooksPath was " + t.Chain + ", whose hook runs after wt's gate"
		}
	}
	return res, nil
}

// installOwn writes wt's own hooks dir: the chain file (chain, the hooks
// dir whose hooks the shims run after judging, with scope: "local" or
// "inherited" for a hooks path wt took over, "base" for the hooks dir the
// main checkout uses), the shims, a copy of each shim as HOOK.old (lefthook
// will not replace a hook whose .old name is taken), and a forwarder for
// every hook a manager may run that wt does not judge.
func installOwn(dir, bin, chain, scope string) (Result, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Result{HooksDir: dir}, decision.SayWrap(decision.Internal, err, "create", dir)
	}
	if chain != "" {
		if err := writeFile(filepath.Join(dir, chainFile), chain+"\n"+scope+"\n", 0o644); err != nil {
			return Result{HooksDir: dir}, err
		}
	}
	res, err := Install(dir, bin)
	if err != nil {
		return res, err
	}
	for _, h := range Hooks {
		shim, err := Render(h, bin)
		if err != nil {
			return res, err
		}
		p := filepath.Join(dir, h+".old")
		if cur, err := safefile.Read(p, 1<<20, safefile.NoFollow); err == nil && string(cur) == shim {
			continue
		} else if err == nil {
			if _, _, ok := Recognize(h, cur); !ok {
				continue // someone else's .old: theirs
			}
		}
		if err := writeExec(p, shim); err != nil {
			return res, err
		}
	}
	return res, syncForwarders(dir, chain)
}

// syncForwarders gives wt's own hooks dir a forwarder for each hook wt
// does not judge that the chained hooks dir has (a forwarder is a process
// git starts at every such event, and git runs one for a hook that is
// there only), and removes wt's forwarders of hooks it no longer has.
// A chain that cannot be looked in gets them all.
func syncForwarders(dir, chain string) error {
	t, err := template("forward")
	if err != nil {
		return err
	}
	fwd := seal(t)
	for _, h := range ForwardHooks {
		p := filepath.Join(dir, h)
		cur, err := safefile.Read(p, 1<<20, safefile.NoFollow)
		switch {
		case err == nil && !IsForwarder(cur):
			return decision.Say(decision.HookConflict, "wt-own", p).
				WithHint("move it into the hook manager's dir (%s), then run wt-hook install again", chain)
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return decision.SayWrap(decision.Internal, err, "read", p)
		}
		if !chainHas(dir, chain, h) {
			if err == nil {
				if err := os.Remove(p); err != nil {
					return decision.SayWrap(decision.Internal, err, "remove", p)
				}
			}
			continue
		}
		if err == nil && string(cur) == fwd {
			continue
		}
		if err := writeExec(p, fwd); err != nil {
			return err
		}
	}
	return nil
}

// chainHas reports whether the chained hooks dir (as configured: a
// relative one is the main checkout's, beside the common dir that holds
// wt's own dir) has an executable hook. Unknown is yes.
func chainHas(dir, chain, hook string) bool {
	if chain == "" {
		return false
	}
	if !filepath.IsAbs(chain) {
		common := filepath.Dir(dir)
		if filepath.Base(common) != ".git" {
			return true
		}
		chain = filepath.Join(filepath.Dir(common), chain)
	}
	fi, err := os.Stat(filepath.Join(chain, hook))
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	return fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// UninstallTarget removes wt's shims where t says. From its own hooks dir
// (in use or not) it removes the shims, the forwarders and the chain file,
// puts core.hooksPath back as it was before wt took it, and removes the
// dir. Anything there that is not wt's is left, and the dir with it.
func UninstallTarget(ctx context.Context, g *gitrepo.Repo, t Target) (Result, error) {
	own := OwnDir(g.CommonDir)
	var res Result
	var err error
	if !t.Owned {
		if res, err = Uninstall(t.Dir); err != nil {
			return res, err
		}
	} else if t.Takeover {
		// The manager took core.hooksPath back: wt's dir is not in use.
		if res, err = Uninstall(t.Before); err != nil {
			return res, err
		}
	} else {
		chain, local, err := readChain(own)
		if err != nil {
			return Result{HooksDir: own}, err
		}
		args := []string{"config", "--local", "--unset", "core.hooksPath"}
		if local {
			args = []string{"config", "--local", "core.hooksPath", chain}
		}
		if _, err := g.Git(ctx, false, args...); err != nil {
			return Result{HooksDir: own}, decision.SayWrap(decision.GitFailed, err, "put-core")
		}
		res = Result{HooksDir: own}
	}
	// The common dir's own hooks dir, where an install before a manager
	// set core.hooksPath put the shims.
	if plain := filepath.Join(g.CommonDir, "hooks"); plain != res.HooksDir {
		if st, err := Status(plain); err == nil && holdsShim(st) {
			if _, err := Uninstall(plain); err != nil {
				return res, err
			}
			res.Warnings = append(res.Warnings, "also removed wt's shims from "+plain+", where an earlier install put them")
		}
	}
	if _, err := os.Stat(own); err != nil {
		return res, nil
	}
	ownRes, err := Uninstall(own)
	if err != nil {
		return res, err
	}
	if t.Owned && !t.Takeover {
		ownRes.Warnings = append(res.Warnings, ownRes.Warnings...) // the common dir's removal, said above
		res = ownRes
		for i := range res.Hooks {
			res.Hooks[i].Changed += "; core.hooksPath is back as it was"
		}
	}
	for _, h := range ForwardHooks {
		p := filepath.Join(own, h)
		if b, err := safefile.Read(p, 1<<20, safefile.NoFollow); err == nil && IsForwarder(b) {
			if err := os.Remove(p); err != nil {
				return res, decision.SayWrap(decision.Internal, err, "remove", p)
			}
		}
	}
	if err := os.Remove(filepath.Join(own, chainFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return res, decision.SayWrap(decision.Internal, err, "remove", filepath.Join(own, chainFile))
	}
	if err := os.Remove(own); err != nil && !errors.Is(err, fs.ErrNotExist) {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s keeps files that are not wt's: left as they are", own))
	}
	return res, nil
}

func holdsShim(st Result) bool {
	for _, h := range st.Hooks {
		if h.State == "wt" {
			return true
		}
	}
	return false
}

func writeFile(path, content string, mode os.FileMode) error {
	if err := safefile.Replace(path, []byte(content), mode); err != nil {
		return decision.SayWrap(decision.Internal, err, "write", path)
	}
	return nil
}

// CheckTarget is Check for a target: a hooks path that wt has still to
// take over (a manager set it, or took it back) is itself the problem.
func CheckTarget(t Target) ([]Problem, error) {
	if t.Takeover {
		return []Problem{{Hook: "core.hooksPath", Path: t.Chain,
			Message: "core.hooksPath is " + t.Chain + ", a hook manager's dir inside the working tree that wt's shims are not in: worktrees without it have no gate"}}, nil
	}
	return Check(t.Dir)
}

// Ungated says, as a HOOKS_MISSING line with its fix, when commits in the
// worktree at dir would not be gated ("" when they are): git there runs
// none of wt's reference-transaction shims.
func Ungated(ctx context.Context, dir string) string {
	c, err := gitrepo.Locate(dir)
	if err != nil {
		return decision.HooksMissing + ": " + decision.Words(decision.HooksMissing, "checkout-unreadable", dir, err)
	}
	m, entries, err := probeEntries(ctx, c.TopLevel, c.CommonDir)
	if err != nil {
		return decision.HooksMissing + ": " + decision.Words(decision.HooksMissing, "gate-unknown-in", dir, err)
	}
	if m.Gated("reference-transaction") {
		keepAnswer(c, m, entries, gatedBy(m, "reference-transaction")) // status and the first launch read it
		return ""
	}
	return decision.HooksMissing + ": " + decision.Words(decision.HooksMissing, "not-gated-run", dir, m.Why("reference-transaction"), GateFix(dir))
}
