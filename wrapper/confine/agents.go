package confine

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/wt-tool/wt/core/decision"
)

// Agent profiles: what each agent CLI must write under confinement, and
// which of its files can make a later agent run commands (hooks, MCP
// servers, notify programs), kept as data in agents.json. A profile is
// picked by --agent NAME or by the command's program name.
//
//go:embed agents.json
var agentsJSON []byte

// AgentProfile is one agent's entry of agents.json.
type AgentProfile struct {
	Name     string        `json:"name"`
	Programs []string      `json:"programs"`
	Dirs     []string      `json:"dirs"`
	Private  []PrivateFile `json:"private"`
	Protect  []string      `json:"protect"`
	Fallback []string      `json:"fallback"`
	Notes    []string      `json:"notes"`
}

// PrivateFile is a file the run gets its own copy of.
type PrivateFile struct {
	Path string `json:"path"`
	Init string `json:"init"`
	// Trust "claude": the copy marks the worktree trusted in Claude
	// Code's config (projects.<path>.hasTrustDialogAccepted).
	Trust string `json:"trust"`
}

// agentProfiles decodes agents.json once, when a confined run first asks
// (not at every wt-exec start).
var agentProfiles = sync.OnceValue(func() []AgentProfile {
	var f struct {
		Profiles []AgentProfile `json:"profiles"`
	}
	if err := json.Unmarshal(agentsJSON, &f); err != nil {
		panic("wrapper/confine/agents.json: " + err.Error())
	}
	return f.Profiles
})

// AgentNames are the names of the agent profiles.
func AgentNames() []string {
	var out []string
	for _, p := range agentProfiles() {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

// agentProfile is the profile named name (--agent), or else the one whose
// programs include the command's base name; nil for none. An unknown
// --agent is a usage error.
func agentProfile(name, program string) (*AgentProfile, error) {
	profiles := agentProfiles()
	if name != "" {
		for i := range profiles {
			if profiles[i].Name == name {
				return &profiles[i], nil
			}
		}
		return nil, decision.Say(decision.Usage, "agent-names", name).
			WithHint("pass one of: %s", strings.Join(AgentNames(), ", "))
	}
	base := filepath.Base(program)
	for i := range profiles {
		for _, p := range profiles[i].Programs {
			if p == base {
				return &profiles[i], nil
			}
		}
	}
	return nil, nil
}

// agentPlan is a profile resolved for one run.
type agentPlan struct {
	name string
	// state is the profile's own state (stateDir), "" without a view.
	state string
	// dirs are writable directories.
	dirs []Rule
	// overlays, private and protect are kept by the mount namespace.
	overlays []agentOverlay
	private  []privateCopy
	protect  []string
	// readOnly says what stays read-only without a namespace.
	readOnly []string
	notes    []string
}

// privateCopy is a file of the profile's own (in its state) mounted over
// the real one.
type privateCopy struct {
	path, copy string
}

// agentOverlay is a directory of the profile's, over which the profile's
// own layer is mounted: the real directory below, read-only, the layer
// (upper, with overlayfs's work) in the profile's state.
type agentOverlay struct {
	path, upper, work string
}

// stateDir is where an agent profile's own state is kept, across its
// confined runs and apart from everything else a run may write: under
// $XDG_STATE_HOME (or ~/.local/state), wt/agents/<profile>.
func stateDir(home, profile string) string {
	return filepath.Join(home, ".local", "state", "wt", "agents", profile)
}

// expandHome resolves ~ and {uid} in a profile path; "" when the path
// needs a HOME that is unset.
func expandHome(p, home string) string {
	p = strings.ReplaceAll(p, "{uid}", strconv.Itoa(os.Getuid()))
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home == "" || !filepath.IsAbs(home) {
			return ""
		}
		return filepath.Join(home, rest)
	}
	return filepath.Clean(p)
}

// planAgent resolves profile p for a run with HOME home, the worktree top
// and the private TMPDIR tmp; ns says whether the run gets a mount
// namespace. Unless dryRun it makes what is missing (the dirs, the files
// and what protect and private name, each with its init content) and the
// private copies: as the operator, before any confinement.
func planAgent(p *AgentProfile, home, top, tmp string, ns, dryRun bool) (*agentPlan, error) {
	plan := &agentPlan{name: p.Name, notes: p.Notes}
	mk := profileFS{name: p.Name, dryRun: dryRun}
	dirs := p.Dirs
	if !ns {
		// Without a namespace a private or protected file would be
		// writable in its directory: those directories stay read-only,
		// and only the fallback ones are writable.
		dirs = p.Fallback
		plan.readOnly = readOnlyWithoutView(p, home)
	}
	if ns && home != "" && filepath.IsAbs(home) {
		plan.state = stateDir(home, p.Name)
	}
	if err := plan.addDirs(mk, dirs, home, tmp); err != nil {
		return nil, err
	}
	if !ns {
		return plan, nil
	}
	if plan.state == "" {
		return nil, decision.Say(decision.ConfinementUnavailable, "profile-needs", p.Name).
			WithHint("run it with HOME set to the user's home directory: env HOME=/home/USER wt-exec --confine -- COMMAND")
	}
	if err := plan.addProtected(mk, p.Protect, home); err != nil {
		return nil, err
	}
	return plan, plan.addPrivate(mk, p.Private, home, top)
}

// readOnlyWithoutView are the places of profile p that stay read-only
// where a run has no private view: its private files, and its state
// directories but the fallback ones.
func readOnlyWithoutView(p *AgentProfile, home string) []string {
	var out []string
	for _, f := range p.Private {
		if x := expandHome(f.Path, home); x != "" {
			out = append(out, x)
		}
	}
	for _, d := range p.Dirs {
		if !slices.Contains(p.Fallback, d) {
			if x := expandHome(d, home); x != "" {
				out = append(out, x+" (but the profile's fallback directories)")
			}
		}
	}
	return out
}

// addDirs makes the profile's state directories writable: with a view
// (plan.state set), each under a layer of the profile's own, kept in its
// state, a work dir per run (tmp's); else the directories themselves.
func (plan *agentPlan) addDirs(mk profileFS, dirs []string, home, tmp string) error {
	for i, d := range dirs {
		x := expandHome(d, home)
		if x == "" {
			continue
		}
		if err := mk.dir(x); err != nil {
			return err
		}
		if plan.state == "" {
			plan.dirs = append(plan.dirs, Rule{x, "the " + plan.name + " profile's state"})
			continue
		}
		// With a view, the profile's own layer over the directory: what
		// its runs write there is kept in its state, for its runs alone;
		// the real directory stays as the user left it. A work dir per
		// run: two runs of the profile at once share its layer, as the
		// agent shares its state when it runs unconfined.
		layer := filepath.Join(plan.state, "dirs", strconv.Itoa(i))
		o := agentOverlay{path: x, upper: filepath.Join(layer, "upper"), work: filepath.Join(layer, "work-"+filepath.Base(tmp))}
		if err := mk.dir(o.upper); err != nil {
			return err
		}
		if err := mk.dir(o.work); err != nil {
			return err
		}
		plan.overlays = append(plan.overlays, o)
		plan.dirs = append(plan.dirs, Rule{x, "the " + plan.name + " profile's state: its own layer, kept in " + layer})
	}
	return nil
}

// addProtected makes each protected path (a directory when it ends in
// "/") exist, to be kept read-only in the view.
func (plan *agentPlan) addProtected(mk profileFS, protect []string, home string) error {
	for _, pr := range protect {
		x := expandHome(strings.TrimSuffix(pr, "/"), home)
		if x == "" {
			continue
		}
		var err error
		if strings.HasSuffix(pr, "/") {
			err = mk.dir(x)
		} else {
			err = mk.file(x, emptyFor(x))
		}
		if err != nil {
			return err
		}
		plan.protect = append(plan.protect, x)
	}
	return nil
}

// addPrivate makes each private file exist and keeps the profile's copy
// of it (what the view shows its runs) in its state.
func (plan *agentPlan) addPrivate(mk profileFS, private []PrivateFile, home, top string) error {
	for i, f := range private {
		x := expandHome(f.Path, home)
		if x == "" {
			continue
		}
		if err := mk.file(x, f.Init); err != nil {
			return err
		}
		c := privateCopy{path: x, copy: filepath.Join(plan.state, "files", fmt.Sprintf("%d-%s", i, filepath.Base(x)))}
		if !mk.dryRun {
			if err := keepCopy(x, c.copy, f.Trust, top); err != nil {
				return err
			}
		}
		plan.private = append(plan.private, c)
	}
	return nil
}

// profileFS makes a profile's directories and files (nothing in a dry
// run), each refusal CONFINEMENT_UNAVAILABLE naming the profile.
type profileFS struct {
	name   string
	dryRun bool
}

func (m profileFS) dir(d string) error {
	if m.dryRun {
		return nil
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return decision.SayWrap(decision.ConfinementUnavailable, err, "make-profile", d, m.name)
	}
	return nil
}

// file makes f with content init unless it exists.
func (m profileFS) file(f, init string) error {
	if m.dryRun {
		return nil
	}
	if err := m.dir(filepath.Dir(f)); err != nil {
		return err
	}
	fd, err := os.OpenFile(f, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err == nil {
		_, err = fd.WriteString(init)
		if cerr := fd.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return decision.SayWrap(decision.ConfinementUnavailable, err, "make-profile", f, m.name)
	}
	return nil
}

// keepCopy makes the profile's own copy of src at dst the first time
// (from src as it is then), and afterwards keeps what the profile's runs
// wrote there; with trust "claude" the worktree top is marked trusted in
// it each time.
func keepCopy(src, dst, trust, top string) error {
	from := dst
	if _, err := os.Stat(dst); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return decision.SayWrap(decision.ConfinementUnavailable, err, "make", filepath.Dir(dst))
		}
		from = src
	} else if trust == "" {
		return nil
	}
	return writePrivateCopy(from, dst, trust, top)
}

// emptyFor is the content a missing protected file is made with.
func emptyFor(path string) string {
	if strings.HasSuffix(path, ".json") || strings.HasSuffix(path, ".jsonc") {
		return "{}\n"
	}
	return ""
}

// writePrivateCopy copies src to dst (the run's own copy); with trust
// "claude" the copy marks the worktree top trusted in Claude Code's config.
// A config that is not a JSON object is copied as it is.
func writePrivateCopy(src, dst, trust, top string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return decision.SayWrap(decision.ConfinementUnavailable, err, "read", src)
	}
	if trust == "claude" {
		var cfg map[string]any
		if json.Unmarshal(b, &cfg) == nil && cfg != nil {
			projects, _ := cfg["projects"].(map[string]any)
			if projects == nil {
				projects = map[string]any{}
			}
			proj, _ := projects[top].(map[string]any)
			if proj == nil {
				proj = map[string]any{}
			}
			proj["hasTrustDialogAccepted"] = true
			projects[top] = proj
			cfg["projects"] = projects
			if out, err := json.MarshalIndent(cfg, "", "  "); err == nil {
				b = append(out, '\n')
			}
		}
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		return decision.SayWrap(decision.ConfinementUnavailable, err, "copy-run", src)
	}
	return nil
}

// explain is the plan in words.
func (a *agentPlan) explain() []string {
	if a == nil {
		return nil
	}
	out := []string{"  agent    profile " + a.name}
	for _, o := range a.overlays {
		out = append(out, "  agent    its own: "+o.path+" (what its runs write there is kept in "+filepath.Dir(o.upper)+"; the real directory is unchanged)")
	}
	for _, c := range a.private {
		out = append(out, "  agent    its own: "+c.path+" (the profile's copy "+c.copy+"; the real file is unchanged)")
	}
	for _, p := range a.protect {
		out = append(out, "  agent    read-only: "+p+" (could make a later agent run commands)")
	}
	for _, r := range a.readOnly {
		out = append(out, "  agent    read-only: "+r+" (no mount namespace: wt-exec is not root)")
	}
	for _, n := range a.notes {
		out = append(out, "  agent    note: "+n)
	}
	return out
}
