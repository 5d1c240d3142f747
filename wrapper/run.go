package wrapper

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/core/waitline"
	"github.com/wt-tool/wt/wrapper/child"
	"github.com/wt-tool/wt/wrapper/confine"
)

// PTYMode chooses how the child meets the terminal (child.PTYMode).
type PTYMode = child.PTYMode

// PTY modes.
const (
	// PTYAuto gives the child a pty when stdin and stdout are terminals.
	PTYAuto = child.PTYAuto
	// PTYOn always gives the child a new pty.
	PTYOn = child.PTYOn
	// PTYOff never does: with a terminal on stdin, the child's group
	// becomes the terminal's foreground group instead.
	PTYOff = child.PTYOff
)

// DefaultGrace is how long leftovers get between SIGTERM and SIGKILL.
const DefaultGrace = 10 * time.Second

// DefaultKind is the occupancy kind when none is given: wt-exec exists to
// wrap agents.
const DefaultKind = "agent"

// Options is one wt-exec run.
type Options struct {
	// Dir is the directory in the worktree (-C); "" is the current one.
	Dir string
	// ClientID defaults to $WT_CLIENT_ID, else the command's basename made
	// valid. SessionID and RunID default to $WT_SESSION_ID and $WT_RUN_ID.
	ClientID         string
	SessionID, RunID *string
	// Holder is the holder selector (self, PID, ancestor:NAME). "" means the
	// outer wt-exec's holder when this one runs under it ($WT_HOLDER_PID
	// naming a live ancestor), else self.
	Holder string
	Owner  string
	// Allocation, ExpectGeneration and ExpectHead: see lease.Request.
	Allocation       string
	ExpectGeneration *int
	ExpectHead       string
	Kind             string
	TTL              time.Duration
	Grace            time.Duration
	PTY              PTYMode
	Args             []string

	Stdin, Stdout, Stderr *os.File
	// Environ is the environment the child inherits (WT_* lease variables
	// are replaced).
	Environ []string
	// Granted, when set, is called with the grant just before the child
	// starts (the store's lock free): the caller tells the person
	// what was granted (a takeover, --verbose) before a command that may
	// run for hours, not after it exits. It must not block.
	Granted func(lease.Grant)
	// Confine, when set, overrides the policy's confinement mode for this
	// run (--confine: require; --no-confine: off). AllowWrite adds
	// directories a confined command may write beneath.
	Confine    *ConfineMode
	AllowWrite []string
	// AllowSockets are the pathname sockets (--allow-socket) a confined
	// command may reach beside the SSH agent's.
	AllowSockets []string
	// KeepFDs are inherited descriptors above 2 that a confined command
	// gets (--keep-fd); every other one is closed for it.
	KeepFDs []int
	// Agent names the agent profile of a confined command (--agent); ""
	// picks it by the command's program name.
	Agent string
	// Sandbox runs the command with no authority (--sandbox): confined in
	// a private view that nothing leaves (no publication, its admin dir
	// private too, its home caches private layers), no broker, every
	// socket covered, loopback alone for a network; refused
	// (CONFINEMENT_UNAVAILABLE) where the kernel cannot give it.
	// wt-admin land runs its test so.
	Sandbox bool
	// Verbose reports, through Notify, what wt-exec does without (a cgroup
	// it may not make).
	Verbose bool
	// Nested runs the command under a lease an ancestor holds, without
	// touching the store: a wt-exec inside a confined command (which may
	// not write the store), once its caller proved the entitlement.
	Nested bool
	// Wait makes a refusal because the lease is held (WRITER_LEASE_HELD,
	// FLEET_LEASE_HELD) a wait, in line with other waiters, until the lease
	// can be taken or Timeout (0: none) has passed.
	Wait    bool
	Timeout time.Duration
	// Started, when set, is called with the grant once the child runs and
	// the lease section is over (it may block: no lock is held).
	Started func(lease.Grant)
	// Waiting, when set, is told once whom a --wait run waits on.
	Waiting func(string)
	// Notify reports what happens after the child started: renewals that
	// failed, leftovers stopped, a lease left in place. The caller prints.
	Notify func(string)
	// CheckGate, when set, is asked before the lease, with no lock held,
	// whether commits in the linked worktree c meet wt's gate; an error
	// refuses the run (it may put the gate back and say so instead).
	CheckGate func(c gitrepo.Checkout) error
	// AfterConfined, when set, is called once a confined command and
	// everything it started have ended, with the lease still held: what
	// it could write in its worktree that a later commit there runs (a
	// hook manager's generated hooks dir) is checked there.
	AfterConfined func(c gitrepo.Checkout)
	// ExplainUngated, when set, says why moves of the task branch during
	// the run met no gate, from what a commit in c meets now ("" when it
	// cannot tell).
	ExplainUngated func(c gitrepo.Checkout) string
}

// Result is how a run ended.
type Result struct {
	Grant lease.Grant
	// Status is wt-exec's exit status: the child's, or 128+N when it died
	// of signal N.
	Status int
	// Died is the signal the child died of, 0 when it exited: wt-exec
	// then ends by the same signal (DieBy), so that a calling shell sees a
	// signal death (a loop of wt-exec runs stops at the first Ctrl-C).
	Died unix.Signal
	// ToGroup is set when Died is a terminal's interrupt (SIGINT, SIGQUIT)
	// and wt-exec runs in the terminal's foreground group: the key reached
	// the command alone (wt-exec's raw pty relay, or the command's group
	// in the foreground), where a terminal would have signalled the whole
	// foreground group, so DieBy signals that group, the calling shell
	// included, as the terminal would have.
	ToGroup  bool
	Released lease.Released
}

// leaseVars are the variables wt-exec sets for its child (docs/design.md, "wt-exec").
var leaseVars = []string{"WT_LEASE_ID", "WT_ALLOCATION_ID", "WT_CLIENT_ID", "WT_HOLDER_PID", "WT_SESSION_ID", "WT_RUN_ID"}

// Run resolves the holder, takes the lease, runs the child, reaps
// everything and releases what it acquired. An error means the child never
// started: a decision (exit 125), COMMAND_NOT_FOUND (127) or
// COMMAND_NOT_EXECUTABLE (126).
func Run(opts Options) (Result, error) {
	var res Result
	opts = withDefaults(opts)
	t, err := locate(opts)
	if err != nil {
		return res, err
	}
	c, repo := t.c, t.repo
	s := &supervisor{opts: opts, repo: repo, grant: &res.Grant}
	if s.fenceSecret, err = fleet.NewFenceSecret(); err != nil {
		return res, decision.SayWrap(decision.Internal, err, "make-run")
	}
	if err := s.prepare(); err != nil {
		return res, err
	}
	// From here a stop signal ends every wait for the store's lock, and
	// the command never starts.
	var endWatch func()
	s.startCtx, endWatch = s.child.WatchStart()
	if err := s.beforeLease(c); err != nil {
		endWatch()
		return res, err
	}
	if opts.Nested {
		return s.runNested(t.path, endWatch)
	}
	repo.Store = repo.Store.WithContext(s.startCtx)
	req := lease.Request{Holder: t.holder, Owner: opts.Owner, TTL: opts.TTL, Kind: opts.Kind, Fence: s.fence, Confined: &store.Confinement{},
		Allocation: opts.Allocation, ExpectGeneration: opts.ExpectGeneration, ExpectHead: opts.ExpectHead}
	acquire := func() error {
		var err error
		res.Grant, err = lease.Acquire(repo, c, req, scan, s.startChild(c, &req, t.path))
		return err
	}
	if opts.Wait {
		err = s.waitAndAcquire(repo.Store.Root(), c, t.holder.ClientID, acquire)
	} else {
		err = acquire()
	}
	endWatch()
	repo.Store = repo.Store.WithContext(context.Background())
	if err != nil {
		s.abandonStart(res.Grant)
		return res, err
	}
	if opts.Started != nil {
		opts.Started(res.Grant)
	}
	s.superviseInto(&res)
	s.stopBroker()
	s.afterChild(c, &res)
	return res, nil
}

// target is what a run is about: the command's path, its holder, and the
// worktree it runs in.
type target struct {
	path   string
	holder proc.Holder
	c      gitrepo.Checkout
	repo   *alloc.Repo
}

// locate finds the command (before any lease: a typo costs nothing), the
// holder and the governed worktree that holds opts.Dir.
func locate(opts Options) (target, error) {
	var t target
	if len(opts.Args) == 0 {
		return t, decision.Say(decision.Usage, "no-command-given").WithHint("wt-exec [OPTIONS] -- COMMAND [ARG...]")
	}
	var err error
	if t.path, err = LookPath(opts.Args[0], opts.Dir, opts.Environ); err != nil {
		return t, err
	}
	if t.holder, err = resolveHolder(opts); err != nil {
		return t, err
	}
	dir := cmp.Or(opts.Dir, ".")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return t, decision.Say(decision.InvalidTarget, "there-no", dir).
			WithHint("name a directory of a governed worktree: wt-admin status lists them")
	}
	if t.c, err = gitrepo.Locate(dir); err != nil {
		return t, err
	}
	t.repo, err = alloc.OpenCheckout(t.c)
	return t, err
}

// beforeLease runs, with no lock held, what a linked worktree's run does
// before it asks for the lease: what an earlier run left in the admin dir
// is put aside before any git runs there (a FIFO as HEAD, a planted
// core.hooksPath), the gate is checked, and fleet work begins.
func (s *supervisor) beforeLease(c gitrepo.Checkout) error {
	if s.opts.Nested || c.Key == gitrepo.MainKey {
		return nil
	}
	if os.Getenv(ConfinedEnv) == "" {
		interruptible := &alloc.Repo{Git: s.repo.Git, Store: s.repo.Store.WithContext(s.startCtx)}
		if err := quarantineAdmin(interruptible, c, s.opts.Notify); err != nil {
			return err
		}
	}
	if s.opts.CheckGate != nil {
		if err := s.opts.CheckGate(c); err != nil {
			return err
		}
	}
	s.startFleet()
	return nil
}

// startChild is the grant's last step, inside the lease's section: the
// view recovered, the confinement built and recorded in req, then the
// child started in its cgroup. Its process group is what the lease
// records.
func (s *supervisor) startChild(c gitrepo.Checkout, req *lease.Request, path string) func(g lease.Grant) (*store.ChildGroup, error) {
	opts, repo := s.opts, s.repo
	return func(g lease.Grant) (*store.ChildGroup, error) {
		// Fleet work begun early and not used ends before the
		// command exists (a process of it would count as leftover).
		s.early.close()
		if s.startCtx != nil && s.startCtx.Err() != nil {
			return nil, s.stopped()
		}
		if err := s.recoverView(c, g); err != nil {
			return nil, err
		}
		s.onView = s.viewRecorder(c, g)
		conf, err := s.confinement(c, branchOf(g.Allocation), g.Policy)
		if err != nil {
			return nil, err
		}
		if conf != nil {
			*req.Confined = *conf.Record()
			if opts.Sandbox {
				// Nothing of a sandbox is published: its view goes.
				s.view = conf.View()
				s.view.Recorded(repo.Store.Root(), c.Key, g.Allocation.TaskKey)
			} else if err := s.preparePublisher(c, g, conf); err != nil {
				return nil, err
			}
		}
		if opts.Granted != nil {
			opts.Granted(g)
		}
		name := "wt-exec-" + strconv.Itoa(os.Getpid())
		if g.Lease.LeaseID != "" {
			name = "wt-lease-" + g.Lease.LeaseID
		}
		s.prepareCgroup(name)
		if g.Lease.LeaseID != "" && s.holderLock == nil {
			s.holderLock = takeHolderLock(c.GitDir, g.Lease.LeaseID)
		}
		s.branchMark = markBranch(c, g)
		child, err := s.launch(path, childEnv(opts.Environ, g, s.fenceSecret), conf, c, g.Allocation.TaskKey)
		if err == nil {
			s.startPublisher()
		}
		return child, err
	}
}

// viewRecorder records a confined run's view in the store when it is
// made: a sandbox's to be discarded, a run's with its branch and base.
func (s *supervisor) viewRecorder(c gitrepo.Checkout, g lease.Grant) func(dir string) error {
	root := s.repo.Store.Root()
	return func(dir string) error {
		if s.opts.Sandbox {
			return confine.SandboxRecorder(root, c.Key, g.Allocation.TaskKey, c.CommonDir)(dir)
		}
		base, err := branchBase(c, g.Allocation)
		if err != nil {
			return err
		}
		s.viewBase = base
		return confine.Recorder(root, c.Key, g.Allocation.TaskKey, branchOf(g.Allocation), base, c.CommonDir)(dir)
	}
}

// abandonStart undoes a start that failed: a child whose group could not
// be added to the lease is stopped (it must not go on with a lease that
// does not know it), and what the grant wrote is given back.
func (s *supervisor) abandonStart(g lease.Grant) {
	if g.Started {
		s.child.Abort()
		s.stopBroker()
		s.endView()
	} else {
		s.dropView()
		s.child.Restore()
		s.stopCatching()
	}
	if g.Applicable {
		if _, err := lease.Release(s.repo, g, scan, nil); err != nil {
			s.opts.Notify("the lease could not be released: " + err.Error())
		}
	}
	s.releaseResources()
}

// afterChild is what follows the child's end, the lease still held: what
// the run's refusals and boundary were, a confined run's admin dir
// judged, its branch's moves imported and checked against the gate, its
// view ended, then the lease released.
func (s *supervisor) afterChild(c gitrepo.Checkout, res *Result) {
	opts, repo := s.opts, s.repo
	if said := refusalsSaid(s.refusals); said != "" {
		s.notify(said)
	}
	if res.Status != 0 && s.boundary != "" {
		// The kernel's refusals are the command's to print; where they
		// come from, and the way through, is wt's to say.
		s.notify(s.boundary)
	}
	if s.tmpDir != "" {
		// A confined run's real admin dir is its own to write: what it
		// left there is judged before anyone else's git runs there.
		if err := quarantineAdmin(repo, c, s.notify); err != nil {
			s.notify("the run's admin dir could not be checked: " + err.Error())
		}
		if opts.AfterConfined != nil {
			opts.AfterConfined(c)
		}
	}
	// A confined run's moves of its branch are in its view: the gate's
	// approvals are judged against the view's reflog, before it goes.
	rc := c
	if root := s.view.Root(); root != "" {
		rc.CommonDir = root
	}
	if !opts.Sandbox {
		importPending(repo, rc, res.Grant, s.branchMark)
		reportUngated(repo, rc, res.Grant, s.branchMark, opts.ExplainUngated, opts.Notify)
	}
	s.endView()
	var err error
	res.Released, err = lease.Release(repo, res.Grant, scan, s.occupants(c, res.Grant))
	if err != nil {
		opts.Notify("releasing the lease failed: " + err.Error())
	} else if res.Released.Kept != "" {
		opts.Notify("the lease was left in place: " + res.Released.Kept)
	}
	s.releaseResources()
}

// releaseResources gives back what the run held beside the lease: the
// fleet lease, the holder lock, the temporary dir and the cgroup.
func (s *supervisor) releaseResources() {
	s.releaseFleet()
	s.holderLock.release()
	s.removeTempDir()
	s.child.DropCgroup()
}

// quarantineAdmin puts aside what worktree c's admin dir holds that git
// would trip on or run (alloc.QuarantineAdmin), and says what it did.
func quarantineAdmin(repo *alloc.Repo, c gitrepo.Checkout, notify func(string)) error {
	q, err := repo.QuarantineAdmin(context.Background(), c.Key)
	if len(q) > 0 {
		notify(decision.AdminDirUnsafe + ": " + alloc.DescribeQuarantine(c.TopLevel, q))
	}
	return err
}

func scan() (lease.Evidence, error) {
	s, err := proc.NewScan()
	if err != nil {
		return nil, err
	}
	return s, nil
}

// LookPath finds the command as a shell would, with the child's PATH: not
// found is COMMAND_NOT_FOUND (exit 127), found but not runnable is
// COMMAND_NOT_EXECUTABLE (exit 126). A relative path is taken from dir, where
// the child runs, as with git -C. It runs before the lease is taken, so a
// typo costs nothing.
func LookPath(name, dir string, environ []string) (string, error) {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) && dir != "" {
			name = filepath.Join(dir, name)
		}
		fi, err := os.Stat(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", decision.Say(decision.CommandNotFound, "no-such", name)
		case err != nil:
			return "", decision.SayWrap(decision.CommandNotRunnable, err, "as-given", name)
		case fi.IsDir() || fi.Mode()&0o111 == 0:
			return "", decision.Say(decision.CommandNotRunnable, "not-executable", name).
				WithHint("chmod +x %s, or run it through its interpreter", shell.Word(name))
		}
		return name, nil
	}
	pathVar, _ := envLookup(environ, "PATH")
	for _, d := range filepath.SplitList(pathVar) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", decision.Say(decision.CommandNotFound, "command-not", name).
		WithHint("check the command's name, or give its path")
}

// resolveHolder builds the holder from the options and the environment.
func resolveHolder(opts Options) (proc.Holder, error) {
	env := func(k string) (string, bool) { return envLookup(opts.Environ, k) }
	names := proc.Names{ClientID: opts.ClientID, SessionID: opts.SessionID, RunID: opts.RunID}
	if names.ClientID == "" {
		if v, ok := env("WT_CLIENT_ID"); ok && v != "" {
			names.ClientID = v
		} else {
			names.ClientID = clientIDFrom(opts.Args[0])
		}
	}
	if v, ok := env("WT_SESSION_ID"); ok && names.SessionID == nil {
		names.SessionID = &v
	}
	if v, ok := env("WT_RUN_ID"); ok && names.RunID == nil {
		names.RunID = &v
	}
	selector := opts.Holder
	if selector == "" {
		selector = "self"
		if v, ok := env("WT_HOLDER_PID"); ok && isAncestor(v) {
			selector = v
		}
	}
	return proc.Resolve(selector, names)
}

// isAncestor reports whether the decimal pid v names an ancestor of this
// process: an outer wt-exec's holder is inherited only by its descendants.
func isAncestor(v string) bool {
	pid, err := strconv.Atoi(v)
	if err != nil || pid < 2 {
		return false
	}
	anc, err := proc.NewReader().Ancestors(os.Getpid())
	return err == nil && slices.Contains(anc, pid)
}

// clientIDFrom makes a valid client id from a command's basename: characters
// outside the pattern become '-', a leading one that is not a letter or digit
// is dropped, and it is cut at 128 bytes.
func clientIDFrom(cmd string) string {
	b := []byte(filepath.Base(cmd))
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '_' || ch == ':' || ch == '-') {
			b[i] = '-'
		}
	}
	s := strings.TrimLeft(string(b), ".-_:")
	if len(s) > 128 {
		s = s[:128]
	}
	if s == "" {
		return "wt-exec"
	}
	return s
}

// envLookup is the value of name in environ (the last one, as the
// environment a process gets would have it), and whether it is set.
func envLookup(environ []string, name string) (string, bool) {
	for _, kv := range slices.Backward(environ) {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// childEnv is environ without inherited lease variables, plus the grant's.
func childEnv(environ []string, g lease.Grant, secret string) []string {
	out := make([]string, 0, len(environ)+6)
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(leaseVars, k) {
			out = append(out, kv)
		}
	}
	out = append(out, g.Env()...)
	if g.Policy.FleetServerFence && secret != "" && g.Role == store.RoleFeature {
		// The grant's token (fleet.FenceToken): in fleet mode the fleet
		// key's create revision, else the grant's time, which orders the
		// grants of the task for the remote; and the secret made for this
		// run, which nothing records but this environment.
		epoch := int64(0)
		if f := g.Lease.Fleet; f != nil {
			epoch = f.Revision
		} else if t, err := time.Parse(time.RFC3339Nano, g.Lease.AcquiredAt); err == nil {
			epoch = t.UnixNano()
		}
		switch {
		case epoch <= 0:
		case inheritsToken(environ, g):
			// A wt-exec nested in the one that holds this very lease
			// (an agent running wt-exec -- make test): its pushes keep
			// the outer run's token, the one the remote knows. A second
			// token for the task would make every push ambiguous, and
			// the remote refuses those.
		default:
			out = withPushOption(out, fleet.FenceToken(g.Allocation.TaskKey, epoch, secret))
			if f := g.Lease.Fleet; f != nil {
				if space := fleet.SpaceOfKey(f.Key); space != "" {
					out = withPushOption(out, fleet.SpaceOption+"="+space)
				}
			} else {
				// Local mode: the holder, so that a remote on this machine
				// refuses the token once the lease has ended.
				out = withPushOption(out, fleet.HolderOption+"="+fleet.HolderValue(g.Lease.Holder.Identity()))
			}
		}
	}
	return withGitDefault(out, "reftable.lockTimeout", reftableLockTimeout)
}

// inheritsToken reports whether environ, a nested wt-exec's, comes from
// the run that holds g's lease (WT_LEASE_ID) and already gives every push
// a fencing token for g's task.
func inheritsToken(environ []string, g lease.Grant) bool {
	if id, _ := envLookup(environ, "WT_LEASE_ID"); id == "" || id != g.Lease.LeaseID {
		return false
	}
	prefix := fleet.FenceOption + "=" + g.Allocation.TaskKey + "@"
	found, _ := gitConfigHas(environ, func(k, v string) bool { return k == "push.pushOption" && strings.HasPrefix(v, prefix) })
	return found
}

// reftableLockTimeout is how long (ms) the gits of wt-exec's command wait
// for a reftable stack's lock, unless the caller set it: every ref update
// holds the stack's one lock while the reference-transaction gate runs,
// and git's default 100 ms was too short for ten agents committing at once
// on a loaded machine ("fatal: cannot lock references"). Gits without
// reftable ignore the key. (docs/design.md, "Reading refs".)
const reftableLockTimeout = "10000"

// withGitDefault sets git's configuration key to value for the command's
// gits through GIT_CONFIG_COUNT/KEY/VALUE, unless the caller's environment
// already sets that key there (its value stays).
func withGitDefault(env []string, key, value string) []string {
	return withGitConfig(env, key, value, func(k, _ string) bool { return strings.EqualFold(k, key) })
}

// withGitConfig appends key=value to the GIT_CONFIG_COUNT/KEY/VALUE
// entries of env, unless one of them already has (present). A count git
// would refuse is left alone, not hidden.
func withGitConfig(env []string, key, value string, present func(k, v string) bool) []string {
	found, n := gitConfigHas(env, present)
	if found || n < 0 {
		return env // present already, or a count git refuses: do not hide that
	}
	env = withoutVar(env, "GIT_CONFIG_COUNT")
	return append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", n, key), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, value), fmt.Sprintf("GIT_CONFIG_COUNT=%d", n+1))
}

// gitConfigHas reports whether one of env's GIT_CONFIG_KEY/VALUE entries
// satisfies match, and their count (-1 for a GIT_CONFIG_COUNT git refuses).
func gitConfigHas(env []string, match func(k, v string) bool) (bool, int) {
	n := 0
	if v, _ := envLookup(env, "GIT_CONFIG_COUNT"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 0 {
			return false, -1
		}
	}
	for i := 0; i < n; i++ {
		k, _ := envLookup(env, fmt.Sprintf("GIT_CONFIG_KEY_%d", i))
		v, _ := envLookup(env, fmt.Sprintf("GIT_CONFIG_VALUE_%d", i))
		if match(k, v) {
			return true, n
		}
	}
	return false, n
}

// withPushOption adds a push option to every git push of the command,
// through git's GIT_CONFIG_COUNT/KEY/VALUE (appended to any the caller
// set; not twice).
func withPushOption(env []string, option string) []string {
	return withGitConfig(env, "push.pushOption", option, func(k, v string) bool { return k == "push.pushOption" && v == option })
}

// runNested runs the command of a wt-exec nested in a confined command:
// the lease is its ancestor's (the caller proved the entitlement), the
// confinement is inherited by the kernel, and nothing is written to the
// store, which the confinement makes read-only. It still gives the command
// its own process group, forwards signals and reaps all of it.
func (s *supervisor) runNested(path string, endWatch func()) (Result, error) {
	var res Result
	if s.startCtx.Err() != nil {
		endWatch()
		s.child.Restore()
		s.stopCatching()
		return res, s.stopped()
	}
	_, err := s.launch(path, s.opts.Environ, nil, gitrepo.Checkout{}, "")
	endWatch()
	if err != nil {
		s.child.Restore()
		s.stopCatching()
		return res, err
	}
	s.superviseInto(&res)
	return res, nil
}

// superviseInto supervises the child to its end and records how it ended.
func (s *supervisor) superviseInto(res *Result) {
	res.Status = s.child.Supervise()
	res.Died = s.child.Died()
	if (res.Died == unix.SIGINT || res.Died == unix.SIGQUIT) && s.opts.Stdin != nil && child.IsTerminal(s.opts.Stdin) {
		res.ToGroup = child.IsForeground(int(s.opts.Stdin.Fd()))
	}
}

// branchOf is the allocation's branch, "" when it has none (detached).
func branchOf(a store.Allocation) string {
	if a.Branch == nil {
		return ""
	}
	return *a.Branch
}

// withDefaults fills in the options a caller may leave unset.
func withDefaults(opts Options) Options {
	if opts.Kind == "" {
		opts.Kind = DefaultKind
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Notify == nil {
		opts.Notify = func(string) {}
	}
	return opts
}

// startedAt is when this wt-exec began (its package initialisation).
var startedAt = time.Now()

// fastWindow bounds the runs whose occupants are looked for among the pids
// handed out since wt-exec started, not among all: the kernel hands pids
// out in increasing order, wrapping at pid_max (32768 at the least), and
// no machine forks that many processes in this time (a fork takes tens of
// microseconds).
const fastWindow = 20 * time.Millisecond

// occupantReading reads the processes that may be occupants of a run whose
// holder is h: for a short run whose holder is wt-exec itself, only those
// with a pid handed out after its own (partial: what else the reading
// knows is incomplete); otherwise every process.
func occupantReading(h proc.Holder) (*proc.Scan, bool, error) {
	self := os.Getpid()
	if h.PID == self && time.Since(startedAt) < fastWindow {
		if last, err := proc.LastPID(); err == nil && last >= self {
			sc, err := proc.NewScanOf(func(pid int) bool { return pid > self && pid <= last })
			return sc, true, err
		}
	}
	sc, err := proc.NewScan()
	return sc, false, err
}

// kin reports whether a pid is one of roots or descends from one: from the
// reading's table, or, in a partial reading, from each pid's own ancestry.
func kin(sc *proc.Scan, partial bool, roots []int) func(pid int) bool {
	if !partial {
		mine := map[int]bool{}
		for _, root := range roots {
			mine[root] = true
			for _, pid := range sc.Descendants(root) {
				mine[pid] = true
			}
		}
		return func(pid int) bool { return mine[pid] }
	}
	var ids []proc.Identity
	for _, root := range roots {
		if id, err := proc.Describe(root); err == nil {
			ids = append(ids, id)
		}
	}
	r := proc.NewReader()
	return func(pid int) bool {
		for _, id := range ids {
			if pid == id.PID {
				return true
			}
			if anc, err := r.HasAncestor(pid, id); err == nil && anc {
				return true
			}
		}
		return false
	}
}

// occupants are the processes that use the worktree at top at the end of
// a run (cwd, an open file, a mapping) that started after the lease's
// holder and are not of it (its descendants, wt-exec's own): a dev server
// started from elsewhere, a terminal opened there meanwhile. Older ones
// (the operator's shell) are not. Only a lease this run created leaves
// them: they keep the worktree from the next writer (RUNTIME_OCCUPIED).
//
// wt-exec --wait runs in the worktree's line are would-be writers, not
// occupants (the lease orders them); a wt-exec that meets its own process,
// or an ancestor, as an occupant does not count it either.
func (s *supervisor) occupants(c gitrepo.Checkout, g lease.Grant) []proc.Holder {
	if !g.Applicable || !g.Owned {
		return nil
	}
	top := c.TopLevel
	h := g.Lease.Holder
	sc, partial, err := occupantReading(h)
	if err != nil {
		s.notify("the processes that still use the worktree cannot be read: " + err.Error())
		return nil
	}
	if boot, err := sc.BootID(); err != nil || boot != h.BootID {
		return nil
	}
	roots := []int{h.PID, os.Getpid()}
	for pid := range waitline.PIDs(s.repo.Store.Root(), c.Key) {
		roots = append(roots, pid) // and their fleet helpers
	}
	mine := kin(sc, partial, roots)
	// Kernel threads (kthreadd, pid 2, and its children) use no path.
	uses, err := sc.UsesBy(top, func(st proc.Stat) bool {
		return st.StartTicks >= h.StartTicks && !mine(st.PID) && st.PID != 2 && st.PPID != 2
	})
	if err != nil {
		s.notify("the processes that still use the worktree cannot be read: " + err.Error())
		return nil
	}
	var out []proc.Holder
	var who []string
	for _, u := range uses {
		st, ok := sc.Process(u.PID)
		if !ok {
			continue
		}
		out = append(out, proc.Holder{ClientID: h.ClientID, PID: u.PID, BootID: h.BootID, StartTicks: st.StartTicks})
		who = append(who, fmt.Sprintf("pid %d (%s, %s)", u.PID, u.Command, u.Why))
	}
	if len(out) > 0 {
		s.notify(fmt.Sprintf("%s started during the run and still use %s: no writer is let in beside them (RUNTIME_OCCUPIED) until they are gone; see them with wt-admin --repo %s ps %s",
			strings.Join(who, ", "), top, shell.Word(top), shell.Word(top)))
	}
	return out
}
