package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/gitversion"
	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/shell"
)

// Meets is what git, run in one checkout, runs of wt's gate: for each hook
// wt gates, which of wt's shims git would start (through a hook defined in
// configuration, or from the hooks dir) and, when none, why. It is read
// from git's own view of its configuration there (every scope, the
// environment's -c settings included), so it predicts what a commit in
// that checkout from a process with this environment meets.
type Meets struct {
	// Git is the version of the git asked.
	Git gitversion.Version `json:"git"`
	// HooksDir is the hooks dir git uses there.
	HooksDir string `json:"hooks_dir"`
	// HooksPath is core.hooksPath as set ("" unset), and where.
	HooksPath      string      `json:"hooks_path,omitempty"`
	HooksPathScope string      `json:"hooks_path_scope,omitempty"`
	Hooks          []HookMeets `json:"hooks"`
}

// HookMeets is what one hook meets.
type HookMeets struct {
	Hook string `json:"hook"`
	// By lists what runs wt's judgement ("hook.wt-pre-commit", or a shim's
	// path); empty when nothing does.
	By []string `json:"by"`
	// Off says, for each way that does not run it, why.
	Off []string `json:"off,omitempty"`
	// Switch is the setting that switches wt's configured hook off
	// (hook.wt-HOOK.enabled or hook.HOOK.enabled), and SwitchScope where
	// it is set; "" when none does.
	Switch      string `json:"switch,omitempty"`
	SwitchScope string `json:"switch_scope,omitempty"`
}

// Fix is the command that puts wt's judgement back for hook in the
// checkout at top: the removal of the setting that switches it off where
// wt-hook install cannot remove it, else wt-hook install.
func (m Meets) Fix(hook, top string) string {
	for _, h := range m.Hooks {
		if h.Hook != hook || h.Switch == "" || h.SwitchScope == "local" && h.Switch == "hook."+ConfigName(hook)+".enabled" {
			continue
		}
		switch h.SwitchScope {
		case "worktree", "local":
			return fmt.Sprintf("git -C %s config --%s --unset-all %s", shell.Word(top), h.SwitchScope, h.Switch)
		case "global", "system":
			return fmt.Sprintf("git config --%s --unset-all %s", h.SwitchScope, h.Switch)
		}
	}
	return GateFix(top)
}

// Gated reports whether wt's judgement runs for hook.
func (m Meets) Gated(hook string) bool {
	for _, h := range m.Hooks {
		if h.Hook == hook {
			return len(h.By) > 0
		}
	}
	return false
}

// Why says why wt's judgement does not run for hook ("" when it does).
func (m Meets) Why(hook string) string {
	for _, h := range m.Hooks {
		if h.Hook == hook && len(h.By) == 0 {
			return strings.Join(h.Off, "; ")
		}
	}
	return ""
}

// Probe asks git in the checkout at top (whose common dir is commonDir)
// what a commit or push there meets of wt's gate.
func Probe(ctx context.Context, top, commonDir string) (Meets, error) {
	m, _, err := probeEntries(ctx, top, commonDir)
	return m, err
}

// probeEntries is Probe, with the configuration git listed.
func probeEntries(ctx context.Context, top, commonDir string) (Meets, []gitrepo.ConfigEntry, error) {
	v, err := gitrepo.GitVersion(ctx)
	if err != nil {
		return Meets{}, nil, err
	}
	entries, err := gitrepo.Config(ctx, top, nil)
	if err != nil {
		return Meets{}, nil, err
	}
	return Evaluate(v, entries, top, commonDir), entries, nil
}

// Evaluate is Probe's judgement of a configuration git listed (in its
// order), for a git of version v, in the checkout at top.
func Evaluate(v gitversion.Version, entries []gitrepo.ConfigEntry, top, commonDir string) Meets {
	m := Meets{Git: v}
	for _, e := range entries {
		if e.Key == "core.hookspath" {
			m.HooksPath, m.HooksPathScope = e.Value, e.Scope
		}
	}
	m.HooksDir = hooksDirFor(m.HooksPath, top, commonDir)
	cfg := configuredHooks(entries)
	for _, h := range Hooks {
		hm := HookMeets{Hook: h, By: []string{}}
		if v.ConfigHooks() {
			by, off := cfg.meets(h)
			hm.By, hm.Off = append(hm.By, by...), append(hm.Off, off...)
			if len(by) == 0 {
				hm.Switch, hm.SwitchScope = cfg.switchOf(h)
			}
		} else {
			hm.Off = append(hm.Off, fmt.Sprintf("git %s runs no hooks defined in configuration (2.54 and later do)", v))
		}
		by, off := m.hooksDirMeets(h)
		if by != "" {
			hm.By = append(hm.By, by)
		} else {
			hm.Off = append(hm.Off, off)
		}
		m.Hooks = append(m.Hooks, hm)
	}
	return m
}

// hooksDirFor is the hooks dir git uses for a core.hooksPath value: the
// common dir's hooks when unset, else the path, a relative one from the
// checkout's top (where git runs hooks), ~/ from $HOME.
func hooksDirFor(value, top, commonDir string) string {
	switch {
	case value == "":
		return filepath.Join(commonDir, "hooks")
	case value == "~" || strings.HasPrefix(value, "~/"):
		return filepath.Join(os.Getenv("HOME"), strings.TrimPrefix(value, "~"))
	case filepath.IsAbs(value):
		return filepath.Clean(value)
	default:
		return filepath.Join(top, value)
	}
}

// hooksDirMeets says whether the hooks dir runs wt's judgement for hook:
// by, the shim that does, or off, why not.
func (m Meets) hooksDirMeets(hook string) (by, off string) {
	where := "the hooks dir " + m.HooksDir
	if m.HooksPath != "" {
		where = fmt.Sprintf("core.hooksPath %s (%s config)", m.HooksPath, m.HooksPathScope)
	}
	p := filepath.Join(m.HooksDir, hook)
	st, err := stateOf(m.HooksDir, hook)
	switch {
	case err != nil:
		return "", fmt.Sprintf("%s cannot be read: %v", p, err)
	case st.State == "wt":
		if unix.Access(p, unix.X_OK) != nil {
			return "", fmt.Sprintf("%s is wt's shim but not executable: git skips it", p)
		}
		return p, ""
	case st.State == "foreign" && runsLegacy(p, hook):
		return p + ".legacy", ""
	case st.State == "foreign":
		return "", fmt.Sprintf("%s: %s is someone else's hook, not wt's", where, p)
	default:
		return "", fmt.Sprintf("%s: no %s hook there", where, hook)
	}
}

// legacyIDs mark the hooks of the pre-commit framework and of prek, which
// run the hook they replaced, kept as HOOK.legacy, before their own.
var legacyIDs = []string{"# ID: 138fd403232d2ddd5efb44317e38bf03", "# ID: 182c10f181da4464a3eec51b83331688"}

// runsLegacy reports whether the foreign hook at p is one that runs
// p.legacy, and p.legacy is wt's shim.
func runsLegacy(p, hook string) bool {
	b, err := safefile.Read(p, 1<<20, safefile.Follows)
	if err != nil {
		return false
	}
	marked := false
	for _, id := range legacyIDs {
		marked = marked || strings.Contains(string(b), id)
	}
	if !marked {
		return false
	}
	l, err := safefile.Read(p+".legacy", 1<<20, safefile.Follows)
	if err != nil {
		return false
	}
	_, _, ok := Recognize(hook, l)
	return ok && unix.Access(p+".legacy", unix.X_OK) == nil
}

// configured is git's hook configuration: each named hook's events,
// command and switch, and the events switched off as a whole.
type configured struct {
	order    []string // names, in the order git meets their events
	events   map[string][]string
	command  map[string]string
	scope    map[string]string
	disabled map[string]string // name or event -> the scope that switched it off
}

func configuredHooks(entries []gitrepo.ConfigEntry) configured {
	c := configured{events: map[string][]string{}, command: map[string]string{}, scope: map[string]string{}, disabled: map[string]string{}}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Key, "hook.")
		if !ok {
			continue
		}
		dot := strings.LastIndexByte(rest, '.')
		if dot < 0 {
			continue // hook.jobs
		}
		name, sub := rest[:dot], rest[dot+1:]
		switch sub {
		case "event":
			if e.Value == "" {
				delete(c.events, name) // an empty value resets the list
				continue
			}
			if _, seen := c.events[name]; !seen {
				c.order = append(c.order, name)
			}
			c.events[name] = append(c.events[name], e.Value)
		case "command":
			c.command[name], c.scope[name] = e.Value, e.Scope
		case "enabled":
			if isFalse(e.Value) && e.HasValue {
				c.disabled[name] = e.Scope
			} else {
				delete(c.disabled, name)
			}
		}
	}
	return c
}

// meets says which configured hooks run wt's judgement for hook, and why
// the others that would do not.
func (c configured) meets(hook string) (by, off []string) {
	any := false
	for _, name := range c.order {
		if !slices.Contains(c.events[name], hook) {
			continue
		}
		p, ok := commandPath(c.command[name])
		if !ok {
			continue
		}
		b, err := safefile.Read(p, 1<<20, safefile.Follows)
		if err != nil {
			if name == ConfigName(hook) {
				off = append(off, fmt.Sprintf("hook.%s runs %s, which cannot be read: %v", name, p, err))
			}
			continue
		}
		if _, _, ok := Recognize(hook, b); !ok {
			continue
		}
		any = true
		switch {
		case c.disabled[hook] != "":
			off = append(off, fmt.Sprintf("hook.%s.enabled is false (%s config): every configured %s hook is off, wt's hook.%s included", hook, c.disabled[hook], hook, name))
		case c.disabled[name] != "":
			off = append(off, fmt.Sprintf("hook.%s.enabled is false (%s config)", name, c.disabled[name]))
		case unix.Access(p, unix.X_OK) != nil:
			off = append(off, fmt.Sprintf("hook.%s runs %s, which is not executable", name, p))
		default:
			by = append(by, "hook."+name)
		}
	}
	if !any && len(off) == 0 {
		off = append(off, fmt.Sprintf("no hook defined in configuration runs wt's %s shim (wt-hook install registers hook.%s)", hook, ConfigName(hook)))
	}
	return by, off
}

// switchOf names the setting that switches wt's configured hook for hook
// off, and its scope.
func (c configured) switchOf(hook string) (key, scope string) {
	if sc := c.disabled[hook]; sc != "" {
		return "hook." + hook + ".enabled", sc
	}
	if sc := c.disabled[ConfigName(hook)]; sc != "" {
		return "hook." + ConfigName(hook) + ".enabled", sc
	}
	return "", ""
}
