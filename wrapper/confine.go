package wrapper

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// ConfineMode says whether wt-exec confines its command with Landlock.
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

// MinConfineABI is the oldest Landlock ABI wt confines with: ABI 3 is the
// first that stops truncate(2), without which a confined command could
// still empty another worktree's files.
const MinConfineABI = 3

// scopeABI is the first Landlock ABI that scopes signals: a confined
// command may signal only processes of its own domain.
const scopeABI = 6

// ConfinedEnv marks a confined command's environment: a wt-exec nested in
// it runs its command under the outer lease (it cannot write the store).
const ConfinedEnv = "WT_CONFINED"

// defaultWritable are the directories under $HOME that agents keep their
// own state and caches in, writable by a confined command when they exist
// (docs/decisions.md, "Confinement"). $XDG_CACHE_HOME replaces ~/.cache.
var defaultWritable = []string{".cache", ".claude", ".codex", ".aider", ".npm", "go/pkg/mod"}

// devices are the device files a confined command may open for writing
// (and use ioctls on): the null devices, its controlling terminal
// (/dev/tty) and /dev/ptmx. Of the terminals in /dev/pts it may open only
// its own (ownTerminals): another agent's pane or the operator's shell is
// neither writable nor open to ioctls such as TIOCSTI.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx"}

// Rule is one line of a confinement: a directory and why it is writable.
type Rule struct {
	Path string `json:"path"`
	Why  string `json:"why"`
}

// Confinement is the plan for one confined run.
type Confinement struct {
	ABI   int    `json:"abi"`
	Rules []Rule `json:"write"`
	// Dropped are default directories left read-only because they hold a
	// part of the repository a confined command must not write.
	Dropped []Rule `json:"dropped,omitempty"`
	Signals bool   `json:"signals_scoped"`
	TempDir string `json:"tmpdir"`
	// Refs says how its refs are guarded (refGuardNS or refGuardLandlock).
	Refs string `json:"refs"`
	// Agent is the agent profile applied ("" for none).
	Agent string `json:"agent,omitempty"`
	// guard is the plan behind Refs.
	guard *refGuard
	// agent is the profile's plan.
	agent *agentPlan
}

// Record is the confinement as the lease records it.
func (c *Confinement) Record() *store.Confinement {
	r := &store.Confinement{ABI: c.ABI, Devices: devices, SignalsScoped: c.Signals, TempDir: c.TempDir}
	for _, w := range c.Rules {
		r.Write = append(r.Write, w.Path)
	}
	return r
}

// ConfinementInput is what a confinement is planned from.
type ConfinementInput struct {
	// Checkout is the worktree the command runs in.
	Checkout gitrepo.Checkout
	// Branch is the allocation's branch ("" for a detached worktree): its
	// ref directory is the one the command may write refs in.
	Branch string
	// Publication is the policy's publication branch, which must not share
	// that directory.
	Publication string
	// Environ is the command's environment (HOME, XDG_CACHE_HOME).
	Environ []string
	// Allow are the policy's and --allow-write's directories.
	Allow []string
	// Remotes are the git dirs of the repository's remotes on this machine.
	Remotes []string
	// TempDir is the command's private TMPDIR.
	TempDir string
	ABI     int
	// DryRun plans without making anything (--explain).
	DryRun bool
	// Agent is --agent (a profile name), Program the command's program:
	// the agent profile is the one named, or the program's.
	Agent, Program string
}

// PlanConfinement works out what the command may write: beneath its
// worktree, its own git dir, the objects a commit or fetch adds, the refs
// its task may move (see refguard.go), a private temporary directory
// (its TMPDIR), the agents' state and cache directories under $HOME that
// exist, the directories of in.Allow, and the objects, refs and logs of
// the remotes on this machine (a push runs git-receive-pack in the
// command's domain). Everything else is read-only: other worktrees, the
// wt store, the hooks, the repository's config, the publication branch,
// tags, replace and notes refs. A directory given in allow that does not
// exist is refused (CONFINEMENT_CONFLICT, with the mkdir that makes it);
// one that contains or lies in a protected place is refused too; a default
// one is dropped and listed.
func PlanConfinement(in ConfinementInput) (*Confinement, error) {
	c := in.Checkout
	if c.Key == gitrepo.MainKey {
		return nil, decision.New(decision.ConfinementUnavailable, "%s is the canonical checkout, whose git dir is the repository's own: wt confines commands in linked worktrees only", c.TopLevel).
			WithHint("run the agent in a worktree of its task: wt-exec --task KEY --owner NAME -- COMMAND")
	}
	conf := &Confinement{ABI: in.ABI, Signals: in.ABI >= scopeABI, TempDir: in.TempDir}
	protected, err := protectedPlaces(c)
	if err != nil {
		return nil, err
	}
	// The allowed directories first: a refused one leaves nothing made.
	var allowed []Rule
	for _, d := range in.Allow {
		if !filepath.IsAbs(d) {
			return nil, decision.New(decision.Usage, "--allow-write %s is not an absolute path", d).WithHint("name the directory by its absolute path")
		}
		d = filepath.Clean(d)
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return nil, decision.New(decision.ConfinementConflict, "%s may not be writable to a confined command: it is not an existing directory", d).
				WithHint("make it first: mkdir -p %s", shell.Word(d))
		}
		if clash := conflict(d, protected); clash != "" {
			return nil, decision.New(decision.ConfinementConflict, "%s may not be writable to a confined command: it holds or lies in %s", d, clash).
				WithHint("allow a directory that holds no worktree and nothing of the repository's git dir")
		}
		allowed = append(allowed, Rule{d, "allowed (policy or --allow-write)"})
	}
	guard, err := planGuard(in)
	if err != nil {
		return nil, err
	}
	conf.guard, conf.Refs = guard, guard.mode
	conf.Rules = append(conf.Rules, Rule{c.TopLevel, "the worktree"}, Rule{c.GitDir, "its git dir: index, HEAD, its reflog, its own refs"})
	if guard.mode == refGuardNS {
		conf.Rules = append(conf.Rules, Rule{c.CommonDir, "the common dir as its mount namespace shows it: objects, refs and logs; the rest read-only mounts"})
	} else {
		conf.Rules = append(conf.Rules, Rule{filepath.Join(c.CommonDir, "objects"), "objects a commit or fetch adds"})
		if guard.reftable {
			conf.Rules = append(conf.Rules, Rule{filepath.Join(c.CommonDir, "reftable"), "every ref: a reftable repository keeps them in one table stack"})
		} else {
			if guard.branchDir != "" {
				conf.Rules = append(conf.Rules, Rule{filepath.Join(c.CommonDir, guard.branchDir), "its branch's ref directory"},
					Rule{filepath.Join(c.CommonDir, "logs", guard.branchDir), "its branch's reflogs"})
			}
			conf.Rules = append(conf.Rules, Rule{filepath.Join(c.CommonDir, "refs", "remotes"), "remote-tracking refs"},
				Rule{filepath.Join(c.CommonDir, "logs", "refs", "remotes"), "remote-tracking reflogs"})
		}
	}
	conf.Rules = append(conf.Rules, Rule{in.TempDir, "its private TMPDIR, removed when it ends"})
	for _, gitDir := range in.Remotes {
		if clash := conflict(gitDir, protected); clash != "" {
			conf.Dropped = append(conf.Dropped, Rule{gitDir, "a remote that holds " + clash})
			continue
		}
		conf.Rules = append(conf.Rules, gitStateRules(gitDir, "a push into the local remote "+gitDir)...)
	}
	home, _ := envLookup(in.Environ, "HOME")
	cache, _ := envLookup(in.Environ, "XDG_CACHE_HOME")
	if prof, err := agentProfile(in.Agent, in.Program); err != nil {
		return nil, err
	} else if prof != nil {
		plan, err := planAgent(prof, home, c.TopLevel, in.TempDir, guard.mode == refGuardNS, in.DryRun)
		if err != nil {
			return nil, err
		}
		for _, d := range plan.dirs {
			if clash := conflict(d.Path, protected); clash != "" {
				return nil, decision.New(decision.ConfinementConflict, "the %s profile's %s may not be writable to a confined command: it holds or lies in %s", prof.Name, d.Path, clash).
					WithHint("run it with --no-confine, or move HOME out of the repository")
			}
		}
		conf.Rules = append(conf.Rules, plan.dirs...)
		conf.agent, conf.Agent = plan, prof.Name
		guard.agent = plan
	}
	var defaults []string
	if home != "" && filepath.IsAbs(home) {
		for _, d := range defaultWritable {
			if d == ".cache" && cache != "" {
				continue
			}
			defaults = append(defaults, filepath.Join(home, d))
		}
	}
	if cache != "" && filepath.IsAbs(cache) {
		defaults = append(defaults, cache)
	}
	for _, d := range defaults {
		if _, err := os.Stat(d); err != nil {
			continue
		}
		if clash := conflict(d, protected); clash != "" {
			conf.Dropped = append(conf.Dropped, Rule{d, "holds " + clash})
			continue
		}
		conf.Rules = append(conf.Rules, Rule{d, "an agent's state or cache"})
	}
	conf.Rules = append(conf.Rules, allowed...)
	return conf, nil
}

// planGuard plans the guard of the refs (refguard.go); a dry run makes
// nothing and plans the mount namespace where it would be made.
func planGuard(in ConfinementInput) (*refGuard, error) {
	if err := checkBranchDir(in.Branch, in.Publication); err != nil {
		return nil, err
	}
	ns := canMountNS()
	if in.DryRun {
		g := &refGuard{mode: refGuardLandlock, branchDir: taskRefDir(in.Branch), ownDir: ownRefDir(in.Branch), reftable: gitrepo.Reftable(in.Checkout.CommonDir)}
		if ns {
			g.mode, g.common = refGuardNS, in.Checkout.CommonDir
			g.readOnly = []string{"everything in " + in.Checkout.CommonDir + " but objects, refs, logs and its own admin dir",
				"refs/ and logs/refs/: heads (but " + taskRefDir(in.Branch) + "/), tags, replace, notes, every other ref directory but remotes"}
		} else {
			g.readOnly = []string{"refs/ and the common dir's root: the stash and ref deletions fail (no mount namespace: wt-exec is not root)"}
		}
		return g, nil
	}
	return planRefGuard(in.Checkout.CommonDir, in.Checkout.GitDir, in.Branch, ns)
}

// gitStateDirs are the directories of a git dir that a commit, fetch or
// push writes, each with why.
var gitStateDirs = []struct{ name, why string }{
	{"objects", "objects a commit or fetch adds"},
	{"refs", "branch and remote-tracking refs (the gate still judges each update)"},
	{"logs", "reflogs"},
	{"reftable", "refs, in a reftable repository"},
}

// gitStateRules are the rules for the gitStateDirs of gitDir that exist,
// each with why, or with the why given.
func gitStateRules(gitDir, why string) []Rule {
	var out []Rule
	for _, d := range gitStateDirs {
		p := filepath.Join(gitDir, d.name)
		if _, err := os.Lstat(p); err == nil {
			out = append(out, Rule{p, cmp.Or(why, d.why)})
		}
	}
	return out
}

// protectedPlaces are what a confined command must not be able to write,
// each with what it is: the common dir, the canonical checkout, and every
// other worktree of the repository.
func protectedPlaces(c gitrepo.Checkout) (map[string]string, error) {
	out := map[string]string{c.CommonDir: "the repository's git dir (store, hooks, config)"}
	if top := filepath.Dir(c.CommonDir); filepath.Base(c.CommonDir) == ".git" {
		out[top] = "the canonical checkout " + top
	}
	keys, err := gitrepo.AdminKeys(c.CommonDir)
	if err != nil {
		return nil, decision.Wrap(decision.PathStateUnknown, err, "list the worktrees of %s", c.CommonDir)
	}
	for path, key := range keys {
		if key != c.Key {
			out[path] = "the worktree " + path
		}
	}
	return out, nil
}

// conflict names the protected place that dir contains or lies in, or "".
func conflict(dir string, protected map[string]string) string {
	var names []string
	for p := range protected {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		if within(p, dir) || within(dir, p) {
			return protected[p]
		}
	}
	return ""
}

// within reports whether path is dir or lies beneath it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// Explain is the confinement in words, one rule a line.
func (c *Confinement) Explain(worktree string) []string {
	out := []string{fmt.Sprintf("confinement of %s (Landlock ABI %d)", worktree, c.ABI), "  read     everywhere"}
	for _, r := range c.Rules {
		out = append(out, fmt.Sprintf("  write    %s  (%s)", r.Path, r.Why))
	}
	out = append(out, c.guard.explain()...)
	out = append(out, c.agent.explain()...)
	out = append(out, "  devices  "+strings.Join(devices, " ")+" and its own terminal")
	for _, r := range c.Dropped {
		out = append(out, fmt.Sprintf("  not      %s  (%s)", r.Path, r.Why))
	}
	if c.Signals {
		out = append(out, "  signals  only to processes the command started")
	} else {
		out = append(out, fmt.Sprintf("  signals  not scoped (Landlock ABI %d < %d)", c.ABI, scopeABI))
	}
	return append(out, "  fds      none above 2 but those named with --keep-fd", "  everything else is read-only: other worktrees, the wt store, the hooks, the repository's config")
}

// childEnv returns the environment of the confined command: its private
// TMPDIR and WT_CONFINED set.
func (c *Confinement) childEnv(env []string) []string {
	return append(withoutVar(withoutVar(env, "TMPDIR"), ConfinedEnv), "TMPDIR="+c.TempDir, ConfinedEnv+"=1")
}

func withoutVar(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// ruleset is a Landlock ruleset ready to enforce (fd -1: nothing to
// enforce, Landlock being absent in best-effort mode).
type ruleset struct {
	fd    int
	flags uint32
}

// buildRuleset builds the confinement's Landlock ruleset: reads everywhere,
// writes only beneath the directories of the rules and to the device
// files, and signals only within the domain where the kernel scopes them.
//
// It is one ruleset, not paths then scopes: a domain that handles no file
// right still denies every link and rename across directories (Landlock's
// "refer" is denied by default), which would break git's object writes.
// Networking is not restricted, and of the IPC scopes only signals are.
func (c *Confinement) buildRuleset(terminals []string) (ruleset, error) {
	cfg := landlock.V7
	cfg.HandledAccessNet = 0
	cfg.Scoped = 0
	if c.Signals {
		cfg.Scoped = landlock.ScopedSet(llsys.ScopeSignal)
	}
	var write []string
	for _, r := range c.Rules {
		write = append(write, r.Path)
	}
	dev := landlock.AccessFSSet(llsys.AccessFSReadFile | llsys.AccessFSWriteFile | llsys.AccessFSIoctlDev)
	var private []string
	if c.agent != nil {
		for _, p := range c.agent.private {
			private = append(private, p.path) // in the namespace: the run's copy
		}
	}
	fd, flags, err := cfg.BestEffort().NewRulesetFD(
		landlock.RODirs("/"),
		landlock.RWDirs(write...).WithRefer().WithIoctlDev().IgnoreIfMissing(),
		landlock.PathAccess(dev, append(slices.Clone(devices), terminals...)...).IgnoreIfMissing(),
		landlock.RWFiles(private...).IgnoreIfMissing(),
	)
	return ruleset{fd: fd, flags: flags}, err
}

// forkConfined runs fork (a fork and exec of the command) on an OS thread
// of its own that it first confines, so that the child starts inside the
// Landlock domain (and the mount namespace, if any), and wt-exec's other
// threads do not. A Landlock domain (and no_new_privs, which enforcing one
// needs) belongs to a thread and passes to the processes it forks; Go's
// ForkExec forks from the thread that calls it and runs no code of ours
// between fork and exec, so the restriction is put on that thread before
// the fork. The ruleset is built on that thread after its mount namespace
// is made, so that its paths name what the command will see (the common
// dir's view, not the real common dir). The thread is never unlocked: it
// ends with its goroutine, confined, instead of serving other goroutines.
func forkConfined(c *Confinement, terminals []string, fork func() (int, error)) (int, error) {
	type result struct {
		pid int
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked (see above)
		if err := c.guard.enterMountNS(); err != nil {
			done <- result{0, decision.Wrap(decision.ConfinementUnavailable, err, "make the confined command's mount namespace")}
			return
		}
		rs, err := c.buildRuleset(terminals)
		if err != nil {
			done <- result{0, decision.Wrap(decision.ConfinementUnavailable, err, "build the Landlock ruleset")}
			return
		}
		if rs.fd >= 0 {
			defer unix.Close(rs.fd) // Best effort: a ruleset fd only; the child has its domain by then.
			if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
				done <- result{0, decision.Wrap(decision.ConfinementUnavailable, err, "set no_new_privs for the confined command")}
				return
			}
			if err := llsys.LandlockRestrictSelf(rs.fd, rs.flags); err != nil {
				done <- result{0, decision.Wrap(decision.ConfinementUnavailable, err, "apply the Landlock confinement")}
				return
			}
		}
		pid, err := fork()
		done <- result{pid, err}
	}()
	r := <-done
	return r.pid, r.err
}

// kernelABI is the kernel's Landlock ABI version, 0 when it has none.
func kernelABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// mkTempDir makes the private TMPDIR of a confined command.
func mkTempDir() (string, error) {
	d, err := os.MkdirTemp("", "wt-exec-tmp-")
	if err != nil {
		return "", decision.Wrap(decision.Internal, err, "make a private TMPDIR")
	}
	return d, nil
}

// confinementRefusal is CONFINEMENT_UNAVAILABLE for a kernel whose Landlock
// ABI is below MinConfineABI (0: none).
func confinementRefusal(abi int) *decision.Error {
	why := "this kernel has no Landlock (not built in, or not enabled at boot: lsm=landlock)"
	if abi > 0 {
		why = fmt.Sprintf("this kernel's Landlock ABI %d is older than %d, the first that stops truncate(2)", abi, MinConfineABI)
	}
	return decision.New(decision.ConfinementUnavailable, "wt-exec cannot confine the command: %s", why).
		WithHint("run it unconfined with wt-exec --no-confine, or set the policy to auto: wt-admin policy --confine auto")
}

// confinement decides whether this run's command is confined, and plans
// it: nil when the mode (the policy's, or --confine/--no-confine) is off,
// or auto on a kernel that cannot (said once through Notify). require on
// such a kernel refuses.
func (s *supervisor) confinement(c gitrepo.Checkout, branch string, pol store.Policy) (*Confinement, error) {
	mode := s.opts.confineMode(pol)
	if mode == ConfineOff {
		return nil, nil
	}
	abi := landlockABI()
	if abi < MinConfineABI {
		d := confinementRefusal(abi)
		if mode == ConfineRequire {
			return nil, d
		}
		s.opts.Notify("the command runs unconfined (confine auto): " + d.Error())
		return nil, nil
	}
	if s.tmpDir == "" {
		d, err := mkTempDir()
		if err != nil {
			return nil, err
		}
		s.tmpDir = d
	}
	conf, err := s.opts.planConfinement(c, branch, pol, s.tmpDir, abi, false)
	if err != nil && mode == ConfineAuto && decision.CodeOf(err) == decision.ConfinementUnavailable {
		s.opts.Notify("the command runs unconfined (confine auto): " + err.Error())
		return nil, nil
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
	if abi < MinConfineABI {
		return append(head, "this kernel cannot confine: "+confinementRefusal(abi).Message), nil
	}
	conf, err := opts.planConfinement(c, branch, pol, filepath.Join(os.TempDir(), "wt-exec-tmp-XXXXXXXX"), abi, true)
	if err != nil {
		return nil, err
	}
	return append(head, conf.Explain(c.TopLevel)...), nil
}

// localRemotes are the git dirs of the repository's remotes that are on
// this machine: a url or pushurl of a [remote "..."] section of the
// repository's config that is an absolute path or a file:// URL naming a
// repository (bare, or a checkout's .git). The config file is read
// directly, not through git (which would cost a process at every confined
// start); remotes defined through include files are not seen, which only
// leaves such a remote read-only to the command (a push to it then fails
// with Permission denied).
func localRemotes(commonDir string) []string {
	b, err := os.ReadFile(filepath.Join(commonDir, "config"))
	if err != nil {
		return nil
	}
	var dirs []string
	seen := map[string]bool{}
	inRemote := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			inRemote = strings.HasPrefix(line, `[remote "`)
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !inRemote || !ok {
			continue
		}
		if k = strings.ToLower(strings.TrimSpace(k)); k != "url" && k != "pushurl" {
			continue
		}
		url := strings.Trim(strings.TrimSpace(v), `"`)
		url = strings.TrimPrefix(url, "file://")
		if !filepath.IsAbs(url) {
			continue
		}
		dir := filepath.Clean(url)
		if _, err := os.Stat(filepath.Join(dir, "objects")); err != nil {
			dir = filepath.Join(dir, ".git")
			if _, err := os.Stat(filepath.Join(dir, "objects")); err != nil {
				continue
			}
		}
		if real, err := filepath.EvalSymlinks(dir); err == nil && !seen[real] {
			seen[real] = true
			dirs = append(dirs, real)
		}
	}
	return dirs
}

// confineMode is the run's confinement mode: --confine or --no-confine,
// else the policy's.
func (o Options) confineMode(pol store.Policy) ConfineMode {
	if o.Confine != nil {
		return *o.Confine
	}
	return ParseConfineMode(pol.ConfineMode())
}

// planConfinement plans the run's confinement in c, with tmpDir as its
// private TMPDIR: the policy's and --allow-write's directories, and the
// repository's local remotes.
func (o Options) planConfinement(c gitrepo.Checkout, branch string, pol store.Policy, tmpDir string, abi int, dryRun bool) (*Confinement, error) {
	program := ""
	if len(o.Args) > 0 {
		program = o.Args[0]
	}
	return PlanConfinement(ConfinementInput{Checkout: c, Branch: branch, Publication: pol.PublicationBranch, Environ: o.Environ, Agent: o.Agent, Program: program,
		Allow: append(slices.Clone(pol.ConfineAllow), o.AllowWrite...), Remotes: localRemotes(c.CommonDir),
		TempDir: tmpDir, ABI: abi, DryRun: dryRun})
}

// closeInherited keeps every descriptor above 2 that wt-exec inherited
// from passing into a confined command (a launcher's socket, a terminal or
// a file opened elsewhere would carry rights the confinement denies), but
// those in keep (--keep-fd): it marks them close-on-exec, so wt-exec itself
// may go on using them (--json fd:N). Go opens its own with close-on-exec.
func closeInherited(keep []int) error {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		ents, rerr := os.ReadDir("/proc/self/fd")
		if rerr != nil {
			return decision.Wrap(decision.ConfinementUnavailable, err, "close the inherited descriptors")
		}
		for _, e := range ents {
			if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
				_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC) // Best effort: the listing's own fd is gone by now.
			}
		}
	}
	for _, fd := range keep {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
			return decision.Wrap(decision.Usage, err, "--keep-fd %d: no such open descriptor", fd).
				WithHint("open it before wt-exec starts, e.g. wt-exec --keep-fd %d ... %d<FILE", fd, fd)
		}
	}
	return nil
}
