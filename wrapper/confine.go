package wrapper

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/wrapper/confine"
)

// ConfineMode says whether wt-exec confines its command.
type ConfineMode int

// Confinement modes (the policy's off, auto and require; --confine is
// require for one run, --no-confine off).
const (
	ConfineOff ConfineMode = iota
	// ConfineAuto confines where the kernel can, and says once when it
	// cannot.
	ConfineAuto
	// ConfineRequire refuses (CONFINEMENT_UNAVAILABLE) where it cannot.
	ConfineRequire
)

// ConfinedEnv marks a confined command's environment (confine.Env).
const ConfinedEnv = confine.Env

// landlockABI and newConfinement are confine.ABI and confine.New: the
// kernel's Landlock ABI and the planner (unit tests substitute them).
var landlockABI, newConfinement = confine.ABI, confine.New

// ParseConfineMode reads a policy value.
func ParseConfineMode(s string) ConfineMode {
	switch s {
	case store.ConfineAuto:
		return ConfineAuto
	case store.ConfineRequire:
		return ConfineRequire
	}
	return ConfineOff
}

// confinement decides whether this run's command is confined, and plans
// it: nil when the mode (the policy's, or --confine/--no-confine) is off,
// or auto on a kernel that cannot (said once through Notify). require on
// such a kernel refuses.
func (s *supervisor) confinement(c gitrepo.Checkout, branch string, pol store.Policy) (*confine.Plan, error) {
	mode := s.opts.confineMode(pol)
	if mode == ConfineOff {
		return nil, nil
	}
	abi := landlockABI()
	if abi < confine.MinABI {
		d := confine.Refusal(abi)
		if mode == ConfineRequire {
			return nil, d
		}
		s.opts.Notify("the command runs unconfined (confine auto): " + d.Error())
		return nil, nil
	}
	if s.tmpDir == "" {
		d, err := confine.MakeTempDir()
		if err != nil {
			return nil, err
		}
		s.tmpDir = d
	}
	conf, err := s.opts.planConfinement(c, branch, pol, s.tmpDir, abi, false, s.onView)
	if err != nil && mode == ConfineAuto && decision.CodeOf(err) == decision.ConfinementUnavailable {
		s.opts.Notify("the command runs unconfined (confine auto): " + err.Error())
		return nil, nil
	}
	if err == nil && conf.View() == nil {
		// Landlock's rules alone hold less than a view (docs/design.md):
		// require refuses them, auto says it falls back to them.
		if mode == ConfineRequire {
			return nil, decision.Say(decision.ConfinementUnavailable, "wt-exec-cannot", confine.NoViewWhy()).
				WithHint("run it as root, or allow user namespaces (sysctl -w user.max_user_namespaces=15000), or let it run with Landlock's rules alone: wt-admin policy --confine auto")
		}
		s.opts.Notify("the command is confined by Landlock's rules alone (confine auto), without its private view of the repository: " + confine.NoViewWhy() + "; it can rewrite objects and, in the flat layout or a reftable repository, other tasks' branches (wt-exec --confine --explain)")
	}
	return conf, err
}

// removeTempDir removes a confined command's private TMPDIR once it and
// everything it started have ended.
func (s *supervisor) removeTempDir() {
	if s.tmpDir != "" {
		if err := os.RemoveAll(s.tmpDir); err != nil {
			s.opts.Notify("the private TMPDIR " + s.tmpDir + " could not be removed: " + err.Error())
		}
		s.tmpDir = ""
	}
}

// Explain plans the confinement of a run in opts.Dir as wt-exec would,
// without taking a lease or running anything, and says it in words. The
// policy comes from the caller (mode and allow list), and so does the
// allocation's branch.
func Explain(opts Options, branch string, pol store.Policy) ([]string, error) {
	dir := opts.Dir
	if dir == "" {
		dir = "."
	}
	c, err := gitrepo.Locate(dir)
	if err != nil {
		return nil, err
	}
	mode := opts.confineMode(pol)
	abi := landlockABI()
	head := []string{fmt.Sprintf("mode %s (policy %s)", [...]string{"off", "auto", "require"}[mode], pol.ConfineMode())}
	if abi < confine.MinABI {
		return append(head, "this kernel cannot confine: "+confine.Refusal(abi).Message), nil
	}
	conf, err := opts.planConfinement(c, branch, pol, filepath.Join(os.TempDir(), "wt-exec-tmp-XXXXXXXX"), abi, true, nil)
	if err != nil {
		return nil, err
	}
	broker := "  broker   wt-admin ready, lease handoff and lease transfer of its own task and worktree pass through this wt-exec's socket ($WT_EXEC_BROKER); it answers processes of this run only (the kernel's SO_PEERCRED: this user, descending from this wt-exec), and refuses (BROKER_PEER_REFUSED) and records every other"
	if opts.Sandbox {
		broker = "  broker   none: a sandbox passes nothing on"
	}
	return append(append(head, conf.Explain(c.TopLevel)...), broker), nil
}

// confineMode is the run's confinement mode: --confine or --no-confine,
// else the policy's.
func (o Options) confineMode(pol store.Policy) ConfineMode {
	if o.Sandbox {
		return ConfineRequire
	}
	if o.Confine != nil {
		return *o.Confine
	}
	return ParseConfineMode(pol.ConfineMode())
}

// planConfinement plans the run's confinement in c, with tmpDir as its
// private TMPDIR: the policy's and --allow-write's directories.
func (o Options) planConfinement(c gitrepo.Checkout, branch string, pol store.Policy, tmpDir string, abi int, dryRun bool, onView func(string) error) (*confine.Plan, error) {
	program := ""
	if len(o.Args) > 0 {
		program = o.Args[0]
	}
	home, _ := envLookup(o.Environ, "HOME")
	cache, _ := envLookup(o.Environ, "XDG_CACHE_HOME")
	ssh, _ := envLookup(o.Environ, "SSH_AUTH_SOCK")
	return newConfinement(confine.Input{Checkout: c, Branch: branch, Publication: pol.PublicationBranch, Home: home, CacheHome: cache,
		SSHAuthSock: ssh, AllowSockets: o.AllowSockets, OnView: onView,
		Agent: o.Agent, Program: program, Allow: append(slices.Clone(pol.ConfineAllow), o.AllowWrite...),
		TempDir: tmpDir, ABI: abi, DryRun: dryRun, Sandbox: o.Sandbox})
}

// confinedEnv is the environment of the confined command: its private
// TMPDIR and WT_CONFINED set.
func confinedEnv(env []string, tmp string) []string {
	return append(withoutVar(withoutVar(env, "TMPDIR"), ConfinedEnv), "TMPDIR="+tmp, ConfinedEnv+"=1")
}

func withoutVar(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if len(kv) > len(name) && kv[:len(name)+1] == name+"=" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// makeRefusals makes the empty file in a confined run's TMPDIR where wt's
// hooks note each refusal they make in the run (store.RefusalsEnv).
func makeRefusals(tmp string) (string, error) {
	p := filepath.Join(tmp, store.RefusalsName)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	return p, f.Close()
}

// refusalsSaid is the run's end line for the refusals wt's hooks noted in
// p: each code with its count, in the order first met ("" for none, or
// when p cannot be read: the refusals were printed where they happened).
func refusalsSaid(p string) string {
	if p == "" {
		return ""
	}
	b, err := safefile.Read(p, 64<<10, safefile.NoFollow)
	if err != nil {
		return ""
	}
	counts := map[string]int{}
	var order []string
	for _, code := range strings.Fields(string(b)) {
		if !slices.Contains(decision.Codes(), code) {
			continue // not a code wt makes: the run wrote there itself
		}
		if counts[code] == 0 {
			order = append(order, code)
		}
		counts[code]++
	}
	if len(order) == 0 {
		return ""
	}
	var parts []string
	total := 0
	for _, c := range order {
		parts = append(parts, fmt.Sprintf("%s x%d", c, counts[c]))
		total += counts[c]
	}
	return fmt.Sprintf("wt's hooks refused %d thing(s) the run tried: %s (each said why, and the way through, where it happened)", total, strings.Join(parts, ", "))
}
