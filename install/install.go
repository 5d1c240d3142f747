package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/safefile"
)

// ChainSuffix names a foreign hook kept beside wt's shim and run by it.
const ChainSuffix = ".wt-chained"

// HookState is what one hook file holds.
type HookState struct {
	Hook string `json:"hook"`
	Path string `json:"path"`
	// State is "wt" (a wt shim), "foreign" (someone else's hook, not
	// governed), or "missing".
	State string `json:"state"`
	// ShimVersion and Binary describe a wt shim.
	ShimVersion int    `json:"shim_version,omitempty"`
	Binary      string `json:"binary,omitempty"`
	// Chained is the foreign hook kept beside the shim, "" if none.
	Chained string `json:"chained,omitempty"`
	// Changed says what install or uninstall did to it.
	Changed string `json:"changed,omitempty"`
	// Via is how git finds it: ViaHooksDir (a file in a hooks dir) or
	// ViaConfig (a hook defined in configuration, git 2.54 and later).
	Via string `json:"via,omitempty"`
	// Config is the configured hook's config section (hook.wt-HOOK).
	Config string `json:"config,omitempty"`
	// Dispatcher is the forge's hook that runs this one from its HOOK.d/
	// (ViaDispatchDir).
	Dispatcher string `json:"dispatcher,omitempty"`
}

// The ways git finds a hook.
const (
	ViaHooksDir = "hooks-dir"
	ViaConfig   = "config"
)

// Result is the state of wt's gate after a command: the hooks dir (or
// the configured hooks' dir), each hook, and the governed worktrees' own
// core.hooksPath (hooks-dir mode).
type Result struct {
	HooksDir  string          `json:"hooks_dir"`
	Hooks     []HookState     `json:"hooks"`
	Worktrees []WorktreeState `json:"worktrees,omitempty"`
	// Meets is what a commit in the checkout asked from meets (status).
	Meets    *Meets   `json:"meets,omitempty"`
	Warnings []string `json:"-"`
}

// HooksDirOf is the hooks directory git really uses for repository g:
// `git rev-parse --path-format=absolute --git-path hooks`, which honours
// core.hooksPath (local or global) and is shared by linked worktrees. It
// also reports whether that directory lies inside the working tree (a
// tracked .githooks/, husky's .husky/_).
func HooksDirOf(ctx context.Context, g *gitrepo.Repo) (hooks string, inTree bool, err error) {
	out, err := g.Git(ctx, true, "rev-parse", "--path-format=absolute", "--git-path", "hooks")
	if err != nil {
		return "", false, decision.SayWrap(decision.GitFailed, err, "find-hooks")
	}
	hooks = strings.TrimSpace(string(out))
	under := func(p, root string) bool { return p == root || strings.HasPrefix(p, root+string(filepath.Separator)) }
	inTree = under(hooks, g.TopLevel) && !under(hooks, g.CommonDir) && !under(hooks, g.GitDir)
	return hooks, inTree, nil
}

// Status reads the hooks in dir.
func Status(dir string) (Result, error) { return StatusOf(dir, Hooks) }

// StatusOf reads the named hooks in dir.
func StatusOf(dir string, hooks []string) (Result, error) {
	res := Result{HooksDir: dir}
	for _, h := range hooks {
		st, err := stateOf(dir, h)
		if err != nil {
			return res, err
		}
		res.Hooks = append(res.Hooks, st)
	}
	return res, nil
}

func stateOf(dir, hook string) (HookState, error) {
	st := HookState{Hook: hook, Path: filepath.Join(dir, hook), State: "missing", Via: ViaHooksDir}
	// A hook is a small script; read it as a regular file (never blocking
	// on a FIFO planted as a hook), following a symlink as git does.
	b, err := safefile.Read(st.Path, 1<<20, safefile.Follows)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return st, decision.SayWrap(decision.Internal, err, "read", st.Path)
	default:
		if v, bin, ok := Recognize(hook, b); ok {
			st.State, st.ShimVersion, st.Binary = "wt", v, bin
		} else {
			st.State = "foreign"
		}
	}
	if _, err := os.Lstat(st.Path + ChainSuffix); err == nil {
		st.Chained = st.Path + ChainSuffix
	}
	return st, nil
}

// Install writes wt's shims into the hooks dir, recording bin (absolute) as
// the wt-hook binary. A foreign hook is kept beside its shim (renamed to
// HOOK.wt-chained) and the shim runs it first with the same arguments and
// stdin. A shim of any shipped version is rewritten in place. Running it
// twice changes nothing the second time.
func Install(dir, bin string) (Result, error) { return InstallOf(dir, bin, Hooks) }

// InstallOf is Install for the named hooks (ServerHooks on a remote).
func InstallOf(dir, bin string, hooks []string) (Result, error) {
	res := Result{HooksDir: dir}
	if !filepath.IsAbs(bin) {
		return res, decision.Say(decision.Usage, "wt-hook", bin)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, decision.SayWrap(decision.Internal, err, "create", dir)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return res, err
	}
	defer unlock()
	// Every hook is checked before anything is changed: a conflict on the
	// last leaves the first as it was.
	for _, h := range hooks {
		if err := conflictOf(dir, h); err != nil {
			return res, err
		}
	}
	for _, h := range hooks {
		unchained, err := unchainShim(dir, h)
		if err != nil {
			return res, err
		}
		backups, err := removeBackupShims(dir, h)
		if err != nil {
			return res, err
		}
		if err := dropDuplicateChain(dir, h); err != nil {
			return res, err
		}
		st, err := stateOf(dir, h)
		if err != nil {
			return res, err
		}
		want, err := Render(h, bin)
		if err != nil {
			return res, err
		}
		switch st.State {
		case "foreign":
			if st.Chained != "" {
				return res, decision.Say(decision.HookConflict, "foreign-hook", st.Path, st.Chained).
					WithHint("merge them by hand, remove one, and run wt-hook install again")
			}
			if err := os.Rename(st.Path, st.Path+ChainSuffix); err != nil {
				return res, decision.SayWrap(decision.Internal, err, "keep", st.Path)
			}
			st.Chained, st.Changed = st.Path+ChainSuffix, "installed; the foreign hook runs after wt's gate, kept as "+filepath.Base(st.Path+ChainSuffix)
		case "wt":
			if cur, _ := safefile.Read(st.Path, 1<<20, safefile.Follows); string(cur) == want {
				st.Changed = "unchanged"
			} else {
				st.Changed = fmt.Sprintf("updated (shim v%d, binary %s)", st.ShimVersion, st.Binary)
			}
		default:
			st.Changed = "installed"
		}
		if st.Changed != "unchanged" {
			if err := writeExec(st.Path, want); err != nil {
				return res, err
			}
		}
		st.State, st.ShimVersion, st.Binary = "wt", CurrentVersion(h), bin
		if unchained {
			st.Changed += "; removed a wt shim kept as " + h + ChainSuffix
		}
		for _, b := range backups {
			st.Changed += "; removed a wt shim a hook manager kept as " + b
		}
		res.Hooks = append(res.Hooks, st)
	}
	return res, nil
}

// removeBackupShims removes wt shims that a hook manager kept under its
// backup name for hook (BackupSuffixes) when it took the hook: pre-commit
// would run one as its legacy hook, and it would chain the manager's hook
// again; lefthook would put one back on its uninstall. Only exact wt shims
// are removed.
func removeBackupShims(dir, hook string) ([]string, error) {
	var out []string
	for _, suf := range BackupSuffixes {
		p := filepath.Join(dir, hook+suf)
		b, err := safefile.Read(p, 1<<20, safefile.NoFollow)
		if err != nil {
			continue // absent, or not something wt wrote
		}
		if _, _, ok := Recognize(hook, b); !ok {
			continue
		}
		if err := os.Remove(p); err != nil {
			return out, decision.SayWrap(decision.Internal, err, "remove-wt", p)
		}
		out = append(out, filepath.Base(p))
	}
	return out, nil
}

// dropDuplicateChain removes HOOK.wt-chained when the hook in HOOK's place
// is foreign and byte-identical to it: a hook manager installed again over
// wt's shim (pre-commit moves the shim to HOOK.legacy) wrote the same hook
// it had written before, so the kept copy is only a copy.
func dropDuplicateChain(dir, hook string) error {
	if dup, err := duplicateChain(dir, hook); err != nil || !dup {
		return err
	}
	p := filepath.Join(dir, hook)
	if err := os.Remove(p + ChainSuffix); err != nil {
		return decision.SayWrap(decision.Internal, err, "remove-copy", p+ChainSuffix, p)
	}
	return nil
}

// duplicateChain reports whether hook's kept chained copy in dir is the
// hook itself, byte for byte (and not a shim of wt's: unchainShim's case).
func duplicateChain(dir, hook string) (bool, error) {
	p := filepath.Join(dir, hook)
	kept, err := safefile.Read(p+ChainSuffix, 1<<20, safefile.NoFollow)
	if err != nil {
		return false, nil
	}
	cur, err := safefile.Read(p, 1<<20, safefile.NoFollow)
	if err != nil || !bytes.Equal(cur, kept) {
		return false, nil
	}
	if _, _, ok := Recognize(hook, cur); ok {
		return false, nil // unchainShim's case
	}
	return true, nil
}

// conflictOf is the HOOK_CONFLICT that installing hook into dir meets: a
// foreign hook in its place beside a kept chained hook that is neither a
// shim of wt's (unchainShim removes it) nor a copy of the hook itself
// (dropDuplicateChain removes it). It changes nothing.
func conflictOf(dir, hook string) error {
	if b, err := safefile.Read(filepath.Join(dir, hook+ChainSuffix), 1<<20, safefile.NoFollow); err == nil {
		if _, _, ok := Recognize(hook, b); ok {
			return nil
		}
	}
	if dup, err := duplicateChain(dir, hook); err != nil || dup {
		return err
	}
	st, err := stateOf(dir, hook)
	if err != nil {
		return err
	}
	if st.State == "foreign" && st.Chained != "" {
		return decision.Say(decision.HookConflict, "foreign-hook", st.Path, st.Chained).
			WithHint("merge them by hand, remove one, and run wt-hook install again")
	}
	return nil
}

// Uninstall removes wt's shims and puts each kept foreign hook back under
// its own name, byte for byte (a rename). Foreign hooks that wt did not
// replace are left alone.
func Uninstall(dir string) (Result, error) { return UninstallOf(dir, Hooks) }

// UninstallOf is Uninstall for the named hooks.
func UninstallOf(dir string, hooks []string) (Result, error) {
	res := Result{HooksDir: dir}
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return StatusOf(dir, hooks)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return res, err
	}
	defer unlock()
	for _, h := range hooks {
		if _, err := unchainShim(dir, h); err != nil {
			return res, err
		}
		backups, err := removeBackupShims(dir, h)
		if err != nil {
			return res, err
		}
		if err := dropDuplicateChain(dir, h); err != nil {
			return res, err
		}
		st, err := stateOf(dir, h)
		if err != nil {
			return res, err
		}
		for _, b := range backups {
			st.Changed += "removed a wt shim a hook manager kept as " + b + "; "
		}
		switch {
		case st.State == "wt":
			if err := os.Remove(st.Path); err != nil {
				return res, decision.SayWrap(decision.Internal, err, "remove", st.Path)
			}
			st.State, st.Changed, st.ShimVersion, st.Binary = "missing", st.Changed+"removed", 0, ""
			if st.Chained != "" {
				if err := os.Rename(st.Chained, st.Path); err != nil {
					return res, decision.SayWrap(decision.Internal, err, "restore", st.Path)
				}
				st.State, st.Changed, st.Chained = "foreign", strings.TrimSuffix(st.Changed, "removed")+"removed; the foreign hook is back", ""
			}
		default:
			st.Changed += "not wt's: left alone"
			if st.Chained != "" {
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s is kept beside someone else's %s: wt did not write either, and leaves both", st.Chained, st.Path))
			}
		}
		res.Hooks = append(res.Hooks, st)
	}
	return res, nil
}

// writeExec writes an executable file atomically (temp file, rename).
func writeExec(path, content string) error { return writeFile(path, content, 0o755) }

// Problem is a hook that does not gate as wt's current shim would.
type Problem struct {
	Hook    string `json:"hook"`
	Path    string `json:"path"`
	Message string `json:"message"`
	// Outdated: the hook is a wt shim of an older version, which still
	// gates writes (through wt-hook run); wt-hook install updates it.
	Outdated bool `json:"outdated,omitempty"`
	// Fix is the command that mends it.
	Fix string `json:"fix,omitempty"`
}

// Check reports every hook in dir that is not wt's current shim running an
// executable binary: missing, foreign, an older shim version, or a shim
// whose recorded binary is gone (then commits there are refused).
func Check(dir string) ([]Problem, error) {
	st, err := Status(dir)
	if err != nil {
		return nil, err
	}
	var out []Problem
	for _, h := range st.Hooks {
		p := Problem{Hook: h.Hook, Path: h.Path}
		if h.Chained != "" {
			if b, err := safefile.Read(h.Chained, 1<<20, safefile.NoFollow); err == nil {
				if _, _, ok := Recognize(h.Hook, b); ok {
					out = append(out, Problem{Hook: h.Hook, Path: h.Chained, Message: "a wt shim is kept as the foreign hook " + filepath.Base(h.Chained) + ": it would run itself on every call"})
				}
			}
		}
		switch {
		case h.State == "missing":
			p.Message = "the " + h.Hook + " hook is not installed: nothing gates writes"
		case h.State == "foreign":
			p.Message = "the " + h.Hook + " hook is someone else's: wt does not gate writes through it"
		case h.ShimVersion != CurrentVersion(h.Hook):
			p.Message = fmt.Sprintf("the %s hook is shim v%d; this wt-hook writes v%d", h.Hook, h.ShimVersion, CurrentVersion(h.Hook))
			p.Outdated = true
		default:
			if fi, err := os.Stat(h.Binary); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				continue
			}
			p.Message = fmt.Sprintf("the %s hook runs %s, which is not an executable file: commits there are refused (HOOK_BINARY_MISSING)", h.Hook, h.Binary)
		}
		out = append(out, p)
	}
	return out, nil
}

// lockDir takes an exclusive flock(2) on the hooks directory itself (no file
// is added to it: it may be a tracked .githooks/) for the whole of an
// install or uninstall. Without it, installs and uninstalls racing each
// other could each rename the other's half-done state, losing the user's
// hook or chaining a wt shim to itself.
func lockDir(dir string) (func(), error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, decision.SayWrap(decision.Internal, err, "open", dir)
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd) // Best effort: already failing.
		return nil, decision.SayWrap(decision.Internal, err, "lock", dir)
	}
	return func() { unix.Close(fd) }, nil // Closing drops the lock.
}

// unchainShim removes a wt shim found kept as HOOK.wt-chained: it would run
// itself on every call (a race of older versions left such files). Only an
// exact wt shim is removed; anything else there is the user's.
func unchainShim(dir, hook string) (bool, error) {
	p := filepath.Join(dir, hook+ChainSuffix)
	b, err := safefile.Read(p, 1<<20, safefile.NoFollow)
	if err != nil {
		return false, nil // absent, or not something wt wrote
	}
	if _, _, ok := Recognize(hook, b); !ok {
		return false, nil
	}
	if err := os.Remove(p); err != nil {
		return false, decision.SayWrap(decision.Internal, err, "remove-wt", p)
	}
	return true, nil
}

// HookBinaryBeside is the wt-hook binary installed beside the running wt
// binary (wt-admin, wt-exec): the one `make install` or a package put in
// the same directory. It is not looked up on PATH, so what gets recorded in
// the shims does not depend on the caller's environment.
func HookBinaryBeside() (string, error) {
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return "", decision.SayWrap(decision.HooksMissing, err, "find-this")
	}
	bin := filepath.Join(filepath.Dir(self), "wt-hook")
	if fi, err := os.Stat(bin); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", decision.Say(decision.HooksMissing, "no-wt", self).
			WithHint("install wt whole (make install), or install the hooks with the wt-hook you have: wt-hook install")
	}
	return bin, nil
}

// EnsureBeside is EnsureGate with the wt-hook installed beside the
// running binary (HookBinaryBeside), as wt-admin init and wt-exec --task
// install the hooks; where says where they are (installed in, or in place
// in, the hooks dir or the configured hooks' dir).
func EnsureBeside(ctx context.Context, g *gitrepo.Repo) (installed bool, where string, err error) {
	bin, err := HookBinaryBeside()
	if err != nil {
		return false, "not installed", err
	}
	res, installed, err := EnsureGate(ctx, g, bin)
	if err != nil {
		return false, "not installed", err
	}
	if installed {
		return true, "installed in " + res.HooksDir, nil
	}
	return false, "in place in " + res.HooksDir, nil
}

// EnsureTarget installs wt's shims where t (PlanTarget) says unless every
// one is already in place, recording bin; installed reports whether
// anything was written.
func EnsureTarget(ctx context.Context, g *gitrepo.Repo, t Target, bin string) (res Result, installed bool, err error) {
	problems, err := CheckTarget(t)
	if err != nil {
		return res, false, err
	}
	if len(problems) == 0 {
		res, err := Status(t.Dir)
		return res, false, err
	}
	res, err = InstallTarget(ctx, g, t, bin)
	return res, err == nil, err
}
