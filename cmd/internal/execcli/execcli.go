// Package execcli is wt-exec's command line: it reads the flags, runs the
// command through the wrapper and maps the outcome to wt-exec's exit
// status. It links no command-line library: wt-exec starts before every
// agent command, and urfave/cli's initialisation and the building and
// walking of its app cost about a quarter of a millisecond at each start.
// Its flags are a table (Flags) from which the help here and, in
// cmd/internal/cli, the urfave/cli definition that the man pages and
// completions are made from are both built.
package execcli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/cmd/internal/execflags"
	"github.com/wt-tool/wt/cmd/internal/textout"
	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/hooks"
	"github.com/wt-tool/wt/wrapper"
)

// Bin is the name wt-exec prints under.
const Bin = execflags.Bin

// wt-exec's own exit statuses (docs/design.md, "wt-exec"); anything else is the child's.
const (
	ExitRefused       = 125
	ExitNotExecutable = 126
	ExitNotFound      = 127
)

// ExecDying runs wt-exec with args and returns its exit status (the
// child's, 128+N when it died of signal N, 125 when wt-exec refused or
// failed before the child started, 126 when the command is not executable,
// 127 when it is not found), the signal the child died of (0 when
// it exited) and whether it is to go to the whole process group (see
// wrapper.Result.ToGroup): main ends wt-exec by it (wrapper.DieBy) before
// it exits with the status.
func ExecDying(args []string, stdout, stderr io.Writer) (int, unix.Signal, bool) {
	r := &run{stdout: textout.Safe(stdout), stderr: textout.Safe(stderr)}
	res, err := r.main(args)
	switch {
	case err == nil && res != nil:
		return res.Status, res.Died, res.ToGroup
	case err == nil:
		return textout.ExitOK, 0, false // --help, --version, --explain
	}
	code := r.report(err)
	if code == ExitNotFound || code == ExitNotExecutable || code > 128 {
		return code, 0, false
	}
	return ExitRefused, 0, false
}

// run is one wt-exec run's output: stdout, stderr, and the --json
// destination once opened.
type run struct {
	stdout, stderr io.Writer
	jsonOut        io.WriteCloser
	// dir is the directory the run acts in (-C, or the task's worktree),
	// absolute: its hints are anchored there (textout.Anchor).
	dir string
	// hold keeps a refusal on the terminal until Enter (--hold).
	hold bool
}

// main reads the command line and runs the command; a nil result with a
// nil error is a run that printed what was asked and ran nothing.
func (r *run) main(args []string) (*wrapper.Result, error) {
	l, err := Parse(args)
	if err != nil {
		return nil, err
	}
	switch {
	case l.Bool("help"):
		PrintHelp(r.stdout)
		return nil, nil
	case l.Bool("version"):
		fmt.Fprintf(r.stdout, "%s version %s\n", Bin, textout.Version())
		return nil, nil
	}
	r.hold = l.Bool("hold")
	if l.IsSet("json") {
		if r.jsonOut, err = openJSONOut(l.String("json")); err != nil {
			return nil, err
		}
	}
	if l.Bool("explain") {
		return nil, r.explain(l)
	}
	opts, err := r.options(l)
	if err != nil {
		return nil, err
	}
	r.dir, _ = filepath.Abs(cmp.Or(opts.Dir, ".")) // unreadable: hints anchored at the working directory
	if os.Getenv(wrapper.ConfinedEnv) != "" && !l.IsSet("task") {
		// Inside a confined command: the store is read-only here, so a
		// nested wt-exec runs under its ancestor's lease once the
		// entitlement is proved.
		if err := nestedEntitled(opts.Dir); err != nil {
			return nil, err
		}
		opts.Nested = true
	}
	if r.jsonOut != nil {
		opts.Started = r.grantJSON
	}
	if l.IsSet("task") {
		// A command that cannot be started must not leave a worktree
		// behind: one found on PATH, or by an absolute path, is checked
		// before anything is allocated (a relative path names a file of
		// the worktree, which does not exist yet).
		if name := opts.Args[0]; !strings.Contains(name, "/") || filepath.IsAbs(name) {
			if _, err := wrapper.LookPath(name, "", opts.Environ); err != nil {
				return nil, commandErr(err)
			}
		}
		a, err := r.taskWorktree(l)
		if err != nil {
			return nil, err
		}
		opts.Dir, opts.Allocation = a.WorktreePath, a.AllocationID
		r.dir, _ = filepath.Abs(opts.Dir)
	} else if l.IsSet("base") || l.IsSet("path") || l.IsSet("new-task") {
		return nil, usageErr("base-path")
	}
	verbose := l.Bool("verbose")
	opts.Granted = func(g lease.Grant) { r.tellGrant(g, verbose) }
	opts.CheckGate = r.checkGate
	opts.AfterConfined = r.refreshHooks
	opts.ExplainUngated = explainUngated
	res, err := wrapper.Run(opts)
	switch code := decision.CodeOf(err); {
	case err == nil:
		return &res, nil
	case code == decision.CommandNotFound || code == decision.CommandNotRunnable:
		return nil, commandErr(err)
	case code == decision.Interrupted:
		// Stopped by a signal before the command started: the status
		// says so as a shell would (128+N).
		if d, ok := decision.As(err); ok {
			if n, ok := d.Facts["signal"].(int); ok {
				return nil, &textout.ExitError{Code: 128 + n, Err: err}
			}
		}
	}
	return nil, err
}

// report writes err once (to the --json destination too, when there is
// one) and returns its exit code.
func (r *run) report(err error) int {
	code, d, reported := textout.Decide(err, Bin, "")
	if reported {
		return code
	}
	d = textout.Anchored(d, cmp.Or(r.dir, textout.WorkDir()))
	if r.jsonOut != nil {
		r.writeJSONOut(textout.ErrorEnvelope(Bin, d))
	}
	show := func() { textout.Print(r.stderr, Bin, code, d) }
	if r.hold {
		hold(os.Stdin, os.Stderr, show)
	} else {
		show()
	}
	return code
}

// writeJSONOut writes the one envelope to the --json destination and
// closes it, so that a reader of a pipe sees the end.
func (r *run) writeJSONOut(env map[string]any) {
	if r.jsonOut == nil {
		return
	}
	textout.WriteJSON(r.jsonOut, env, "")
	r.jsonOut.Close()
	r.jsonOut = nil
}

func (r *run) options(l *Line) (wrapper.Options, error) {
	opts := wrapper.Options{
		Dir: l.String("C"), ClientID: l.String("client-id"), Holder: l.String("holder"),
		Owner: l.String("owner"), Kind: l.String("kind"), TTL: l.Duration("ttl"), Grace: l.Duration("grace"),
		Args: l.Command, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Environ: os.Environ(),
		Notify: func(msg string) {
			fmt.Fprintf(r.stderr, "wt-exec: warning: %s\n", textout.Clean(textout.Anchor(msg, r.dir)))
		},
	}
	if l.IsSet("session-id") {
		v := l.String("session-id")
		opts.SessionID = &v
	}
	if l.IsSet("run-id") {
		v := l.String("run-id")
		opts.RunID = &v
	}
	if l.IsSet("ttl") && opts.TTL <= 0 {
		return opts, decision.Say(decision.InvalidHolder, "ttl-lease", opts.TTL).
			WithHint("pass --ttl with a positive duration, e.g. --ttl 10m, or leave it out for no expiry")
	}
	opts.Verbose = l.Bool("verbose")
	opts.Wait, opts.Timeout = l.Bool("wait"), l.Duration("timeout")
	opts.Waiting = func(msg string) { fmt.Fprintf(r.stderr, "wt-exec: waiting: %s\n", textout.Clean(msg)) }
	if l.IsSet("timeout") && (!opts.Wait || opts.Timeout <= 0) {
		return opts, usageErr("timeout-takes")
	}
	if l.IsSet("grace") && opts.Grace <= 0 {
		return opts, usageErr("grace-must", opts.Grace)
	}
	switch {
	case l.Bool("pty") && l.Bool("no-pty"):
		return opts, usageErr("pty-no")
	case l.Bool("pty"):
		opts.PTY = wrapper.PTYOn
	case l.Bool("no-pty"):
		opts.PTY = wrapper.PTYOff
	}
	if l.Bool("confine") && l.Bool("no-confine") {
		return opts, usageErr("confine-no")
	}
	if err := sandboxFlags(l); err != nil {
		return opts, err
	}
	opts.Sandbox = l.Bool("sandbox")
	opts.Confine = confineFlag(l)
	opts.AllowWrite = l.Strings("allow-write")
	opts.AllowSockets = l.Strings("allow-socket")
	opts.Agent = l.String("agent")
	for _, v := range l.Strings("keep-fd") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 3 {
			return opts, usageErr("keep-fd", v)
		}
		opts.KeepFDs = append(opts.KeepFDs, n)
	}
	if l.IsSet("expect-generation") {
		n, err := strconv.Atoi(l.String("expect-generation"))
		if err != nil || n < 0 {
			return opts, usageErr("expect-generation-give", l.String("expect-generation"))
		}
		opts.ExpectGeneration = &n
	}
	if l.IsSet("expect-head") {
		opts.ExpectHead = l.String("expect-head")
		if !gitrepo.FullObjectName(opts.ExpectHead) {
			return opts, usageErr("expect-head", opts.ExpectHead)
		}
	}
	if len(opts.Args) == 0 {
		return opts, usageErr("no-command")
	}
	return opts, nil
}

// tellGrant prints, before the command starts, a takeover (always) and,
// with --verbose, the grant and its fleet lease.
func (r *run) tellGrant(g lease.Grant, verbose bool) {
	switch {
	case g.Previous != nil:
		fmt.Fprintf(r.stderr, "wt-exec: %s: lease %s (generation %d) of dead holder client %s pid %d taken over by %s\n",
			g.Code, g.Previous.LeaseID, g.Previous.Generation, g.Previous.Holder.ClientID, g.Previous.Holder.PID, g.Lease.LeaseID)
	case verbose && g.Applicable:
		fmt.Fprintf(r.stderr, "wt-exec: %s: lease %s generation %d client %s pid %d\n",
			g.Code, g.Lease.LeaseID, g.Lease.Generation, g.Lease.Holder.ClientID, g.Lease.Holder.PID)
	case g.Role == store.RoleCanonical:
		// Said every time: agents started here write with nobody's lease,
		// two of them at once onto the publication branch.
		top := g.Allocation.WorktreePath
		fmt.Fprintf(r.stderr, "wt-exec: %s: %s is the canonical checkout: wt takes no writer lease and gates no write here, so commands started here write beside any other; to govern an agent, give it a worktree of its own: wt-exec -C %s --task KEY --owner NAME -- COMMAND (wt-admin --repo %s policy --unmanaged refuse refuses launches here)\n",
			g.Code, textout.Clean(top), textout.Clean(shell.Word(top)), textout.Clean(shell.Word(top)))
	case verbose:
		fmt.Fprintf(r.stderr, "wt-exec: %s: %s\n", g.Code, decision.Words(decision.DedicatedRoleGate, "no-writer-lease", g.Role, decision.DedicatedRoleGate))
	}
	if f := g.Lease.Fleet; f != nil && verbose {
		fmt.Fprintf(r.stderr, "wt-exec: %s: %s\n", decision.FleetLeaseAcquired,
			decision.Words(decision.FleetLeaseAcquired, "held-in-fleet", g.Allocation.TaskKey, f.Key, f.Revision, f.TTL))
	}
}

// openJSONOut opens wt-exec's --json destination: fd:N (a descriptor the
// caller opened for writing) or a path (created or truncated).
func openJSONOut(dest string) (io.WriteCloser, error) {
	if n, ok := strings.CutPrefix(dest, "fd:"); ok {
		fd, err := strconv.Atoi(n)
		if err != nil || fd < 3 {
			return nil, usageErr("json-fd", dest)
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if err != nil || flags&unix.O_ACCMODE == unix.O_RDONLY {
			return nil, usageErr("json-descriptor", dest, fd)
		}
		unix.CloseOnExec(fd) // the command does not inherit it
		return os.NewFile(uintptr(fd), dest), nil
	}
	if dest == "" {
		return nil, usageErr("json-needs")
	}
	f, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, decision.SayWrap(decision.Usage, err, "json", dest).WithHint("name a file wt-exec can write, or fd:N")
	}
	return f, nil
}

// grantJSON writes the grant as wt-admin's envelope to the --json
// destination, once the command runs.
func (r *run) grantJSON(g lease.Grant) {
	reason := fmt.Sprintf("lease %s generation %d held by client %s pid %d", g.Lease.LeaseID, g.Lease.Generation, g.Lease.Holder.ClientID, g.Lease.Holder.PID)
	if !g.Applicable {
		reason = decision.Words(decision.DedicatedRoleGate, "no-writer-lease", g.Role, decision.DedicatedRoleGate)
	}
	env, err := textout.DecisionEnvelope(Bin, g.Code, reason, g, nil)
	if err != nil { // a grant always encodes; the envelope says what it can
		env, _ = textout.DecisionEnvelope(Bin, g.Code, reason, nil, nil)
	}
	r.writeJSONOut(env)
}

// nestedEntitled proves that this wt-exec, inside a confined command, may
// run in dir under its ancestor's lease: its own process descends from the
// live holder (the hook's check), as a commit of it would.
func nestedEntitled(dir string) error {
	if dir == "" {
		dir = "."
	}
	v, err := hooks.Entitled(dir, os.Getpid())
	if err != nil {
		return err
	}
	if !v.Allowed || v.Warning {
		if v.Refusal != nil {
			return v.Refusal
		}
		return decision.Say(decision.WriterLeaseRequired, "as-given", v.Code, v.Reason)
	}
	return nil
}

// explain prints the confinement a run would have, and runs nothing.
func (r *run) explain(l *Line) error {
	if err := sandboxFlags(l); err != nil {
		return err
	}
	opts := wrapper.Options{Dir: l.String("C"), Environ: os.Environ(), AllowWrite: l.Strings("allow-write"), AllowSockets: l.Strings("allow-socket"), Confine: confineFlag(l),
		Agent: l.String("agent"), Args: l.Command, Sandbox: l.Bool("sandbox")}
	dir := opts.Dir
	if dir == "" {
		dir = "."
	}
	repo, err := alloc.Open(context.Background(), dir)
	if err != nil {
		return err
	}
	pol, err := policy.Read(repo.Store)
	if err != nil {
		return err
	}
	// The allocation's branch decides which ref directory is writable; a
	// worktree wt does not govern is explained as detached.
	branch := ""
	if c, err := gitrepo.Locate(dir); err == nil {
		_ = repo.Store.Read(func(tx *store.Tx) error { // Best effort: no allocation, no branch.
			if t, err := repo.ResolveCheckout(tx, c); err == nil && t.Allocation.Branch != nil {
				branch = *t.Allocation.Branch
			}
			return nil
		})
	}
	lines, err := wrapper.Explain(opts, branch, pol)
	if err != nil {
		return err
	}
	for _, s := range lines {
		fmt.Fprintf(r.stdout, "%s\n", textout.Clean(s))
	}
	return nil
}

// sandboxFlags refuses what --sandbox excludes: a sandbox is confined by
// definition and grants nothing beyond its worktree and TMPDIR.
func sandboxFlags(l *Line) error {
	if !l.Bool("sandbox") {
		return nil
	}
	for _, f := range []string{"no-confine", "allow-write", "allow-socket", "agent"} {
		if l.IsSet(f) {
			return usageErr("sandbox-exclude", f)
		}
	}
	return nil
}

// confineFlag is the confinement mode --confine (require) or --no-confine
// (off) sets for this run; nil leaves it to the policy.
func confineFlag(l *Line) *wrapper.ConfineMode {
	var m wrapper.ConfineMode
	switch {
	case l.Bool("confine"):
		m = wrapper.ConfineRequire
	case l.Bool("no-confine"):
		m = wrapper.ConfineOff
	default:
		return nil
	}
	return &m
}

// commandErr gives a command that cannot be started its exit status: 127
// when it is not found, 126 when it is found but cannot be run.
func commandErr(err error) error {
	if decision.CodeOf(err) == decision.CommandNotFound {
		return &textout.ExitError{Code: ExitNotFound, Err: err}
	}
	return &textout.ExitError{Code: ExitNotExecutable, Err: err}
}
