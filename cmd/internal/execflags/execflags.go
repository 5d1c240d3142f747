// Package execflags is wt-exec's command line as data: its flags, its
// summary and synopsis. wt-exec parses it (cmd/internal/execcli), and
// wt-admin's man pages and completions are made from it, without linking
// wt-exec's supervisor (the pty and Landlock libraries).
package execflags

import "time"

// Bin is wt-exec's binary name.
const Bin = "wt-exec"

// The defaults of --kind and --grace; wrapper.DefaultKind and
// wrapper.DefaultGrace are the same (execcli's tests hold them so).
const (
	DefaultKind  = "agent"
	DefaultGrace = 10 * time.Second
)

// Kind is what a flag takes.
type Kind int

// Flag kinds.
const (
	String Kind = iota
	Bool
	Duration
	// StringSlice is a string flag that may be given more than once.
	StringSlice
)

// Flag is one of wt-exec's flags. Usage names its value's placeholder in
// backquotes (as urfave/cli reads it for the man pages, which are made
// from this table).
type Flag struct {
	Name    string
	Aliases []string
	Kind    Kind
	Usage   string
	// Default is the value when the flag is not given ("" for none); for
	// a Duration it is in time.ParseDuration's form.
	Default string
}

// Usage is wt-exec's one-line description and its synopsis.
const (
	Summary  = "run a command as the live writer of a governed worktree"
	Synopsis = "wt-exec [-C DIR] [--task KEY [--base REV] [--path PATH] [--new-task]] [--client-id ID] [--session-id ID] [--run-id ID]\n   [--holder SELECTOR] [--owner NAME] [--expect-generation N] [--expect-head SHA] [--kind KIND] [--ttl DURATION] [--grace DURATION] [--pty | --no-pty] [--hold]\n   [--wait [--timeout DURATION]] -- COMMAND [ARG...]"
)

// Flags are wt-exec's flags, in the order its help lists them.
var Flags = []Flag{
	{Name: "C", Kind: String, Usage: "run in `DIR` (a directory of the governed worktree)"},
	{Name: "client-id", Kind: String, Usage: "the writer's client `ID` (default $WT_CLIENT_ID, else the command's name)"},
	{Name: "session-id", Kind: String, Usage: "the writer's session `ID` (default $WT_SESSION_ID)"},
	{Name: "run-id", Kind: String, Usage: "the writer's run `ID` (default $WT_RUN_ID)"},
	{Name: "holder", Kind: String, Usage: "the lease holder: self, PID or ancestor:NAME (default: the outer wt-exec's holder, else self)"},
	{Name: "owner", Kind: String, Usage: "refuse unless the allocation's owner is `NAME`"},
	{Name: "expect-generation", Kind: String, Usage: "refuse (WRITER_LEASE_MISMATCH) unless the worktree's lease is still at generation `N` (as lease inspect showed it)"},
	{Name: "expect-head", Kind: String, Usage: "refuse (STALE_HEAD) unless the checkout's HEAD is commit `SHA` (the full id)"},
	{Name: "kind", Kind: String, Default: DefaultKind, Usage: "occupancy `KIND`: agent, test, preview, background or command"},
	{Name: "ttl", Kind: Duration, Usage: "lease expiry, renewed every ttl/3 while the command runs (default: none)"},
	{Name: "grace", Kind: Duration, Default: DefaultGrace.String(), Usage: "time between SIGTERM and SIGKILL for what the command leaves behind"},
	{Name: "pty", Kind: Bool, Usage: "give the command a new pty (default when stdin and stdout are terminals)"},
	{Name: "no-pty", Kind: Bool, Usage: "no pty: the command's group takes the terminal's foreground"},
	{Name: "verbose", Kind: Bool, Usage: "print the lease decision on stderr"},
	{Name: "hold", Kind: Bool, Usage: "on a terminal, keep a refusal (or a command that cannot start) on screen until Enter: for launchers whose pane closes when the command ends, such as ccmanager"},
	{Name: "confine", Kind: Bool, Usage: "confine the command with Landlock (refuse where the kernel cannot): it may write only in its worktree and what git and agents need"},
	{Name: "no-confine", Kind: Bool, Usage: "do not confine the command, whatever the policy says"},
	{Name: "allow-write", Kind: StringSlice, Usage: "with confinement, also let the command write beneath `DIR` (repeatable)"},
	{Name: "allow-socket", Kind: StringSlice, Usage: "with confinement, also let the command reach the listening Unix socket at `PATH` (repeatable); every other one but the SSH agent's is covered"},
	{Name: "keep-fd", Kind: StringSlice, Usage: "with confinement, pass the inherited descriptor `N` on to the command (repeatable); every other one above 2 is closed for it"},
	{Name: "agent", Kind: String, Usage: "with confinement, apply agent profile `NAME` (claude, codex, gemini, copilot, qwen, amp, crush, opencode, aider): the state it writes, its command-defining files kept read-only or private to the run (default: the command's program name picks it)"},
	{Name: "sandbox", Kind: Bool, Usage: "run with no authority (what wt-admin land's test gets): confined in a private view of the repository that nothing leaves (no publication; its admin dir and home caches private too), no broker, every socket covered, loopback alone for a network; refused where the kernel cannot"},
	{Name: "explain", Kind: Bool, Usage: "print the confinement rules this run would have, and run nothing"},
	{Name: "json", Kind: String, Usage: "write the grant (once the command runs) or the refusal as one JSON object to `DEST`: a path, or fd:N for an open file descriptor"},
	{Name: "wait", Kind: Bool, Usage: "when a live writer holds the lease, wait for it (in line with other waiters) instead of exiting 125"},
	{Name: "timeout", Kind: Duration, Usage: "with --wait, give up after `DURATION` (exit 125, WRITER_LEASE_WAIT_TIMEOUT)"},
	// The one-step launch: --task finds the task's worktree or allocates
	// it, and makes sure the repository's hooks are installed.
	{Name: "task", Kind: String, Usage: "run in task `KEY`'s worktree, allocating it (with --owner) when the task has none; -C names the repository"},
	{Name: "base", Kind: String, Usage: "with --task, a new worktree starts at `REV` (default: the publication branch)"},
	{Name: "path", Kind: String, Usage: "with --task, where a new worktree goes (default: ../REPO-KEY beside the canonical checkout)"},
	{Name: "new-task", Kind: Bool, Usage: "with --task, the key is a new task even if it is close to a live task's (otherwise refused: TASK_KEY_SIMILAR, did you mean)"},
	{Name: "help", Aliases: []string{"h"}, Kind: Bool, Usage: "show help"},
	{Name: "version", Aliases: []string{"v"}, Kind: Bool, Usage: "print the version"},
}
