// Package confine plans and applies the confinement of a command wt-exec
// runs (docs/design.md, "Confinement"): what it may write (Landlock,
// applied on the thread that forks it), its private view of the
// repository's common dir (an overlay in a mount namespace of its own,
// view.go) and the publication of its task branch from that view
// (publish.go), and the agent profiles (agents.go).
package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// MinABI is the oldest Landlock ABI wt confines with: ABI 3 is the
// first that stops truncate(2), without which a confined command could
// still empty another worktree's files.
const MinABI = 3

// scopeABI is the first Landlock ABI that scopes signals: a confined
// command may signal only processes of its own domain.
const scopeABI = 6

// Env marks a confined command's environment: a wt-exec nested in it runs
// its command under the outer lease (it cannot write the store).
const Env = store.ConfinedEnv

// defaultWritable are the directories under $HOME that agents keep their
// own state and caches in, writable by a confined command when they exist
// (docs/decisions.md, "Confinement"). $XDG_CACHE_HOME replaces ~/.cache.
// With a private view each is a layer of the run's own (homeLayer): a
// build cache, a module cache, a package cache each hold code that later
// programs run, so what a run writes there reaches none of them.
var defaultWritable = []string{".cache", ".npm", "go/pkg/mod"}

// viewCaches are more caches a run with a view writes in a layer of its
// own (with Landlock's rules alone they stay read-only).
var viewCaches = []string{".cargo", ".m2"}

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

// Plan is the plan for one confined run.
type Plan struct {
	ABI   int    `json:"abi"`
	Rules []Rule `json:"write"`
	// Dropped are default directories left read-only because they hold a
	// part of the repository a confined command must not write.
	Dropped []Rule `json:"dropped,omitempty"`
	Signals bool   `json:"signals_scoped"`
	TempDir string `json:"tmpdir"`
	// Refs says how its refs are guarded (GuardView or GuardLandlock).
	Refs string `json:"refs"`
	// Agent is the agent profile applied ("" for none).
	Agent string `json:"agent,omitempty"`
	// Sockets are the listening pathname sockets it may reach, Hidden
	// those covered in its mount namespace (sockets.go).
	Sockets []string `json:"sockets,omitempty"`
	Hidden  []string `json:"hidden_sockets,omitempty"`
	// socketsUnread says why the sockets could not be listed ("": they were).
	socketsUnread string
	// guard is the plan behind Refs.
	guard *refGuard
	// agent is the profile's plan.
	agent *agentPlan
}

// View is the run's private view of the common dir, nil when its refs are
// guarded by Landlock alone.
func (c *Plan) View() *View {
	if c == nil || c.guard == nil {
		return nil
	}
	return c.guard.view
}

// Record is the confinement as the lease records it.
func (c *Plan) Record() *store.Confinement {
	r := &store.Confinement{ABI: c.ABI, Devices: devices, SignalsScoped: c.Signals, TempDir: c.TempDir}
	for _, w := range c.Rules {
		r.Write = append(r.Write, w.Path)
	}
	if v := c.View(); v != nil {
		r.View = v.Dir
	}
	return r
}

// Input is what a confinement is planned from.
type Input struct {
	// Checkout is the worktree the command runs in.
	Checkout gitrepo.Checkout
	// Branch is the allocation's branch ("" for a detached worktree).
	Branch string
	// Publication is the policy's publication branch.
	Publication string
	// Home and CacheHome are the command's HOME and XDG_CACHE_HOME.
	Home, CacheHome string
	// Allow are the policy's and --allow-write's directories.
	Allow []string
	// TempDir is the command's private TMPDIR.
	TempDir string
	ABI     int
	// DryRun plans without making anything (--explain).
	DryRun bool
	// Agent is --agent (a profile name), Program the command's program:
	// the agent profile is the one named, or the program's.
	Agent, Program string
	// SSHAuthSock is the command's $SSH_AUTH_SOCK, AllowSockets the
	// sockets of --allow-socket: the pathname sockets it may reach.
	SSHAuthSock  string
	AllowSockets []string
	// OnView, if set, is told the directory of the run's view before it
	// is made (to record it: record.go).
	OnView func(dir string) error
	// Sandbox plans a run with no authority (wt-exec --sandbox, the test
	// of wt-admin land): a private view is required (refused without
	// one), its own admin dir is in the view too, nothing of it is
	// published, the home directory's caches are private layers thrown
	// away with it, every listening socket is covered (the SSH agent's
	// too), no agent profile, no allowed directory, and a network
	// namespace of its own with loopback alone.
	Sandbox bool
}

// New works out what the command may write: beneath its worktree, its own
// git dir, the repository's common dir as its private view shows it (or,
// without one, the objects and the refs its task may move: view.go), a
// private temporary directory (its TMPDIR), the agents' state and cache
// directories under $HOME that exist, and the directories of in.Allow.
// Everything else is read-only: other worktrees, the repositories of
// local remotes, and, without a view, the wt store, the hooks, the
// repository's config, the publication branch, tags, replace and notes
// refs. A directory given in allow that does not exist is refused
// (CONFINEMENT_CONFLICT, with the mkdir that makes it); one that contains
// or lies in a protected place is refused too; a default one is dropped
// and listed. Unless in.DryRun the view's layers are made: the caller
// removes them (View().Remove) when the run has ended.
func New(in Input) (*Plan, error) {
	c := in.Checkout
	if c.Key == gitrepo.MainKey {
		return nil, decision.Say(decision.ConfinementUnavailable, "canonical-checkout", c.TopLevel).
			WithHint("run the agent in a worktree of its task: wt-exec --task KEY --owner NAME -- COMMAND")
	}
	conf := &Plan{ABI: in.ABI, Signals: in.ABI >= scopeABI, TempDir: in.TempDir}
	if in.Sandbox {
		if !mountNSAllowed() && !userNSAllowed() {
			return nil, decision.Say(decision.ConfinementUnavailable, "sandbox-needs", NoViewWhy()).
				WithHint("run it as root, or allow user namespaces (sysctl -w user.max_user_namespaces=15000)")
		}
		in.Allow, in.Agent, in.Program, in.SSHAuthSock, in.AllowSockets = nil, "", "", "", nil
	}
	protected, err := protectedPlaces(c)
	if err != nil {
		return nil, err
	}
	// The allowed directories first: a refused one leaves nothing made.
	allowed, err := allowedDirs(in.Allow, protected)
	if err != nil {
		return nil, err
	}
	prof, err := agentProfile(in.Agent, in.Program)
	if err != nil {
		return nil, err
	}
	guard, err := planGuard(c, in.Branch, in.Publication, in.DryRun, in.OnView)
	if err != nil {
		return nil, err
	}
	conf.guard, conf.Refs = guard, guard.mode
	if in.Sandbox {
		guard.view.sandbox = true
	}
	gitDirWhy := "its git dir: index, HEAD, its reflog, its own refs"
	if in.Sandbox {
		gitDirWhy = "its git dir, in the view: what it writes there is thrown away"
	}
	conf.Rules = append(conf.Rules, Rule{c.TopLevel, "the worktree"}, Rule{c.GitDir, gitDirWhy})
	conf.Rules = append(conf.Rules, guard.rules(c.CommonDir)...)
	conf.Rules = append(conf.Rules, Rule{in.TempDir, "its private TMPDIR, removed when it ends"})
	if prof != nil {
		if err := conf.addAgent(prof, in, c, guard, protected); err != nil {
			_ = guard.view.Remove() // Best effort: the layers just made, empty.
			return nil, err
		}
	}
	if err := conf.addHomeDirs(in, guard, protected); err != nil {
		_ = guard.view.Remove() // Best effort: the layers just made.
		return nil, err
	}
	conf.Rules = append(conf.Rules, allowed...)
	if guard.mode == GuardView {
		var allow []string
		for _, p := range append([]string{in.SSHAuthSock}, in.AllowSockets...) {
			if p != "" && filepath.IsAbs(p) {
				allow = append(allow, filepath.Clean(p))
			}
		}
		reach, hide, err := planSockets(allow, conf.Rules)
		if err != nil {
			conf.socketsUnread = err.Error()
		}
		conf.Sockets, conf.Hidden = reach, hide
		guard.hide = hide
	}
	return conf, nil
}

// addHomeDirs adds the agents' state and cache directories under $HOME
// (and $XDG_CACHE_HOME) that exist: with a view, each under a layer of
// the run's own, thrown away when it ends; without one, the real ones. A
// directory that holds something protected is dropped, and listed.
func (conf *Plan) addHomeDirs(in Input, guard *refGuard, protected map[string]string) error {
	var defaults []string
	if in.Home != "" && filepath.IsAbs(in.Home) {
		dirs := defaultWritable
		if guard.mode == GuardView {
			dirs = append(slices.Clone(dirs), viewCaches...)
		}
		for _, d := range dirs {
			if d == ".cache" && in.CacheHome != "" {
				continue
			}
			defaults = append(defaults, filepath.Join(in.Home, d))
		}
	}
	if in.CacheHome != "" && filepath.IsAbs(in.CacheHome) {
		defaults = append(defaults, in.CacheHome)
	}
	for _, d := range defaults {
		if _, err := os.Stat(d); err != nil {
			continue
		}
		if clash := conflict(d, protected); clash != "" {
			conf.Dropped = append(conf.Dropped, Rule{d, "holds " + clash})
			continue
		}
		if guard.mode == GuardView {
			if err := homeLayer(guard, d, in.DryRun); err != nil {
				return err
			}
			conf.Rules = append(conf.Rules, Rule{d, "a cache: a layer of the run's own over it, thrown away when it ends (the real one is read, never written)"})
			continue
		}
		conf.Rules = append(conf.Rules, Rule{d, "an agent's state or cache (no private view: the real one)"})
	}
	return nil
}

// allowedDirs are the rules of the directories --allow-write (and the
// policy) name: each absolute, existing, and holding nothing protected.
func allowedDirs(dirs []string, protected map[string]string) ([]Rule, error) {
	var allowed []Rule
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			return nil, decision.Say(decision.Usage, "allow-write", d).WithHint("name the directory by its absolute path")
		}
		d = filepath.Clean(d)
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return nil, decision.Say(decision.ConfinementConflict, "may-not", d).
				WithHint("make it first: mkdir -p %s", shell.Word(d))
		}
		if clash := conflict(d, protected); clash != "" {
			return nil, decision.Say(decision.ConfinementConflict, "may-not-writable", d, clash).
				WithHint("allow a directory that holds no worktree and nothing of the repository's git dir")
		}
		allowed = append(allowed, Rule{d, "allowed (policy or --allow-write)"})
	}
	return allowed, nil
}

// addAgent plans agent profile prof for the run (its state directories,
// layers, protected and private files) into conf and its guard; a state
// directory that holds something protected is refused.
func (conf *Plan) addAgent(prof *AgentProfile, in Input, c gitrepo.Checkout, guard *refGuard, protected map[string]string) error {
	plan, err := planAgent(prof, in.Home, c.TopLevel, in.TempDir, guard.mode == GuardView, in.DryRun)
	if err != nil {
		return err
	}
	for _, d := range plan.dirs {
		if clash := conflict(d.Path, protected); clash != "" {
			return decision.Say(decision.ConfinementConflict, "profile-may", prof.Name, d.Path, clash).
				WithHint("run it with --no-confine, or move HOME out of the repository")
		}
	}
	conf.Rules = append(conf.Rules, plan.dirs...)
	conf.agent, conf.Agent = plan, prof.Name
	guard.agent = plan
	for _, o := range plan.overlays {
		guard.view.workDirs = append(guard.view.workDirs, o.work)
	}
	return nil
}

// homeLayer gives a run with a private view a layer of its own over the
// home directory's cache d (an overlay mounted in its namespace: the real
// d below, read-only, so a warm cache still serves; the layer in the
// view's directory, removed with it), so that what the run writes there
// reaches no later program, unconfined or another agent: a build cache, a
// module cache, a package cache each hold code others run. Mounting it
// costs the same whatever the cache holds.
func homeLayer(g *refGuard, d string, dryRun bool) error {
	layer := filepath.Join(g.view.Dir, "home", strconv.Itoa(len(g.home)))
	o := agentOverlay{path: d, upper: filepath.Join(layer, "upper"), work: filepath.Join(layer, "work")}
	g.home = append(g.home, o)
	g.view.workDirs = append(g.view.workDirs, o.work)
	if dryRun {
		return nil
	}
	for _, sub := range []string{o.upper, o.work} {
		if err := os.MkdirAll(sub, 0o700); err != nil {
			return decision.SayWrap(decision.ConfinementUnavailable, err, "make-sandbox", d)
		}
	}
	return nil
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
		return nil, decision.SayWrap(decision.PathStateUnknown, err, "list-worktrees", c.CommonDir)
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

// Boundary says, for the end of a run that failed, where the run's
// confinement stopped it and the way through: wt does not see the
// kernel's refusals (a Permission denied, a socket that refuses), so it
// says where they come from and what lets a task through.
func (c *Plan) Boundary(worktree string) string {
	others := 0
	for _, r := range c.Rules {
		if r.Path != worktree && r.Path != c.TempDir {
			others++
		}
	}
	b := fmt.Sprintf("this run was confined: it could write only in its worktree %s, its own TMPDIR %s (not /tmp) and %d other place(s)", worktree, c.TempDir, others)
	if len(c.Hidden) > 0 {
		b += fmt.Sprintf(", and %d listening socket(s) were covered", len(c.Hidden))
	}
	return b + fmt.Sprintf("; a \"Permission denied\" (or a socket that refuses) above is that boundary. The way through: write temporary files under $TMPDIR, not /tmp; wt-exec --allow-write DIR or --allow-socket PATH for a place the task needs (wt-admin policy --confine-allow DIR for every run); the whole list: wt-exec -C %s --confine --explain -- true", shell.Word(worktree))
}

// Explain is the confinement in words, one rule a line.
func (c *Plan) Explain(worktree string) []string {
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
	switch {
	case c.Refs != GuardView:
		out = append(out, "  sockets  every pathname socket it can find (no mount namespace to cover them in)")
	case c.socketsUnread != "":
		out = append(out, "  sockets  none covered: the listening sockets cannot be read: "+c.socketsUnread)
	default:
		out = append(out, fmt.Sprintf("  sockets  reachable: %s; %d other listening socket(s) covered: %s", orNone(c.Sockets), len(c.Hidden), orNone(c.Hidden)))
	}
	if c.Signals {
		out = append(out, "  sockets  abstract ones only of its own (Landlock ABI >= 6)")
		out = append(out, "  signals  only to processes the command started")
	} else {
		out = append(out, fmt.Sprintf("  signals  not scoped (Landlock ABI %d < %d)", c.ABI, scopeABI))
	}
	return append(out, "  fds      none above 2 but those named with --keep-fd", "  everything else is read-only: other worktrees, the wt store, the hooks, the repository's config")
}

// ruleset is a Landlock ruleset ready to enforce (fd -1: nothing to
// enforce, Landlock being absent in best-effort mode).
type ruleset struct {
	fd    int
	flags uint32
}

// ruleset builds the confinement's Landlock ruleset: reads everywhere,
// writes only beneath the directories of the rules, to the device files
// devs and to the files private (the agent profile's copies), and signals
// only within the domain where the kernel scopes them.
//
// It is one ruleset, not paths then scopes: a domain that handles no file
// right still denies every link and rename across directories (Landlock's
// "refer" is denied by default), which would break git's object writes.
// Networking is not restricted, and of the IPC scopes only signals are.
func (c *Plan) ruleset(devs, private []string) (ruleset, error) {
	cfg := landlock.V7
	cfg.HandledAccessNet = 0
	cfg.Scoped = 0
	if c.Signals {
		cfg.Scoped = landlock.ScopedSet(llsys.ScopeSignal | llsys.ScopeAbstractUnixSocket)
	}
	var write []string
	for _, r := range c.Rules {
		write = append(write, r.Path)
	}
	dev := landlock.AccessFSSet(llsys.AccessFSReadFile | llsys.AccessFSWriteFile | llsys.AccessFSIoctlDev)
	fd, flags, err := cfg.BestEffort().NewRulesetFD(
		landlock.RODirs("/"),
		landlock.RWDirs(write...).WithRefer().WithIoctlDev().IgnoreIfMissing(),
		landlock.PathAccess(dev, devs...).IgnoreIfMissing(),
		landlock.RWFiles(private...).IgnoreIfMissing(),
	)
	return ruleset{fd: fd, flags: flags}, err
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " ")
}

// Fork starts the command (path, argv, attr as for syscall.ForkExec)
// confined, with terminals its own. A view made in a user namespace is
// made by the helper the command is exec'd from (userns.go); otherwise
// the fork happens on an OS thread of its own that is confined first, so
// that the child starts inside the Landlock domain (and the mount
// namespace, if any), and wt-exec's other threads do not. A Landlock
// domain (and no_new_privs, which enforcing one needs) belongs to a thread
// and passes to the processes it forks; Go's ForkExec forks from the
// thread that calls it and runs no code of ours between fork and exec, so
// the restriction is put on that thread before the fork. The ruleset is
// built on that thread after its mount namespace is made, so that its
// paths name what the command will see (the common dir's view, not the
// real common dir). The thread is never unlocked: it ends with its
// goroutine, confined, instead of serving other goroutines.
func (c *Plan) Fork(terminals []string, path string, argv []string, attr *syscall.ProcAttr) (int, error) {
	if v := c.View(); v != nil && v.userNS {
		pid, err := c.forkUserNS(terminals, path, argv, attr)
		var no syscall.Errno
		if err != nil && !errors.As(err, &no) {
			return 0, decision.SayWrap(decision.ConfinementUnavailable, err, "make-confined")
		}
		return pid, err
	}
	type result struct {
		pid int
		err error
	}
	var private []string
	if c.agent != nil {
		for _, p := range c.agent.private {
			private = append(private, p.path) // in the namespace: the run's copy
		}
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked (see above)
		if err := c.guard.enterMountNS(); err != nil {
			done <- result{0, decision.SayWrap(decision.ConfinementUnavailable, err, "make-confined-command")}
			return
		}
		rs, err := c.ruleset(append(slices.Clone(devices), terminals...), private)
		if err != nil {
			done <- result{0, decision.SayWrap(decision.ConfinementUnavailable, err, "build-landlock")}
			return
		}
		if rs.fd >= 0 {
			defer unix.Close(rs.fd) // Best effort: a ruleset fd only; the child has its domain by then.
			if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
				done <- result{0, decision.SayWrap(decision.ConfinementUnavailable, err, "set-no")}
				return
			}
			if err := llsys.LandlockRestrictSelf(rs.fd, rs.flags); err != nil {
				done <- result{0, decision.SayWrap(decision.ConfinementUnavailable, err, "apply-landlock")}
				return
			}
		}
		pid, err := syscall.ForkExec(path, argv, attr)
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

// MakeTempDir makes the private TMPDIR of a confined command.
func MakeTempDir() (string, error) {
	d, err := os.MkdirTemp("", "wt-exec-tmp-")
	if err != nil {
		return "", decision.SayWrap(decision.Internal, err, "make-private")
	}
	return d, nil
}

// Refusal is CONFINEMENT_UNAVAILABLE for a kernel whose Landlock
// ABI is below MinABI (0: none).
func Refusal(abi int) *decision.Error {
	why := "this kernel has no Landlock (not built in, or not enabled at boot: lsm=landlock)"
	if abi > 0 {
		why = fmt.Sprintf("this kernel's Landlock ABI %d is older than %d, the first that stops truncate(2)", abi, MinABI)
	}
	return decision.Say(decision.ConfinementUnavailable, "wt-exec", why).
		WithHint("run it unconfined with wt-exec --no-confine, or set the policy to auto: wt-admin policy --confine auto")
}

// CloseInherited keeps every descriptor above 2 that wt-exec inherited
// from passing into a confined command (a launcher's socket, a terminal or
// a file opened elsewhere would carry rights the confinement denies), but
// those in keep (--keep-fd): it marks them close-on-exec, so wt-exec itself
// may go on using them (--json fd:N). Go opens its own with close-on-exec.
func CloseInherited(keep []int) error {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		ents, rerr := os.ReadDir("/proc/self/fd")
		if rerr != nil {
			return decision.SayWrap(decision.ConfinementUnavailable, err, "close-inherited")
		}
		for _, e := range ents {
			if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
				_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC) // Best effort: the listing's own fd is gone by now.
			}
		}
	}
	for _, fd := range keep {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
			return decision.SayWrap(decision.Usage, err, "keep-fd-no", fd).
				WithHint("open it before wt-exec starts, e.g. wt-exec --keep-fd %d ... %d<FILE", fd, fd)
		}
	}
	return nil
}
