package install

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// Where wt's gate goes depends on the git that runs (docs/hook-managers.md):
//
//   - git 2.54 and later: hooks defined in configuration (config.go). The
//     hooks dir is left to the user and the hook managers: git runs their
//     hooks itself, after wt's, and none of them can take the gate away
//     by taking core.hooksPath or rewriting the hooks dir.
//   - older gits: shims in a hooks dir. The main checkout uses the hooks
//     dir git uses there (shims beside the hooks they chain, or wt's own
//     dir when a manager's dir is in the working tree, owned.go); every
//     governed worktree has, in its own config (config.worktree), a
//     core.hooksPath naming wt's own dir, which runs the main checkout's
//     hooks after wt's. A manager's install changes only the repository's
//     own config and the hooks dir it finds there (husky sets
//     core.hooksPath, simple-git-hooks rewrites the hooks dir, pre-commit
//     and prek write into it), so it cannot take the gate off a governed
//     worktree; wt's own dir keeps a copy of each shim as HOOK.old, so that
//     lefthook, run inside a governed worktree (where git names wt's dir as
//     the hooks dir), refuses to replace one.
//
// Both ways cost git one hook process per event. Shims in a hooks dir and
// configured hooks together would cost two, so a git that runs configured
// hooks gets only those, unless the repository is also written by an
// older git (wt-hook install --hooks-dir, or a wt command run with one).

// InstallGate installs wt's gate in repository g for the git on PATH,
// recording bin: configured hooks where that git runs them, shims in the
// hooks dir (and in each governed worktree's own config) otherwise or when
// keepHooksDir is set. With configured hooks and without keepHooksDir,
// what an earlier install put in the hooks dir is removed (it would run a
// second time at every event).
func InstallGate(ctx context.Context, g *gitrepo.Repo, bin string, keepHooksDir bool) (Result, error) {
	v, err := gitrepo.GitVersion(ctx)
	if err != nil {
		return Result{}, err
	}
	config := v.ConfigHooks()
	hooksDir := !config || keepHooksDir
	var res Result
	if err := SwitchOn(g.CommonDir); err != nil {
		return res, err
	}
	if config {
		hs, err := InstallConfig(ctx, g, bin)
		res.Hooks = append(res.Hooks, hs...)
		if err != nil {
			return res, err
		}
		res.HooksDir = ConfigDir(g.CommonDir)
	}
	if hooksDir {
		t, err := PlanTarget(ctx, g)
		if err != nil {
			return res, err
		}
		r, err := InstallTarget(ctx, g, t, bin)
		res.HooksDir = r.HooksDir
		res.Hooks, res.Warnings = append(res.Hooks, r.Hooks...), append(res.Warnings, r.Warnings...)
		if err != nil {
			return res, err
		}
		ws, err := EnsureWorktrees(ctx, g, nil)
		res.Worktrees = ws
		return res, err
	}
	// A git that runs configured hooks only: wt's shims in the hooks dir
	// would run the gate twice.
	t, err := PlanTarget(ctx, g)
	if err != nil || !holdsHooksDir(g, t) {
		return res, err
	}
	r, err := UninstallTarget(ctx, g, t)
	res.Warnings = append(res.Warnings, r.Warnings...)
	if err != nil {
		return res, err
	}
	ws, err := RemoveWorktrees(ctx, g)
	res.Worktrees = ws
	if err != nil {
		return res, err
	}
	res.Warnings = append(res.Warnings, fmt.Sprintf("removed wt's shims from the hooks dir (%s): git %s runs wt's configured hooks; if an older git also writes this repository, keep both: wt-hook install --hooks-dir", r.HooksDir, v))
	return res, nil
}

// holdsHooksDir reports whether an earlier install left wt's shims in a
// hooks dir of g (the hooks dir git uses, the common dir's, wt's own); t
// is g's PlanTarget.
func holdsHooksDir(g *gitrepo.Repo, t Target) bool {
	if t.Owned && !t.Takeover {
		return true // core.hooksPath is wt's own dir
	}
	for _, d := range []string{t.Dir, filepath.Join(g.CommonDir, "hooks"), OwnDir(g.CommonDir)} {
		if st, err := Status(d); err == nil && holdsShim(st) {
			return true
		}
	}
	return false
}

// UninstallGate removes every part of wt's gate from g: configured hooks,
// shims in the hooks dirs and the governed worktrees' own core.hooksPath,
// putting back what wt kept or changed.
func UninstallGate(ctx context.Context, g *gitrepo.Repo) (Result, error) {
	hs, err := UninstallConfig(ctx, g)
	if err != nil {
		return Result{Hooks: hs}, err
	}
	ws, err := RemoveWorktrees(ctx, g)
	if err != nil {
		return Result{Hooks: hs, Worktrees: ws}, err
	}
	t, err := PlanTarget(ctx, g)
	if err != nil {
		return Result{Hooks: hs, Worktrees: ws}, err
	}
	res, err := UninstallTarget(ctx, g, t)
	res.Hooks = append(hs, res.Hooks...)
	res.Worktrees = ws
	if err != nil {
		return res, err
	}
	return res, SwitchOff(g.CommonDir)
}

// EnsureGate installs what of wt's gate the git on PATH needs and is not
// in place, recording bin (wt-admin init, wt-exec); installed reports
// whether anything was written. It adds and never removes: a repository
// written by gits of both kinds ends with both.
func EnsureGate(ctx context.Context, g *gitrepo.Repo, bin string) (res Result, installed bool, err error) {
	v, err := gitrepo.GitVersion(ctx)
	if err != nil {
		return res, false, err
	}
	config := v.ConfigHooks()
	hooksDir := !config
	if err := SwitchOn(g.CommonDir); err != nil {
		return res, false, err
	}
	if config {
		m, err := Probe(ctx, g.TopLevel, g.CommonDir)
		if err != nil {
			return res, false, err
		}
		current, err := configCurrent(g.CommonDir, bin)
		if err != nil {
			return res, false, err
		}
		if !current || !m.allByConfig() {
			hs, err := InstallConfig(ctx, g, bin)
			res.Hooks, installed = hs, true
			if err != nil {
				return res, installed, err
			}
		}
		res.HooksDir = ConfigDir(g.CommonDir)
	}
	if hooksDir {
		t, err := PlanTarget(ctx, g)
		if err != nil {
			return res, installed, err
		}
		r, did, err := EnsureTarget(ctx, g, t, bin)
		res.HooksDir = r.HooksDir
		res.Hooks, installed = append(res.Hooks, r.Hooks...), installed || did
		if err != nil {
			return res, installed, err
		}
		if !did && !t.Owned {
			// The shims were in place: wt's own dir, which the governed
			// worktrees use, may still need writing.
			if _, err := installOwn(OwnDir(g.CommonDir), bin, t.Dir, "base"); err != nil {
				return res, installed, err
			}
		}
		ws, err := EnsureWorktrees(ctx, g, nil)
		res.Worktrees = ws
		for _, w := range ws {
			installed = installed || w.Changed != ""
		}
		if err != nil {
			return res, installed, err
		}
	}
	return res, installed, nil
}

// allByConfig reports whether every hook is gated by a configured hook.
func (m Meets) allByConfig() bool {
	for _, h := range m.Hooks {
		if !h.byConfig() {
			return false
		}
	}
	return true
}

// byConfig reports whether a configured hook of wt's runs h's judgement.
func (h HookMeets) byConfig() bool {
	return slices.ContainsFunc(h.By, func(b string) bool { return strings.HasPrefix(b, "hook.") })
}

// configCurrent reports whether ConfigDir holds the current shims for bin.
func configCurrent(common, bin string) (bool, error) {
	for _, h := range Hooks {
		want, err := Render(h, bin)
		if err != nil {
			return false, err
		}
		b, err := safefile.Read(filepath.Join(ConfigDir(common), h), 1<<20, safefile.NoFollow)
		if err != nil || string(b) != want {
			return false, nil
		}
	}
	return true, nil
}

// WorktreeState is one governed worktree's own core.hooksPath.
type WorktreeState struct {
	Path string `json:"path"`
	Key  string `json:"key"`
	// HooksPath is its value ("" unset).
	HooksPath string `json:"hooks_path"`
	Changed   string `json:"changed,omitempty"`
}

// governed lists the linked worktrees wt records (ACTIVE and RETAINED
// allocations), from the store; none when the repository has no store.
func governed(common string) ([]store.Allocation, error) {
	s, err := store.Open(common)
	if err != nil {
		if decision.CodeOf(err) == decision.NotInitialized {
			return nil, nil
		}
		return nil, err
	}
	var out []store.Allocation
	err = s.Read(func(tx *store.Tx) error {
		all, err := tx.Allocations()
		for _, a := range all {
			if a.WorktreeKey != gitrepo.MainKey && a.WorktreeKey != "" && a.Lifecycle != store.Released {
				out = append(out, a)
			}
		}
		return err
	})
	return out, err
}

// EnsureWorktrees gives each governed worktree (only: the one of only,
// when not nil) a core.hooksPath of its own naming wt's own hooks dir, in
// its config.worktree (extensions.worktreeConfig on). A worktree whose
// checkout is gone, or whose git files wt does not trust, is skipped and
// said so.
func EnsureWorktrees(ctx context.Context, g *gitrepo.Repo, only *store.Allocation) ([]WorktreeState, error) {
	list := []store.Allocation{}
	if only != nil {
		list = append(list, *only)
	} else {
		var err error
		if list, err = governed(g.CommonDir); err != nil {
			return nil, err
		}
	}
	own := OwnDir(g.CommonDir)
	var out []WorktreeState
	enabled := false
	for _, a := range list {
		w := WorktreeState{Path: a.WorktreePath, Key: a.WorktreeKey}
		if _, err := os.Stat(a.WorktreePath); err != nil {
			w.Changed = "skipped: its checkout is not there"
			out = append(out, w)
			continue
		}
		cur, err := worktreeHooksPath(ctx, g, a)
		if err != nil {
			w.Changed = "skipped: " + err.Error()
			out = append(out, w)
			continue
		}
		w.HooksPath = cur
		if cur == own {
			out = append(out, w)
			continue
		}
		if !enabled {
			if err := enableWorktreeConfig(ctx, g); err != nil {
				return out, decision.SayWrap(decision.GitFailed, err, "turn-per")
			}
			enabled = true
		}
		if err := setWorktreeHooksPath(ctx, g, a, own); err != nil {
			return out, decision.SayWrap(decision.GitFailed, err, "set-core", a.WorktreePath)
		}
		w.HooksPath, w.Changed = own, "core.hooksPath set to wt's own hooks dir"
		out = append(out, w)
	}
	return out, nil
}

// enableWorktreeConfig turns extensions.worktreeConfig on in the
// repository's config. Another wt-exec --task started at the same time
// may hold that file's lock: it is waited out, and the setting the other
// process made is taken as made.
func enableWorktreeConfig(ctx context.Context, g *gitrepo.Repo) error {
	for tries := 0; ; tries++ {
		_, err := g.Git(ctx, false, "config", "--local", "extensions.worktreeConfig", "true")
		if err == nil || !configLocked(err) || tries == 20 {
			return err
		}
		if v, gerr := g.Git(ctx, false, "config", "--local", "--get", "extensions.worktreeConfig"); gerr == nil && strings.TrimSpace(string(v)) == "true" {
			return nil
		}
		waitGone(ctx, filepath.Join(g.CommonDir, "config.lock"))
	}
}

// setWorktreeHooksPath sets core.hooksPath in a's config.worktree. git
// reads every worktree's metadata to write it, and fails on one that
// another process's git worktree add has made and not yet filled
// ("failed to read .../worktrees/NAME/commondir"): ten agents started at
// once allocate side by side. Such a failure is waited out, for that
// file to appear or its worktree to go, and the write made again; any
// other failure is returned.
//
// Another wt-exec --task, started at the same time, may be setting the
// same value in the same file (each makes sure every governed worktree
// has it): git then finds the file's lock taken ("could not lock config
// file"). That is waited out too, for the lock to go, and a value the
// other process set is taken as set.
func setWorktreeHooksPath(ctx context.Context, g *gitrepo.Repo, a store.Allocation, own string) error {
	for tries := 0; ; tries++ {
		_, err := g.GitIn(ctx, a.WorktreeKey, a.WorktreePath, false, "config", "--worktree", "core.hooksPath", own)
		if configLocked(err) && tries < 20 {
			if cur, rerr := worktreeHooksPath(ctx, g, a); rerr == nil && cur == own {
				return nil // the other process set it
			}
			waitGone(ctx, filepath.Join(gitrepo.AdminDir(g.CommonDir, a.WorktreeKey), "config.worktree.lock"))
			continue
		}
		half := halfMadeWorktree(err)
		if err == nil || half == "" || tries == 20 {
			return err
		}
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(half); err == nil {
				break
			}
			if _, err := os.Stat(filepath.Dir(half)); err != nil {
				break
			}
		}
	}
}

// configLocked reports whether git failed because another git holds the
// lock of the config file it was to write ("could not lock config file
// PATH: File exists"; PATH as git names it, relative or not).
func configLocked(err error) bool {
	return err != nil && strings.Contains(err.Error(), "could not lock config file ")
}

// waitGone waits, for up to 5 s, until path is gone (a lock another git
// holds for the time of one write).
func waitGone(ctx context.Context, path string) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			return
		}
	}
}

// halfMadeWorktree is the metadata file of another worktree that git
// failed to read, from git's error, "" when err is not that.
func halfMadeWorktree(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	_, rest, ok := strings.Cut(msg, "failed to read ")
	if !ok {
		return ""
	}
	p, _, _ := strings.Cut(rest, ":")
	p = strings.TrimSpace(p)
	if !filepath.IsAbs(p) || !strings.Contains(p, string(filepath.Separator)+"worktrees"+string(filepath.Separator)) {
		return ""
	}
	if b := filepath.Base(p); b != "commondir" && b != "gitdir" {
		return ""
	}
	return p
}

// RemoveWorktrees takes wt's own hooks dir out of every governed
// worktree's own config (a value someone else set is left).
func RemoveWorktrees(ctx context.Context, g *gitrepo.Repo) ([]WorktreeState, error) {
	list, err := governed(g.CommonDir)
	if err != nil {
		return nil, err
	}
	own := OwnDir(g.CommonDir)
	var out []WorktreeState
	for _, a := range list {
		cur, err := worktreeHooksPath(ctx, g, a)
		if err != nil || cur != own {
			continue
		}
		if _, err := g.GitIn(ctx, a.WorktreeKey, a.WorktreePath, false, "config", "--worktree", "--unset-all", "core.hooksPath"); err != nil {
			return out, decision.SayWrap(decision.GitFailed, err, "unset-core", a.WorktreePath)
		}
		out = append(out, WorktreeState{Path: a.WorktreePath, Key: a.WorktreeKey, Changed: "its own core.hooksPath removed"})
	}
	return out, nil
}

// worktreeHooksPath is core.hooksPath in the worktree's own config.worktree
// ("" when unset), read from the file in its admin dir as git would
// (git config --file).
func worktreeHooksPath(ctx context.Context, g *gitrepo.Repo, a store.Allocation) (string, error) {
	if err := gitrepo.VerifyMetadata(g.CommonDir, a.WorktreeKey, a.WorktreePath); err != nil {
		return "", err
	}
	p := filepath.Join(gitrepo.AdminDir(g.CommonDir, a.WorktreeKey), "config.worktree")
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	out, err := g.Git(ctx, true, "config", "--file", p, "--get", "core.hooksPath")
	var ge *gitrepo.Error
	if errors.As(err, &ge) && ge.ExitCode == 1 {
		return "", nil
	}
	if err != nil {
		return "", decision.SayWrap(decision.GitFailed, err, "read", p)
	}
	return strings.TrimRight(string(out), "\n"), nil
}

// StatusGate reads wt's gate in g: its configured hooks, the hooks dir git
// uses in the main checkout (before wt takes a manager's core.hooksPath
// back: what git runs now), the governed worktrees' own core.hooksPath, and
// what a commit in the checkout g was found from meets. Under a git that
// runs no configured hooks (before 2.54) a configured hook is listed only
// when something of it is there (a newer git wrote it), as not used.
func StatusGate(ctx context.Context, g *gitrepo.Repo) (Result, error) {
	var res Result
	local, err := readLocalConfig(ctx, g)
	if err != nil {
		return res, err
	}
	gv, err := gitrepo.GitVersion(ctx)
	if err != nil {
		return res, err
	}
	for _, h := range Hooks {
		st := HookState{Hook: h, Path: filepath.Join(ConfigDir(g.CommonDir), h), Via: ViaConfig, Config: "hook." + ConfigName(h), State: "missing"}
		p, ok := commandPath(local.value("hook." + ConfigName(h) + ".command"))
		registered := ok && p == st.Path && local.value("hook."+ConfigName(h)+".event") == h
		b, err := safefile.Read(st.Path, 1<<20, safefile.NoFollow)
		v, bin, shim := 0, "", false
		if err == nil {
			v, bin, shim = Recognize(h, b)
		}
		switch {
		case registered && shim:
			st.State, st.ShimVersion, st.Binary = "wt", v, bin
		case registered:
			st.State = "foreign"
			st.Changed = "registered, but its command is not a wt shim"
		case shim:
			st.Changed = "a wt shim that no configured hook runs"
		}
		if _, off := local.off("hook." + ConfigName(h) + ".enabled"); registered && off {
			st.Changed = "switched off (hook." + ConfigName(h) + ".enabled)"
		}
		if !gv.ConfigHooks() {
			if !registered && !shim {
				continue // nothing there, and nothing this git would run
			}
			st.Changed = strings.TrimPrefix(st.Changed+"; not used by git "+gv.String()+" (2.54 and later run it)", "; ")
		}
		res.Hooks = append(res.Hooks, st)
	}
	t, err := PlanTarget(ctx, g)
	if err != nil {
		return res, err
	}
	dir := t.Dir
	if t.Takeover {
		dir = t.Before
		res.Warnings = append(res.Warnings, "core.hooksPath is "+t.Chain+", not wt's own hooks dir: wt-hook install takes it, and runs its hooks after wt's gate")
	}
	r, err := Status(dir)
	if err != nil {
		return res, err
	}
	res.HooksDir, res.Hooks = dir, append(res.Hooks, r.Hooks...)
	if list, err := governed(g.CommonDir); err == nil {
		for _, a := range list {
			cur, err := worktreeHooksPath(ctx, g, a)
			w := WorktreeState{Path: a.WorktreePath, Key: a.WorktreeKey, HooksPath: cur}
			if err != nil {
				w.Changed = "unreadable: " + err.Error()
			}
			res.Worktrees = append(res.Worktrees, w)
		}
	}
	m, err := Probe(ctx, g.TopLevel, g.CommonDir)
	if err != nil {
		return res, err
	}
	res.Meets = &m
	return res, nil
}

// PrepareWorktree readies a worktree wt just made or adopted (allocation
// a) for the gate: under a git that needs the hooks dir, wt's own hooks
// dir as its own core.hooksPath, when wt's gate is installed that way; and
// a hook manager's generated hooks dir that the working tree lacks (husky's
// .husky/_, untracked and ignored) copied from the main checkout, so that
// the manager's hooks run there too. What it did is returned, to be said.
func PrepareWorktree(ctx context.Context, g *gitrepo.Repo, a store.Allocation) ([]string, error) {
	var did []string
	v, err := gitrepo.GitVersion(ctx)
	if err != nil {
		return nil, err
	}
	if !v.ConfigHooks() {
		if _, err := os.Stat(filepath.Join(OwnDir(g.CommonDir), "reference-transaction")); err == nil {
			ws, err := EnsureWorktrees(ctx, g, &a)
			if err != nil {
				return did, err
			}
			for _, w := range ws {
				if w.Changed != "" {
					did = append(did, fmt.Sprintf("%s: %s", w.Path, w.Changed))
				}
			}
		}
	}
	copied, err := copyManagerDir(ctx, g, a.WorktreePath)
	if copied != "" {
		did = append(did, copied)
	}
	return did, err
}

// copyManagerDir copies into the checkout at path the hooks dir a hook
// manager generated in the main checkout (core.hooksPath relative, the
// directory there ignored by git: husky's .husky/_), when path has none:
// git resolves a relative core.hooksPath in each worktree, and a worktree
// made after the manager ran has nothing there, so no hook of the
// manager's would run in it. Only regular files are copied.
func copyManagerDir(ctx context.Context, g *gitrepo.Repo, path string) (string, error) {
	base := baseRepo(g)
	raw, err := configValue(ctx, base, "")
	if err == nil && raw == OwnDir(g.CommonDir) {
		// wt took core.hooksPath (git before 2.54): the manager's is the
		// one wt's own dir runs.
		raw, _, err = readChain(raw)
	}
	if err != nil || raw == "" || filepath.IsAbs(raw) || strings.HasPrefix(raw, "~") {
		return "", err
	}
	rel := filepath.Clean(raw)
	if rel == "." || strings.HasPrefix(rel, "..") {
		return "", nil
	}
	src, dst := filepath.Join(base.TopLevel, rel), filepath.Join(path, rel)
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() || gitrepo.SameFile(src, dst) {
		return "", nil
	}
	if _, err := os.Lstat(dst); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	// Generated, not tracked: git ignores the directory's files.
	if _, err := base.Git(ctx, true, "check-ignore", "-q", "--", filepath.Join(rel, "x")); err != nil {
		return "", nil
	}
	if err := copyRegular(src, dst); err != nil {
		return "", decision.SayWrap(decision.Internal, err, "copy", src, dst)
	}
	return fmt.Sprintf("%s: copied %s from the main checkout (the hook manager's generated hooks dir, core.hooksPath %s)", path, rel, raw), nil
}

// RefreshManagerDir puts worktree c's copy of the hook manager's
// generated hooks dir (the in-tree dir wt's own hooks chain to, husky's
// .husky/_: untracked, one per worktree) back to the main checkout's when
// they differ: a run that changed it there (a confined agent may write its
// worktree) would have its code run by the next commit made in the
// worktree, the operator's included. The changed copy is kept aside under
// wt's store (quarantine/<key>/), and what was done is said ("" when
// nothing was). It runs no git: the chain is read from wt's own hooks dir.
func RefreshManagerDir(c gitrepo.Checkout) (string, error) {
	src, dst, rel, differ, err := ManagerDirDrift(c)
	if err != nil || len(differ) == 0 {
		return "", err
	}
	keep := filepath.Join(store.Root(c.CommonDir), "quarantine", c.Key, time.Now().UTC().Format("20060102T150405.000000000Z"), "worktree", rel)
	if err := os.MkdirAll(filepath.Dir(keep), 0o700); err != nil {
		return "", err
	}
	if err := os.Rename(dst, keep); err != nil {
		return "", err
	}
	if err := copyRegular(src, dst); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s: the hooks %s that wt's hooks run there differed from the main checkout's (%s): put back from it; the changed copy is kept in %s",
		c.TopLevel, rel, strings.Join(differ, ", "), keep), nil
}

// ManagerDirDrift compares worktree c's copy of the hook manager's
// generated hooks dir (rel, in the worktree at dst) with the main
// checkout's (src): differ lists what is not as the main checkout has it
// (RefreshManagerDir). Nothing when there is no such dir.
func ManagerDirDrift(c gitrepo.Checkout) (src, dst, rel string, differ []string, err error) {
	if c.Key == gitrepo.MainKey || c.TopLevel == "" {
		return "", "", "", nil, nil
	}
	raw, _, err := readChain(OwnDir(c.CommonDir))
	if err != nil || raw == "" {
		// wt did not take core.hooksPath (git 2.54 and later run wt's
		// gate from configuration): git runs the manager's dir itself.
		raw = repoHooksPath(c.CommonDir)
	}
	if raw == "" || filepath.IsAbs(raw) || strings.HasPrefix(raw, "~") {
		return "", "", "", nil, nil // no chain, or one outside the worktrees: nothing of the run's
	}
	rel = filepath.Clean(raw)
	if rel == "." || strings.HasPrefix(rel, "..") || filepath.Base(c.CommonDir) != ".git" {
		return "", "", "", nil, nil
	}
	src, dst = filepath.Join(filepath.Dir(c.CommonDir), rel), filepath.Join(c.TopLevel, rel)
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() || gitrepo.SameFile(src, dst) {
		return "", "", "", nil, nil
	}
	differ, err = treeDrift(src, dst)
	return src, dst, rel, differ, err
}

// repoHooksPath is core.hooksPath as the repository's own config (the
// common dir's config file) sets it, read without git ("" when unset or
// unreadable): only a relative one matters here, one in each worktree.
func repoHooksPath(common string) string {
	b, err := safefile.Read(filepath.Join(common, "config"), 1<<20, safefile.Follows)
	if err != nil {
		return ""
	}
	section, value := "", ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			section = strings.ToLower(strings.TrimSpace(line[1:end]))
			line = strings.TrimSpace(line[end+1:])
		}
		name, v, ok := strings.Cut(line, "=")
		if ok && section == "core" && strings.EqualFold(strings.TrimSpace(name), "hookspath") {
			value = strings.Trim(strings.TrimSpace(v), "\"")
		}
	}
	return value
}

// treeDrift lists the files of dst that are not as src has them: another
// content or mode, not a regular file, or not in src at all.
func treeDrift(src, dst string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == dst {
				return filepath.SkipAll
			}
			return err
		}
		rel, _ := filepath.Rel(dst, p)
		if d.IsDir() {
			return nil
		}
		sfi, serr := os.Lstat(filepath.Join(src, rel))
		dfi, derr := d.Info()
		if serr != nil || derr != nil || !d.Type().IsRegular() || !sfi.Mode().IsRegular() || sfi.Mode().Perm() != dfi.Mode().Perm() {
			out = append(out, rel)
			return nil
		}
		a, err1 := safefile.Read(filepath.Join(src, rel), 16<<20, safefile.NoFollow)
		b, err2 := safefile.Read(p, 16<<20, safefile.NoFollow)
		if err1 != nil || err2 != nil || string(a) != string(b) {
			out = append(out, rel)
		}
		return nil
	})
	return out, err
}

// copyRegular copies the regular files and directories under src to dst
// (which must not exist), with their modes; anything else is skipped.
func copyRegular(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm())
		case info.Mode().IsRegular():
			b, err := safefile.Read(p, 16<<20, safefile.NoFollow)
			if err != nil {
				return err
			}
			return writeFile(target, string(b), info.Mode().Perm())
		}
		return nil
	})
}

// CheckGate reports what does not gate as it should in g, for the git on
// PATH: wt's configured hooks (git 2.54 and later) or its shims in the
// hooks dir, each hook's current shim and binary, and, asked of git in
// each governed worktree, whether a commit there meets wt's
// reference-transaction gate (a worktree's own configuration may switch
// it off). dir is where the gate lives. No git is asked in a worktree
// whose key is in unsafe: its admin dir holds what git would trip on (a
// FIFO as HEAD hangs it), and the caller reports that instead.
func CheckGate(ctx context.Context, g *gitrepo.Repo, unsafe map[string]bool) (dir string, problems []Problem, err error) {
	v, err := gitrepo.GitVersion(ctx)
	if err != nil {
		return "", nil, err
	}
	config := v.ConfigHooks()
	hooksDir := !config
	fix := GateFix(g.TopLevel)
	if config {
		dir = ConfigDir(g.CommonDir)
		m, err := Probe(ctx, g.TopLevel, g.CommonDir)
		if err != nil {
			return dir, nil, err
		}
		for _, h := range m.Hooks {
			if !h.byConfig() {
				problems = append(problems, Problem{Hook: h.Hook, Path: "hook." + ConfigName(h.Hook),
					Message: fmt.Sprintf("git %s runs no hook of wt's for %s through its configuration: %s", v, h.Hook, strings.Join(h.Off, "; ")), Fix: m.Fix(h.Hook, g.TopLevel)})
			}
		}
		ps, err := Check(dir)
		if err != nil {
			return dir, problems, err
		}
		for _, p := range ps {
			if p.Outdated || strings.Contains(p.Message, "not an executable file") {
				problems = append(problems, p)
			}
		}
	}
	t, err := PlanTarget(ctx, g)
	if err != nil {
		return dir, problems, err
	}
	if hooksDir || holdsHooksDir(g, t) {
		ps, err := CheckTarget(t)
		if err != nil {
			return dir, problems, err
		}
		if dir == "" {
			dir = t.Dir
			if t.Takeover {
				dir = t.Before
			}
		}
		problems = append(problems, ps...)
	}
	for _, p := range problems {
		if p.Hook == "reference-transaction" && !p.Outdated {
			// The repository's gate is off: every worktree's with it.
			return dir, withFix(problems, fix), nil
		}
	}
	list, err := governed(g.CommonDir)
	if err != nil {
		return dir, problems, err
	}
	for _, a := range list {
		if a.Role != store.RoleFeature {
			continue
		}
		if fi, err := os.Stat(a.WorktreePath); err != nil || !fi.IsDir() {
			continue // a checkout that is gone: doctor's gates say so
		}
		if unsafe[a.WorktreeKey] || gitrepo.VerifyMetadata(g.CommonDir, a.WorktreeKey, a.WorktreePath) != nil {
			continue // git there would not be wt's to ask: doctor's gates say so
		}
		// What a commit there meets: kept by wt-exec or allocate while
		// nothing it was read from changed (GateState), else asked of git.
		c := gitrepo.Checkout{TopLevel: a.WorktreePath, GitDir: gitrepo.AdminDir(g.CommonDir, a.WorktreeKey), CommonDir: g.CommonDir, Key: a.WorktreeKey}
		by, why, fix, err := GateState(ctx, c)
		if err != nil {
			return dir, problems, err
		}
		if by == "" {
			problems = append(problems, Problem{Hook: "reference-transaction", Path: a.WorktreePath,
				Message: fmt.Sprintf("commits in %s (task %s) meet no gate: %s", a.WorktreePath, a.TaskKey, why), Fix: fix})
		}
	}
	return dir, withFix(problems, fix), nil
}

// withFix gives each problem without a fix of its own the fix given.
func withFix(problems []Problem, fix string) []Problem {
	for i := range problems {
		if problems[i].Fix == "" {
			problems[i].Fix = fix
		}
	}
	return problems
}

// GateFix is the command that puts wt's gate back in the repository of the
// checkout at dir.
func GateFix(dir string) string { return fmt.Sprintf("wt-hook -C %s install", shell.Word(dir)) }
