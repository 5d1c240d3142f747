package wrapper

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/decision/decisiontest"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/liveness"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wtfixture"
	"github.com/wt-tool/wt/internal/wttest"
)

// The tests of Run are not parallel: Run makes this process the
// subreaper of what it starts and reaps any child of it, so a git another
// test ran beside it would be reaped, or stopped as a leftover.

// runFix is a governed repository with the feature worktree w1 of task
// T-1, and a scratch directory for what the commands write.
type runFix struct {
	fixture
	w       *wtfixture.Repo
	scratch string
	null    *os.File
}

func newRunFix(t *testing.T) runFix {
	t.Helper()
	w := wtfixture.New(t, policy.Change{})
	a := w.Allocate("T-1", "", "w1")
	c, err := gitrepo.Locate(w.Path("w1"))
	if err != nil {
		t.Fatal(err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { null.Close() })
	return runFix{fixture: fixture{top: w.Top, repo: w.R, c: c, a: a, base: w.Base}, w: w, scratch: t.TempDir(), null: null}
}

// plant writes a lease of w1 held by h as a grant leaves it: the
// allocation's next generation and a runtime binding, git's lock with
// the lease's reason, and the lease.
func (f runFix) plant(t *testing.T, h proc.Holder) store.Lease {
	t.Helper()
	var l store.Lease
	f.w.Write(func(tx *store.Tx) error {
		repo, err := tx.Repository()
		if err != nil {
			return err
		}
		a, err := tx.Allocation(f.a.AllocationID)
		if err != nil {
			return err
		}
		l = store.Lease{LeaseID: ids.New(), RepositoryID: repo.RepositoryID, AllocationID: a.AllocationID,
			WorktreePath: a.WorktreePath, Owner: a.Owner, Holder: h, Generation: a.LeaseGeneration + 1,
			AcquiredAt: store.Now(), RenewedAt: store.Now()}
		b, err := proc.RuntimeBinding{Holder: h, LeaseID: &l.LeaseID, Kind: "agent"}.Encode()
		if err != nil {
			return err
		}
		a.LeaseGeneration = l.Generation
		a.ExternalBindings = append(a.ExternalBindings, b)
		if err := tx.PutAllocationRuntime(&a); err != nil {
			return err
		}
		if err := gitrepo.CreateLock(f.c.CommonDir, f.c.Key, lease.Reason(l)); err != nil {
			return err
		}
		return tx.PutLease(&l)
	})
	return l
}

// environ is this process's environment without wt's variables: what
// the tests run under must not decide who the holder is.
func environ() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "WT_") })
}

// opts are the options of an unconfined run of args in w1, its standard
// streams /dev/null, its notices in n.
func (f runFix) opts(n *notes, args ...string) Options {
	off := ConfineOff
	return Options{Dir: f.c.TopLevel, Args: args, Environ: environ(), Stdin: f.null, Stdout: f.null, Stderr: f.null,
		PTY: PTYOff, Confine: &off, Notify: n.notify}
}

// path is a file of the scratch directory.
func (f runFix) path(name string) string { return filepath.Join(f.scratch, name) }

// sh is the argv of /bin/sh running script with the scratch directory as
// its $1.
func (f runFix) sh(script string) []string {
	return []string{"/bin/sh", "-c", script, "sh", f.scratch}
}

// lease reads w1's lease (ok false: none).
func (f runFix) lease(t *testing.T) (store.Lease, bool) {
	t.Helper()
	var l store.Lease
	var ok bool
	if err := f.repo.Store.Read(func(tx *store.Tx) error {
		var err error
		l, ok, err = tx.Lease(f.a.AllocationID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return l, ok
}

// alloc reads w1's allocation.
func (f runFix) alloc(t *testing.T) store.Allocation {
	t.Helper()
	var a store.Allocation
	if err := f.repo.Store.Read(func(tx *store.Tx) error {
		var err error
		a, err = tx.Allocation(f.a.AllocationID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return a
}

// gitLock is git's lock reason of w1 ("": unlocked).
func (f runFix) gitLock(t *testing.T) string {
	t.Helper()
	reason, _, err := gitrepo.ReadLock(f.c.CommonDir, f.c.Key)
	if err != nil {
		t.Fatal(err)
	}
	return reason
}

// events are the names of w1's events in events.jsonl, in order.
func (f runFix) events(t *testing.T) []string {
	t.Helper()
	var path string
	if err := f.repo.Store.Read(func(tx *store.Tx) error { path = tx.EventsPath(); return nil }); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var e store.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.AllocationID != nil && *e.AllocationID == f.a.AllocationID {
			out = append(out, e.Event)
		}
	}
	return out
}

// records is what a refusal must leave as it was: w1's lease, its
// allocation's runtime state, git's lock and the events.
type records struct {
	lease    string
	bindings string
	gen      int
	lock     string
	events   string
}

func (f runFix) records(t *testing.T) records {
	t.Helper()
	l, ok := f.lease(t)
	var lj []byte
	if ok {
		lj, _ = json.Marshal(l)
	}
	a := f.alloc(t)
	return records{lease: string(lj), bindings: strings.Join(a.ExternalBindings, "\n"), gen: a.LeaseGeneration,
		lock: f.gitLock(t), events: strings.Join(f.events(t), ",")}
}

// unchanged fails the test unless w1's records are as before.
func (f runFix) unchanged(t *testing.T, before records) {
	t.Helper()
	if after := f.records(t); after != before {
		t.Fatalf("the records changed:\nbefore %+v\nafter  %+v", before, after)
	}
}

// waitFor polls until cond holds, and fails the test (Errorf: it may
// run in a goroutine of its own) if it does not before the test's
// deadline: a wait for an event another process makes, not a measure of
// time.
func waitFor(t *testing.T, what string, cond func() bool) bool {
	t.Helper()
	// A wait for the event, bounded only by the test's own deadline.
	deadline := time.Now().Add(10 * time.Minute)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-time.Second)
	}
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("gave up waiting for %s", what)
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// gone reports whether no process has pid (reaped, not a zombie).
func gone(pid int) bool { return errors.Is(unix.Kill(pid, 0), unix.ESRCH) }

// readPID reads a pid a command wrote.
func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// envFile reads the environment a command wrote with env(1).
func envFile(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out
}

// TestRunHoldsTheLeaseForTheCommandAndReleasesIt: the command runs in
// the worktree with the grant's variables (an inherited WT_LEASE_ID
// replaced), the lease, git's lock and the holder lock are in place while
// it runs, its exit status is the run's, and everything is given back
// after.
func TestRunHoldsTheLeaseForTheCommandAndReleasesIt(t *testing.T) {
	f := newRunFix(t)
	var n notes
	o := f.opts(&n, f.sh(`env > "$1/env"; pwd -P > "$1/cwd"; exit 3`)...)
	o.Environ = append(o.Environ, "WT_LEASE_ID=stale-outer-lease")
	var granted []string
	o.Granted = func(g lease.Grant) { granted = append(granted, g.Lease.LeaseID) }
	var during struct {
		l        store.Lease
		ok       bool
		lock     string
		holderOK bool
		binding  []string
	}
	o.Started = func(g lease.Grant) {
		during.l, during.ok = f.lease(t)
		during.binding = f.alloc(t).ExternalBindings
		during.lock = f.gitLock(t)
		during.holderOK = liveness.HolderLocked(f.c.GitDir, g.Lease.LeaseID)
	}
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 3 || res.Died != 0 {
		t.Errorf("status %d, died %v", res.Status, res.Died)
	}
	g := res.Grant
	if g.Code != decision.WriterLeaseAcquired || !g.Owned || !g.Applicable || g.Lease.LeaseID == "" {
		t.Fatalf("grant %+v", g)
	}
	if len(granted) != 1 || granted[0] != g.Lease.LeaseID {
		t.Errorf("Granted was told %q", granted)
	}
	// While the command ran.
	if !during.ok || during.l.LeaseID != g.Lease.LeaseID || during.l.Child == nil || during.l.Child.PID <= 0 {
		t.Errorf("the lease while it ran: %v %+v", during.ok, during.l)
	}
	if len(during.binding) != 1 {
		t.Errorf("bindings while it ran: %q", during.binding)
	} else if b, ok, err := proc.DecodeRuntimeBinding(during.binding[0]); err != nil || !ok || b.Kind != DefaultKind ||
		b.LeaseID == nil || *b.LeaseID != g.Lease.LeaseID || b.Holder.PID != os.Getpid() {
		t.Errorf("the binding while it ran: %+v %v", b, err)
	}
	if during.lock != lease.Reason(g.Lease) {
		t.Errorf("git's lock while it ran: %q", during.lock)
	}
	if !during.holderOK {
		t.Error("the holder lock was not held while it ran")
	}
	// What the command was given.
	env := envFile(t, f.path("env"))
	for k, want := range map[string]string{"WT_LEASE_ID": g.Lease.LeaseID, "WT_ALLOCATION_ID": f.a.AllocationID,
		"WT_CLIENT_ID": "sh", "WT_HOLDER_PID": strconv.Itoa(os.Getpid())} {
		if env[k] != want {
			t.Errorf("the command's %s = %q, want %q", k, env[k], want)
		}
	}
	if cwd, _ := os.ReadFile(f.path("cwd")); strings.TrimSpace(string(cwd)) != f.c.TopLevel {
		t.Errorf("the command ran in %q, not %s", cwd, f.c.TopLevel)
	}
	// After.
	if !res.Released.LeaseRemoved || res.Released.Kept != "" {
		t.Errorf("released %+v", res.Released)
	}
	if l, ok := f.lease(t); ok {
		t.Errorf("a lease is left: %+v", l)
	}
	if lock := f.gitLock(t); lock != "" {
		t.Errorf("git's lock is left: %q", lock)
	}
	if liveness.HolderLocked(f.c.GitDir, g.Lease.LeaseID) {
		t.Error("the holder lock is still held")
	}
	if b, err := os.ReadFile(liveness.HolderLockPath(f.c.GitDir)); err != nil || len(b) != 0 {
		t.Errorf("the holder lock file after the run: %q %v", b, err)
	}
	if a := f.alloc(t); len(a.ExternalBindings) != 0 {
		t.Errorf("bindings left: %q", a.ExternalBindings)
	}
	if during.l.Child != nil && during.l.Child.Cgroup != "" {
		cg := during.l.Child.Cgroup
		// Where wt-exec could make the command a cgroup, it goes with it.
		if _, err := os.Stat(cg); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the command's cgroup %s is left: %v", cg, err)
		}
	}
	if ev := f.events(t); len(ev) == 0 || ev[len(ev)-1] != "writer_lease_released" {
		t.Errorf("events %q", ev)
	}
	if len(n.said) != 0 {
		t.Errorf("notices: %q", n.said)
	}
}

// TestRunRefusesWhileAnotherLiveHolderHoldsTheLease: a lease held by a
// live process under another client is WRITER_LEASE_HELD, and with
// --wait WRITER_LEASE_WAIT_TIMEOUT once the timeout passed; the command
// never runs and the lease stays as it was.
func TestRunRefusesWhileAnotherLiveHolderHoldsTheLease(t *testing.T) {
	f := newRunFix(t)
	other := wttest.Self(t) // this process, as client "test": live, and not the run's holder (client "sh")
	held := f.plant(t, other)
	for _, tc := range []struct {
		name string
		wait bool
		code string
	}{
		{"at once", false, decision.WriterLeaseHeld},
		{"after waiting", true, decision.WriterLeaseWaitTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.records(t)
			var n notes
			o := f.opts(&n, f.sh(`: > "$1/ran"`)...)
			var told []string
			if tc.wait {
				o.Wait, o.Timeout = true, time.Millisecond
				o.Waiting = func(m string) { told = append(told, m) }
			}
			_, err := Run(o)
			wttest.WantCode(t, err, tc.code)
			f.unchanged(t, before)
			if l, _ := f.lease(t); l.LeaseID != held.LeaseID {
				t.Errorf("the lease is now %s", l.LeaseID)
			}
			if _, err := os.Stat(f.path("ran")); err == nil {
				t.Error("the command ran")
			}
			if tc.wait && (len(told) != 1 || !strings.HasPrefix(told[0], decision.WriterLeaseHeld)) {
				t.Errorf("Waiting was told %q", told)
			}
		})
	}
}

// TestRunRefusesBeforeTheCommandStarts: what is refused before any grant
// (no command, one that is not there or not runnable, a directory that
// is not one) and what the grant refuses (another owner, another
// allocation, a gate not met) leave the records as they were, and the
// command never runs.
func TestRunRefusesBeforeTheCommandStarts(t *testing.T) {
	f := newRunFix(t)
	data := f.path("data")
	if err := os.WriteFile(data, []byte("echo hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ran := f.path("ran")
	script := f.sh(`: > "$1/ran"`)
	var gateAsked int
	for _, tc := range []struct {
		name string
		edit func(o *Options)
		code string
	}{
		{"no command", func(o *Options) { o.Args = nil }, decision.Usage},
		{"no such file", func(o *Options) { o.Args = []string{f.path("none")} }, decision.CommandNotFound},
		{"not in PATH", func(o *Options) { o.Args = []string{"wt-no-such-command"} }, decision.CommandNotFound},
		{"not executable", func(o *Options) { o.Args = []string{data} }, decision.CommandNotRunnable},
		{"a directory", func(o *Options) { o.Args = []string{f.scratch} }, decision.CommandNotRunnable},
		{"no such directory", func(o *Options) { o.Dir = f.path("none") }, decision.InvalidTarget},
		{"another owner", func(o *Options) { o.Owner = "bob" }, decision.OwnerMismatch},
		{"another allocation", func(o *Options) { o.Allocation = "another-allocation" }, decision.UnregisteredWorktree},
		{"the gate refuses", func(o *Options) {
			o.CheckGate = func(c gitrepo.Checkout) error {
				gateAsked++
				if c.Key != f.c.Key {
					t.Errorf("the gate was asked about %q", c.Key)
				}
				return decision.Relay(decision.HooksMissing, "the gate is not in place")
			}
		}, decision.HooksMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.records(t)
			var n notes
			o := f.opts(&n, script...)
			tc.edit(&o)
			res, err := Run(o)
			wttest.WantCode(t, err, tc.code)
			f.unchanged(t, before)
			if _, err := os.Stat(ran); err == nil {
				t.Error("the command ran")
			}
			if res.Grant.Started || res.Status != 0 {
				t.Errorf("result %+v", res)
			}
		})
	}
	if gateAsked != 1 {
		t.Errorf("the gate was asked %d times", gateAsked)
	}
}

// TestRunEndsAsTheCommandDied: a command killed by signal N is status
// 128+N with Died naming N (wt-exec then dies of it), and the lease is
// released as after an exit.
func TestRunEndsAsTheCommandDied(t *testing.T) {
	f := newRunFix(t)
	for _, sig := range []unix.Signal{unix.SIGKILL, unix.SIGTERM, unix.SIGSEGV} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			var n notes
			res, err := Run(f.opts(&n, f.sh("kill -"+strings.TrimPrefix(unix.SignalName(sig), "SIG")+" $$")...))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != 128+int(sig) || res.Died != sig || res.ToGroup {
				t.Errorf("status %d, died %v, to group %v", res.Status, res.Died, res.ToGroup)
			}
			if !res.Released.LeaseRemoved {
				t.Errorf("released %+v", res.Released)
			}
			if _, ok := f.lease(t); ok {
				t.Error("a lease is left")
			}
		})
	}
}

// TestRunStopsWhatTheCommandLeftRunning: once the command exited, what
// it left (in its group, in a session of its own, ignoring SIGTERM) is
// stopped and reaped before the lease is released; SIGKILL ends what
// outlives the grace period.
func TestRunStopsWhatTheCommandLeftRunning(t *testing.T) {
	f := newRunFix(t)
	// Each script starts a sleep that writes its pid, tells the command
	// through the FIFO $1/p that it is ready, and is left behind.
	for _, tc := range []struct {
		name, script string
		grace        time.Duration
		said         string
	}{
		{"in its group", `sleep 600 & echo $! > "$1/pid"`, 0, "stopping 1 leftover process(es)"},
		{"in a session of its own", `mkfifo "$1/p"; setsid sh -c 'echo $$ > "$1/pid"; echo > "$1/p"; exec sleep 600' sh "$1" & read x < "$1/p"`, 0,
			"stopping 1 leftover process(es)"},
		{"ignoring SIGTERM", `mkfifo "$1/p"; (trap '' TERM; sh -c 'echo $PPID' > "$1/pid"; echo > "$1/p"; exec sleep 600) & read x < "$1/p"`, time.Millisecond,
			"killed 1 leftover process(es) after the grace period"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(f.path("p"))
			os.Remove(f.path("pid"))
			var n notes
			o := f.opts(&n, f.sh(tc.script)...)
			o.Grace = tc.grace
			res, err := Run(o)
			if err != nil {
				t.Fatal(err)
			}
			pid := readPID(t, f.path("pid"))
			if res.Status != 0 || !gone(pid) {
				t.Errorf("status %d; the leftover pid %d is gone: %v", res.Status, pid, gone(pid))
			}
			if !n.holding(tc.said) {
				t.Errorf("notices %q, want %q", n.said, tc.said)
			}
			if !res.Released.LeaseRemoved {
				t.Errorf("released %+v", res.Released)
			}
		})
	}
}

// TestRunUnderAnOuterHoldersLease: a wt-exec run by the command of an
// outer one ($WT_HOLDER_PID naming a live ancestor) renews the outer
// lease: its command gets that lease, and the lease stays for its
// holder after the inner run, only the inner run's binding going.
func TestRunUnderAnOuterHoldersLease(t *testing.T) {
	f := newRunFix(t)
	id, err := proc.Describe(os.Getppid())
	if err != nil {
		t.Skip("the parent process cannot be described:", err)
	}
	outer := proc.Holder{ClientID: "outer", PID: id.PID, BootID: id.BootID, StartTicks: id.StartTicks}
	held := f.plant(t, outer)
	var n notes
	o := f.opts(&n, f.sh(`printf %s "$WT_LEASE_ID" > "$1/lease"`)...)
	o.Environ = append(o.Environ, "WT_HOLDER_PID="+strconv.Itoa(id.PID), "WT_CLIENT_ID=outer", "WT_LEASE_ID="+held.LeaseID)
	o.Kind = "test" // an occupancy of its own beside the outer one's
	var bindings []string
	o.Started = func(lease.Grant) { bindings = f.alloc(t).ExternalBindings }
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	g := res.Grant
	if g.Code != decision.WriterLeaseRenewed || g.Owned || g.Lease.LeaseID != held.LeaseID || g.Lease.Holder.PID != id.PID {
		t.Fatalf("grant %+v", g)
	}
	if b, _ := os.ReadFile(f.path("lease")); string(b) != held.LeaseID {
		t.Errorf("the command's WT_LEASE_ID %q, want %s", b, held.LeaseID)
	}
	if len(bindings) != 2 {
		t.Errorf("bindings while it ran: %q", bindings)
	}
	if res.Released.LeaseRemoved || res.Released.Kept != "" {
		t.Errorf("released %+v", res.Released)
	}
	if l, ok := f.lease(t); !ok || l.LeaseID != held.LeaseID || !l.Holder.Same(outer) {
		t.Errorf("the outer lease after the inner run: %v %+v", ok, l)
	}
	if a := f.alloc(t); len(a.ExternalBindings) != 1 {
		t.Errorf("bindings left: %q", a.ExternalBindings)
	}
	if reason := f.gitLock(t); reason != lease.Reason(held) {
		t.Errorf("git's lock after the inner run: %q", reason)
	}
}

// TestRunNestedLeavesTheStoreAlone: a nested run (inside a confined
// command, the entitlement proved by its caller) writes nothing to the
// store, passes the environment through as it is, and still runs the
// command in its own group to its end.
func TestRunNestedLeavesTheStoreAlone(t *testing.T) {
	f := newRunFix(t)
	before := f.records(t)
	var n notes
	o := f.opts(&n, f.sh(`printf '%s %s' "$WT_LEASE_ID" "$(cut -d' ' -f5 /proc/$$/stat)" > "$1/out"; echo $$ > "$1/pid"; exit 5`)...)
	o.Nested = true
	o.Environ = append(o.Environ, "WT_LEASE_ID=the-outer-lease")
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 5 || res.Grant.Applicable || res.Grant.Lease.LeaseID != "" {
		t.Errorf("result %+v", res)
	}
	pid := readPID(t, f.path("pid"))
	if b, _ := os.ReadFile(f.path("out")); string(b) != "the-outer-lease "+strconv.Itoa(pid) {
		t.Errorf("the command saw %q (its lease, its process group), want the outer lease and a group of its own (%d)", b, pid)
	}
	f.unchanged(t, before)
}

// TestRunRenewsTheLeaseWhileTheCommandRuns: with a TTL the lease's
// expiry moves on while the command runs (every third of the TTL), and
// the lease is released at its end.
func TestRunRenewsTheLeaseWhileTheCommandRuns(t *testing.T) {
	f := newRunFix(t)
	fifo := f.path("go")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var n notes
	// The command runs until the test writes to the FIFO.
	o := f.opts(&n, f.sh(`read x < "$1/go"`)...)
	o.TTL = 300 * time.Millisecond
	var first, renewed store.Lease
	done := make(chan struct{})
	o.Started = func(g lease.Grant) {
		first = g.Lease
		// The renewals are the supervision's, which starts once Started
		// returns: the wait for one is a goroutine's.
		go func() {
			defer close(done)
			waitFor(t, "a renewal", func() bool {
				err := f.repo.Store.Read(func(tx *store.Tx) error {
					var err error
					renewed, _, err = tx.Lease(f.a.AllocationID)
					return err
				})
				return err == nil && renewed.RenewedAt != first.RenewedAt
			})
			if err := os.WriteFile(fifo, []byte("\n"), 0); err != nil {
				t.Error(err)
			}
		}()
	}
	res, err := Run(o)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if first.ExpiresAt == nil || renewed.ExpiresAt == nil || renewed.LeaseID != first.LeaseID {
		t.Fatalf("granted %+v, then %+v", first, renewed)
	}
	was, err1 := time.Parse(time.RFC3339Nano, *first.ExpiresAt)
	now, err2 := time.Parse(time.RFC3339Nano, *renewed.ExpiresAt)
	if err1 != nil || err2 != nil || !now.After(was) {
		t.Errorf("the expiry went from %s to %s", *first.ExpiresAt, *renewed.ExpiresAt)
	}
	if !slices.Contains(f.events(t), "writer_lease_renewed") {
		t.Errorf("events %q", f.events(t))
	}
	if res.Status != 0 || !res.Released.LeaseRemoved {
		t.Errorf("status %d, released %+v", res.Status, res.Released)
	}
	if _, ok := f.lease(t); ok {
		t.Error("a lease is left")
	}
}

// TestRunLeavesLeftoversToWhomTheLeaseWasTransferred: when the lease went
// (wt-admin lease transfer) to a process the command left, that process
// runs on under it: it is not stopped, and the lease stays, as not this
// run's to release.
func TestRunLeavesLeftoversToWhomTheLeaseWasTransferred(t *testing.T) {
	f := newRunFix(t)
	fifo := f.path("go")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var n notes
	o := f.opts(&n, f.sh(`sleep 600 & echo $! > "$1/pid.tmp"; mv "$1/pid.tmp" "$1/pid"; read x < "$1/go"`)...)
	pid := 0
	o.Started = func(g lease.Grant) {
		if !waitFor(t, "the command's pid file", func() bool { _, err := os.Stat(f.path("pid")); return err == nil }) {
			return
		}
		pid = readPID(t, f.path("pid"))
		if _, err := lease.Transfer(f.repo, f.c.TopLevel, pid, "the server goes on", lease.Expect{LeaseID: g.Lease.LeaseID}); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(fifo, []byte("\n"), 0); err != nil {
			t.Error(err)
		}
	}
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if pid == 0 {
		t.Fatal("no pid")
	}
	l, ok := f.lease(t)
	t.Cleanup(func() {
		unix.Kill(pid, unix.SIGKILL)
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, 0, nil) // a child of this process, the subreaper
		if l.Child != nil && l.Child.Cgroup != "" {
			// The command's cgroup stayed with what ran in it.
			unix.Rmdir(l.Child.Cgroup)
		}
	})
	if gone(pid) {
		t.Fatal("the process the lease went to was stopped")
	}
	if res.Released.LeaseRemoved || res.Released.Kept == "" {
		t.Errorf("released %+v", res.Released)
	}
	if !ok || l.Holder.PID != pid || l.LeaseID != res.Grant.Lease.LeaseID {
		t.Errorf("the lease after the run: %v %+v", ok, l)
	}
	if !n.holding("transferred to pid "+strconv.Itoa(pid)) || !n.holding("the lease was left in place") {
		t.Errorf("notices %q", n.said)
	}
}

// TestRunPutsAsideWhatWasLeftInTheAdminDir: an executable file in the
// worktree's admin dir (which a hooks path could make a program the next
// git runs) is put aside into the store's quarantine before the run, and
// the run says so.
func TestRunPutsAsideWhatWasLeftInTheAdminDir(t *testing.T) {
	f := newRunFix(t)
	planted := filepath.Join(f.c.GitDir, "planted-hook")
	if err := os.WriteFile(planted, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var n notes
	res, err := Run(f.opts(&n, "/bin/true"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 0 || !n.holding(decision.AdminDirUnsafe) {
		t.Errorf("status %d, notices %q", res.Status, n.said)
	}
	if _, err := os.Lstat(planted); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the planted file is still in the admin dir: %v", err)
	}
	found := false
	filepath.WalkDir(alloc.QuarantineDir(f.repo.Store.Root(), f.c.Key), func(p string, d os.DirEntry, err error) error {
		found = found || err == nil && d.Name() == "planted-hook"
		return nil
	})
	if !found {
		t.Error("the planted file is not in the quarantine")
	}
}

// TestRunInTheCanonicalCheckoutTakesNoLease: the canonical checkout has
// gates of its own: the command runs there without a lease (and without
// its variables), and nothing is written.
func TestRunInTheCanonicalCheckoutTakesNoLease(t *testing.T) {
	f := newRunFix(t)
	before := f.records(t)
	var n notes
	o := f.opts(&n, f.sh(`env > "$1/env"; exit 4`)...)
	o.Dir = f.w.Dir
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 4 || res.Grant.Code != decision.NotApplicable || res.Grant.Applicable {
		t.Errorf("result %+v", res)
	}
	if env := envFile(t, f.path("env")); env["WT_LEASE_ID"] != "" || env["WT_HOLDER_PID"] != "" {
		t.Errorf("the command got lease variables: %q %q", env["WT_LEASE_ID"], env["WT_HOLDER_PID"])
	}
	f.unchanged(t, before)
}

// TestRunWaitsForTheLease: with --wait, a run refused because the lease
// is held waits in line: it is granted once the lease is gone, and a stop
// signal ends the wait (INTERRUPTED, naming the signal) with the command
// never started and the lease as it was.
func TestRunWaitsForTheLease(t *testing.T) {
	f := newRunFix(t)
	t.Run("granted once the lease is gone", func(t *testing.T) {
		held := f.plant(t, wttest.Self(t))
		var n notes
		o := f.opts(&n, f.sh(`printf %s "$WT_LEASE_ID" > "$1/lease"`)...)
		o.Wait = true
		var told []string
		o.Waiting = func(m string) {
			told = append(told, m)
			// The holder releases: the lease goes, and the waiter wakes.
			f.w.Write(func(tx *store.Tx) error {
				a, err := tx.Allocation(f.a.AllocationID)
				if err != nil {
					return err
				}
				a.ExternalBindings = nil
				if err := tx.PutAllocationRuntime(&a); err != nil {
					return err
				}
				if _, err := gitrepo.RemoveLock(f.c.CommonDir, f.c.Key, lease.Reason(held)); err != nil {
					return err
				}
				return tx.RemoveLease(f.a.AllocationID)
			})
		}
		res, err := Run(o)
		if err != nil {
			t.Fatal(err)
		}
		if len(told) != 1 || !strings.HasPrefix(told[0], decision.WriterLeaseHeld) {
			t.Errorf("Waiting was told %q", told)
		}
		if b, _ := os.ReadFile(f.path("lease")); res.Grant.Code != decision.WriterLeaseAcquired || string(b) != res.Grant.Lease.LeaseID || b == nil {
			t.Errorf("grant %+v, the command's lease %q", res.Grant, b)
		}
		if _, ok := f.lease(t); ok || !res.Released.LeaseRemoved {
			t.Errorf("a lease is left; released %+v", res.Released)
		}
	})
	t.Run("stopped by a signal", func(t *testing.T) {
		os.Remove(f.path("lease"))
		f.plant(t, wttest.Self(t))
		before := f.records(t)
		var n notes
		o := f.opts(&n, f.sh(`printf %s "$WT_LEASE_ID" > "$1/lease"`)...)
		o.Wait = true
		// The run catches the stop signals while it waits: SIGTERM to
		// this process ends the wait instead of the process.
		o.Waiting = func(string) { unix.Kill(os.Getpid(), unix.SIGTERM) }
		_, err := Run(o)
		d := decisiontest.Want(t, err, decision.Interrupted)
		if d.Facts["signal"] != int(unix.SIGTERM) {
			t.Errorf("%+v", d)
		}
		f.unchanged(t, before)
		if _, err := os.Stat(f.path("lease")); err == nil {
			t.Error("the command ran")
		}
		if ents, _ := os.ReadDir(store.WaitersDir(f.repo.Store.Root(), f.c.Key)); len(ents) != 0 {
			t.Errorf("tickets left: %v", ents)
		}
	})
}
