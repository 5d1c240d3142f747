package install

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/shell"
)

// Hooks defined in configuration (git 2.54 and later): for each hook H it
// gates, wt sets, in the repository's own config,
//
//	hook.wt-H.command = <common-dir>/wt-gate/H
//	hook.wt-H.event   = H
//
// and keeps in <common-dir>/wt-gate the same shims it would put in a hooks
// dir (no foreign hook beside them: git runs the hooks dir's hook itself,
// after the configured ones). git runs configured hooks whatever
// core.hooksPath says, so `git -c core.hooksPath=/dev/null commit` meets
// the gate, and a hook manager that takes core.hooksPath or rewrites the
// hooks dir leaves it alone. What still switches it off: hook.wt-H.enabled
// = false, hook.H.enabled = false (every configured hook of the event), and
// git's own --no-verify for the hooks it lets that skip (pre-commit,
// pre-push); reference-transaction has no such switch
// (docs/hook-managers.md).

// ConfigDirName is the directory, in the common dir, of the shims that
// wt's configured hooks run.
const ConfigDirName = "wt-gate"

// ConfigDir is ConfigDirName of the repository with common dir common.
func ConfigDir(common string) string { return filepath.Join(common, ConfigDirName) }

// ConfigName is the name wt's configured hook for hook has (a name must
// not be an event's: git refuses the whole configuration then).
func ConfigName(hook string) string { return "wt-" + hook }

// shellMeta are the characters that make git run a configured hook's
// command through the shell rather than as a path (run-command.c).
const shellMeta = "|&;<>()$`\\\"' \t\n*?[#~=%"

// commandFor is the hook.<name>.command value that runs the file at path:
// the path itself, which git runs directly, or, when the path holds a
// character the shell would read, "exec" and the path quoted for the shell
// git then runs it with (exec: the shim must be git's own child, as a
// hook in a hooks dir is, for the pass pre-commit leaves to name git).
func commandFor(path string) string {
	if strings.ContainsAny(path, shellMeta) {
		return "exec " + shell.Quote(path)
	}
	return path
}

// commandPath is the file a hook.<name>.command value runs when it is a
// path (quoted after "exec", or not); ok is false for any other shell
// command.
func commandPath(cmd string) (string, bool) {
	if !strings.ContainsAny(cmd, shellMeta) {
		return cmd, filepath.IsAbs(cmd)
	}
	q, ok := strings.CutPrefix(cmd, "exec ")
	if !ok {
		return "", false
	}
	p, ok := shell.Unquote(q)
	return p, ok && filepath.IsAbs(p)
}

// InstallConfig writes the shims that wt's configured hooks run (recording
// bin) into ConfigDir, and registers each hook in the repository's own
// config. A setting of the repository's own config that switches wt's
// hook off (hook.wt-H.enabled = false) is removed; one that switches off
// every configured hook of an event (hook.H.enabled = false) is the
// user's, and is refused with the command that removes it.
func InstallConfig(ctx context.Context, g *gitrepo.Repo, bin string) ([]HookState, error) {
	dir := ConfigDir(g.CommonDir)
	local, err := readLocalConfig(ctx, g)
	if err != nil {
		return nil, err
	}
	// Every event is checked before anything is written: a refusal leaves
	// the config and the shims as they were.
	for _, h := range Hooks {
		if v, off := local.off("hook." + h + ".enabled"); off {
			return nil, decision.Say(decision.HookConflict, "repository-config", h, v, h).
				WithHint("git -C %s config --local --unset-all hook.%s.enabled", shell.Word(g.TopLevel), h)
		}
		if err := shimFileConflict(filepath.Join(dir, h), h); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, decision.SayWrap(decision.Internal, err, "create", dir)
	}
	var out []HookState
	for _, h := range Hooks {
		st := HookState{Hook: h, Path: filepath.Join(dir, h), Via: ViaConfig, Config: "hook." + ConfigName(h)}
		if st.Changed, err = writeShimFile(st.Path, h, bin); err != nil {
			return out, err
		}
		name := ConfigName(h)
		set := [][]string{}
		if cmd := commandFor(st.Path); local.value("hook."+name+".command") != cmd {
			set = append(set, []string{"--replace-all", "hook." + name + ".command", cmd})
		}
		if local.value("hook."+name+".event") != h || local.count("hook."+name+".event") != 1 {
			set = append(set, []string{"--replace-all", "hook." + name + ".event", h})
		}
		if _, ok := local.last("hook." + name + ".enabled"); ok {
			set = append(set, []string{"--unset-all", "hook." + name + ".enabled"})
		}
		for _, args := range set {
			if _, err := g.Git(ctx, false, append([]string{"config", "--local"}, args...)...); err != nil {
				return out, decision.SayWrap(decision.GitFailed, err, "set", args[1])
			}
		}
		if len(set) > 0 && st.Changed == "unchanged" {
			st.Changed = "registered"
		} else if len(set) > 0 {
			st.Changed += "; registered"
		}
		st.State, st.ShimVersion, st.Binary = "wt", CurrentVersion(h), bin
		out = append(out, st)
	}
	return out, nil
}

// UninstallConfig removes wt's configured hooks from the repository's own
// config and their shims from ConfigDir, and ConfigDir when nothing else
// is left in it.
func UninstallConfig(ctx context.Context, g *gitrepo.Repo) ([]HookState, error) {
	dir := ConfigDir(g.CommonDir)
	local, err := readLocalConfig(ctx, g)
	if err != nil {
		return nil, err
	}
	var out []HookState
	for _, h := range Hooks {
		st := HookState{Hook: h, Path: filepath.Join(dir, h), Via: ViaConfig, Config: "hook." + ConfigName(h), State: "missing"}
		if local.has("hook." + ConfigName(h)) {
			if _, err := g.Git(ctx, false, "config", "--local", "--remove-section", "hook."+ConfigName(h)); err != nil {
				return out, decision.SayWrap(decision.GitFailed, err, "remove-hook", ConfigName(h))
			}
			st.Changed = "unregistered"
		}
		if b, err := safefile.Read(st.Path, 1<<20, safefile.NoFollow); err == nil {
			if _, _, ok := Recognize(h, b); ok {
				if err := os.Remove(st.Path); err != nil {
					return out, decision.SayWrap(decision.Internal, err, "remove", st.Path)
				}
				st.Changed = strings.TrimPrefix(st.Changed+"; removed", "; ")
			}
		}
		if st.Changed == "" {
			st.Changed = "not installed"
		}
		out = append(out, st)
	}
	os.Remove(dir) // Best effort: only an empty directory goes.
	return out, nil
}

// localConfig is the repository's own configuration (git config --local),
// in git's order.
type localConfig []gitrepo.ConfigEntry

func readLocalConfig(ctx context.Context, g *gitrepo.Repo) (localConfig, error) {
	out, err := g.Git(ctx, true, "config", "--local", "--list", "--show-scope", "--show-origin", "-z")
	if err != nil {
		var ge *gitrepo.Error
		if errors.As(err, &ge) && ge.ExitCode == 1 && len(out) == 0 {
			return nil, nil // an empty config
		}
		return nil, decision.SayWrap(decision.GitFailed, err, "read-repository")
	}
	entries, err := gitrepo.ParseConfigList(out)
	if err != nil {
		return nil, decision.SayWrap(decision.GitFailed, err, "read-repository")
	}
	return entries, nil
}

// last is key's last entry, the one git goes by; ok is false when key is
// not set.
func (l localConfig) last(key string) (e gitrepo.ConfigEntry, ok bool) {
	for i := len(l) - 1; i >= 0; i-- {
		if l[i].Key == key {
			return l[i], true
		}
	}
	return gitrepo.ConfigEntry{}, false
}

// value is key's value ("" when unset).
func (l localConfig) value(key string) string {
	e, _ := l.last(key)
	return e.Value
}

// off reports whether key is a boolean set to false (a key given without
// "=" is true), with the value.
func (l localConfig) off(key string) (string, bool) {
	e, ok := l.last(key)
	return e.Value, ok && e.HasValue && isFalse(e.Value)
}

// count is how many values key has.
func (l localConfig) count(key string) int {
	n := 0
	for _, e := range l {
		if e.Key == key {
			n++
		}
	}
	return n
}

// has reports whether any key lies in section (a "hook.NAME" prefix).
func (l localConfig) has(section string) bool {
	for _, e := range l {
		if strings.HasPrefix(e.Key, section+".") {
			return true
		}
	}
	return false
}

// isFalse reads a git boolean as false (git_parse_maybe_bool).
func isFalse(v string) bool {
	switch strings.ToLower(v) {
	case "false", "no", "off", "0", "":
		return true
	}
	return false
}

// writeShimFile writes wt's shim for hook (recording bin) at path, a file
// wt alone writes (a configured hook's command, a gitolite repo-specific
// hook), and says what it did: "installed", "updated" or "unchanged". A
// file there that is not a wt shim is refused, never overwritten.
func writeShimFile(path, hook, bin string) (string, error) {
	want, err := Render(hook, bin)
	if err != nil {
		return "", err
	}
	cur, exists, err := readShimFile(path, hook)
	switch {
	case err != nil:
		return "", err
	case !exists:
		return "installed", writeExec(path, want)
	case string(cur) == want:
		return "unchanged", nil
	}
	return "updated", writeExec(path, want)
}

// shimFileConflict is the refusal writeShimFile meets at path (readShimFile's).
// It changes nothing.
func shimFileConflict(path, hook string) error {
	_, _, err := readShimFile(path, hook)
	return err
}

// readShimFile reads wt's shim for hook at path, once: exists is false
// when there is none; a file there that is not a shim of wt's for hook
// is HOOK_CONFLICT, one that cannot be read INTERNAL_ERROR.
func readShimFile(path, hook string) (cur []byte, exists bool, err error) {
	cur, err = safefile.Read(path, 1<<20, safefile.NoFollow)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case err != nil:
		return nil, false, decision.SayWrap(decision.Internal, err, "read", path)
	}
	if _, _, ok := Recognize(hook, cur); !ok {
		return nil, true, decision.Say(decision.HookConflict, "not-wt", path).
			WithHint("move it away, then run wt-hook install again: mv %s %s.bak", shell.Word(path), shell.Word(path))
	}
	return cur, true, nil
}
