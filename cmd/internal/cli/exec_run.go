package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/hooks"
	"github.com/wt-tool/wt/wrapper"
)

// wt-exec's own exit statuses (docs/design.md, "wt-exec"); anything else is the child's.
const (
	ExitExecRefused       = 125
	ExitExecNotExecutable = 126
	ExitExecNotFound      = 127
)

// Exec runs wt-exec with args and returns its exit status: the child's,
// 128+N when the child died of signal N, 125 when wt-exec refused or failed
// before the child started, 126 when the command is not executable and 127
// when it is not found.
func Exec(args []string, stdout, stderr io.Writer) int {
	code, _, _ := ExecDying(args, stdout, stderr)
	return code
}

// ExecDying is Exec that also returns the signal the child died of (0 when
// it exited) and whether it is to go to the whole process group (see
// wrapper.Result.ToGroup): main ends wt-exec by it (wrapper.DieBy) before
// it exits with the status.
func ExecDying(args []string, stdout, stderr io.Writer) (int, unix.Signal, bool) {
	var out execOutcome
	out.child = -1
	code := clikit.Run("wt-exec", func(k *clikit.Env) *ucli.App { return execApp(&env{k}, &out) }, args, stdout, stderr)
	child, died, toGroup := out.child, out.died, out.toGroup
	switch {
	case child >= 0:
		return child, died, toGroup
	case code == ExitExecNotFound || code == ExitExecNotExecutable || code > 128:
		return code, 0, false
	case code == clikit.ExitOK:
		return clikit.ExitOK, 0, false // --help, --version
	}
	return ExitExecRefused, 0, false
}

// execOutcome is how the command of one wt-exec run ended: its status (-1
// when it never ran), the signal it died of, and whether that signal is
// for the whole terminal group.
type execOutcome struct {
	child   int
	died    unix.Signal
	toGroup bool
}

// ExecApp is wt-exec's command line, for man pages and completions (it
// records no outcome).
func ExecApp(k *clikit.Env) *ucli.App { return execApp(&env{k}, &execOutcome{child: -1}) }

func execApp(e *env, out *execOutcome) *ucli.App {
	return &ucli.App{
		Usage:     "run a command as the live writer of a governed worktree",
		UsageText: "wt-exec [-C DIR] [--task KEY [--base REV] [--path PATH]] [--client-id ID] [--session-id ID] [--run-id ID]\n   [--holder SELECTOR] [--owner NAME] [--kind KIND] [--ttl DURATION] [--grace DURATION] [--pty | --no-pty]\n   [--wait [--timeout DURATION]] -- COMMAND [ARG...]",
		Flags: append([]ucli.Flag{
			&ucli.StringFlag{Name: "C", Usage: "run in `DIR` (a directory of the governed worktree)"},
			&ucli.StringFlag{Name: "client-id", Usage: "the writer's client `ID` (default $WT_CLIENT_ID, else the command's name)"},
			&ucli.StringFlag{Name: "session-id", Usage: "the writer's session `ID` (default $WT_SESSION_ID)"},
			&ucli.StringFlag{Name: "run-id", Usage: "the writer's run `ID` (default $WT_RUN_ID)"},
			&ucli.StringFlag{Name: "holder", Usage: "the lease holder: self, PID or ancestor:NAME (default: the outer wt-exec's holder, else self)"},
			&ucli.StringFlag{Name: "owner", Usage: "refuse unless the allocation's owner is `NAME`"},
			&ucli.StringFlag{Name: "kind", Value: wrapper.DefaultKind, Usage: "occupancy `KIND`: agent, test, preview, background or command"},
			&ucli.DurationFlag{Name: "ttl", Usage: "lease expiry, renewed every ttl/3 while the command runs (default: none)"},
			&ucli.DurationFlag{Name: "grace", Value: wrapper.DefaultGrace, Usage: "time between SIGTERM and SIGKILL for what the command leaves behind"},
			&ucli.BoolFlag{Name: "pty", Usage: "give the command a new pty (default when stdin and stdout are terminals)"},
			&ucli.BoolFlag{Name: "no-pty", Usage: "no pty: the command's group takes the terminal's foreground"},
			&ucli.BoolFlag{Name: "verbose", Usage: "print the lease decision on stderr"},
			&ucli.BoolFlag{Name: "confine", Usage: "confine the command with Landlock (refuse where the kernel cannot): it may write only in its worktree and what git and agents need"},
			&ucli.BoolFlag{Name: "no-confine", Usage: "do not confine the command, whatever the policy says"},
			&ucli.StringSliceFlag{Name: "allow-write", Usage: "with confinement, also let the command write beneath `DIR` (repeatable)"},
			&ucli.BoolFlag{Name: "explain", Usage: "print the confinement rules this run would have, and run nothing"},
			&ucli.StringFlag{Name: "json", Usage: "write the grant (once the command runs) or the refusal as one JSON object to `DEST`: a path, or fd:N for an open file descriptor"},
			&ucli.BoolFlag{Name: "wait", Usage: "when a live writer holds the lease, wait for it (in line with other waiters) instead of exiting 125"},
			&ucli.DurationFlag{Name: "timeout", Usage: "with --wait, give up after `DURATION` (exit 125, WRITER_LEASE_WAIT_TIMEOUT)"},
		}, taskFlags()...),
		Action: func(c *ucli.Context) error {
			e.Command = "wt-exec"
			set := clikit.GivenFlags(c)
			if set["json"] {
				out, err := openJSONOut(c.String("json"))
				if err != nil {
					return err
				}
				e.JSONOut = out
			}
			if c.Bool("explain") {
				return e.explain(c)
			}
			opts, err := execOptions(c, set, e)
			if err != nil {
				return err
			}
			if os.Getenv(wrapper.ConfinedEnv) != "" && !set["task"] {
				// Inside a confined command: the store is read-only
				// here, so a nested wt-exec runs under its ancestor's
				// lease once the entitlement is proved.
				if err := nestedEntitled(opts.Dir); err != nil {
					return err
				}
				opts.Nested = true
			}
			if e.JSONOut != nil {
				opts.Started = e.grantJSON
			}
			if set["task"] {
				if opts.Dir, err = e.taskWorktree(c); err != nil {
					return err
				}
			} else if set["base"] || set["path"] {
				return clikit.UsageErr("--base and --path go with --task")
			}
			opts.Granted = func(g lease.Grant) { e.tellGrant(g, c.Bool("verbose")) }
			res, err := wrapper.Run(opts)
			switch {
			case err == nil:
			case decision.CodeOf(err) == decision.CommandNotFound:
				return &clikit.ExitError{Code: ExitExecNotFound, Err: err}
			case decision.CodeOf(err) == decision.CommandNotRunnable:
				return &clikit.ExitError{Code: ExitExecNotExecutable, Err: err}
			case decision.CodeOf(err) == decision.Interrupted:
				// Stopped by a signal before the command started: the
				// status says so as a shell would (128+N).
				if d, ok := decision.As(err); ok {
					if n, ok := d.Facts["signal"].(int); ok {
						return &clikit.ExitError{Code: 128 + n, Err: err}
					}
				}
				return err
			default:
				return err
			}
			out.child, out.died, out.toGroup = res.Status, res.Died, res.ToGroup
			return nil
		},
	}
}

func execOptions(c *ucli.Context, set map[string]bool, e *env) (wrapper.Options, error) {
	opts := wrapper.Options{
		Dir: c.String("C"), ClientID: c.String("client-id"), Holder: c.String("holder"),
		Owner: c.String("owner"), Kind: c.String("kind"), TTL: c.Duration("ttl"), Grace: c.Duration("grace"),
		Args: c.Args().Slice(), Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Environ: os.Environ(),
		Notify: func(msg string) { fmt.Fprintf(e.Stderr, "wt-exec: warning: %s\n", clikit.Clean(msg)) },
	}
	if set["session-id"] {
		v := c.String("session-id")
		opts.SessionID = &v
	}
	if set["run-id"] {
		v := c.String("run-id")
		opts.RunID = &v
	}
	if set["ttl"] && opts.TTL <= 0 {
		return opts, decision.New(decision.InvalidHolder, "--ttl %s: a lease ttl must be positive", opts.TTL).
			WithHint("pass --ttl with a positive duration, e.g. --ttl 10m, or leave it out for no expiry")
	}
	opts.Verbose = c.Bool("verbose")
	opts.Wait, opts.Timeout = c.Bool("wait"), c.Duration("timeout")
	opts.Waiting = func(msg string) { fmt.Fprintf(e.Stderr, "wt-exec: waiting: %s\n", clikit.Clean(msg)) }
	if set["timeout"] && (!opts.Wait || opts.Timeout <= 0) {
		return opts, clikit.UsageErr("--timeout takes a positive duration and goes with --wait")
	}
	if set["grace"] && opts.Grace <= 0 {
		return opts, clikit.UsageErr("--grace %s must be positive", opts.Grace)
	}
	switch {
	case c.Bool("pty") && c.Bool("no-pty"):
		return opts, clikit.UsageErr("--pty and --no-pty exclude each other")
	case c.Bool("pty"):
		opts.PTY = wrapper.PTYOn
	case c.Bool("no-pty"):
		opts.PTY = wrapper.PTYOff
	}
	if c.Bool("confine") && c.Bool("no-confine") {
		return opts, clikit.UsageErr("--confine and --no-confine exclude each other")
	}
	opts.Confine = confineFlag(c)
	opts.AllowWrite = c.StringSlice("allow-write")
	if len(opts.Args) == 0 {
		return opts, clikit.UsageErr("no command given: wt-exec [OPTIONS] -- COMMAND [ARG...]")
	}
	return opts, nil
}

// tellGrant prints, before the command starts, a takeover (always) and,
// with --verbose, the grant and its fleet lease.
func (e *env) tellGrant(g lease.Grant, verbose bool) {
	switch {
	case g.Previous != nil:
		fmt.Fprintf(e.Stderr, "wt-exec: %s: lease %s (generation %d) of dead holder client %s pid %d taken over by %s\n",
			g.Code, g.Previous.LeaseID, g.Previous.Generation, g.Previous.Holder.ClientID, g.Previous.Holder.PID, g.Lease.LeaseID)
	case verbose && g.Applicable:
		fmt.Fprintf(e.Stderr, "wt-exec: %s: lease %s generation %d client %s pid %d\n",
			g.Code, g.Lease.LeaseID, g.Lease.Generation, g.Lease.Holder.ClientID, g.Lease.Holder.PID)
	case verbose:
		fmt.Fprintf(e.Stderr, "wt-exec: %s: role %s takes no writer lease (%s)\n", g.Code, g.Role, decision.DedicatedRoleGate)
	}
	if f := g.Lease.Fleet; f != nil && verbose {
		fmt.Fprintf(e.Stderr, "wt-exec: %s: task %s was held in the fleet (key %s, revision %d, TTL %s)\n",
			decision.FleetLeaseAcquired, g.Allocation.TaskKey, f.Key, f.Revision, f.TTL)
	}
}

// openJSONOut opens wt-exec's --json destination: fd:N (a descriptor the
// caller opened for writing) or a path (created or truncated).
func openJSONOut(dest string) (io.WriteCloser, error) {
	if n, ok := strings.CutPrefix(dest, "fd:"); ok {
		fd, err := strconv.Atoi(n)
		if err != nil || fd < 3 {
			return nil, clikit.UsageErr("--json %s: fd:N names an open descriptor above 2 (stdout and stderr belong to the command)", dest)
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if err != nil || flags&unix.O_ACCMODE == unix.O_RDONLY {
			return nil, clikit.UsageErr("--json %s: descriptor %d is not open for writing", dest, fd)
		}
		unix.CloseOnExec(fd) // the command does not inherit it
		return os.NewFile(uintptr(fd), dest), nil
	}
	if dest == "" {
		return nil, clikit.UsageErr("--json needs a DEST: a path, or fd:N")
	}
	f, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, decision.Wrap(decision.Usage, err, "--json %s", dest).WithHint("name a file wt-exec can write, or fd:N")
	}
	return f, nil
}

// grantJSON writes the grant as wt-admin's envelope to the --json
// destination, once the command runs.
func (e *env) grantJSON(g lease.Grant) {
	b, err := json.Marshal(g)
	dec := map[string]any{}
	if err == nil {
		err = json.Unmarshal(b, &dec)
	}
	if err != nil {
		dec = map[string]any{}
	}
	reason := fmt.Sprintf("lease %s generation %d held by client %s pid %d", g.Lease.LeaseID, g.Lease.Generation, g.Lease.Holder.ClientID, g.Lease.Holder.PID)
	if !g.Applicable {
		reason = fmt.Sprintf("role %s takes no writer lease (%s)", g.Role, decision.DedicatedRoleGate)
	}
	dec["code"], dec["reason"] = g.Code, reason
	e.WriteJSONOut(map[string]any{"schema_version": clikit.JSONSchemaVersion, "tool_version": clikit.Version(),
		"command": "wt-exec", "ok": true, "decision": dec, "warnings": []string{}})
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
		return decision.New(decision.WriterLeaseRequired, "%s: %s", v.Code, v.Reason)
	}
	return nil
}

// explain prints the confinement a run would have, and runs nothing.
func (e *env) explain(c *ucli.Context) error {
	opts := wrapper.Options{Dir: c.String("C"), Environ: os.Environ(), AllowWrite: c.StringSlice("allow-write"), Confine: confineFlag(c)}
	dir := opts.Dir
	if dir == "" {
		dir = "."
	}
	r, err := alloc.Open(context.Background(), dir)
	if err != nil {
		return err
	}
	pol, err := r.Policy()
	if err != nil {
		return err
	}
	lines, err := wrapper.Explain(opts, pol)
	if err != nil {
		return err
	}
	for _, l := range lines {
		fmt.Fprintf(e.Stdout, "%s\n", clikit.Clean(l))
	}
	return nil
}

// confineFlag is the confinement mode --confine (require) or --no-confine
// (off) sets for this run; nil leaves it to the policy.
func confineFlag(c *ucli.Context) *wrapper.ConfineMode {
	var m wrapper.ConfineMode
	switch {
	case c.Bool("confine"):
		m = wrapper.ConfineRequire
	case c.Bool("no-confine"):
		m = wrapper.ConfineOff
	default:
		return nil
	}
	return &m
}
