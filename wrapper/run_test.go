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

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
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

// waitFor polls until cond holds, failing the test at its deadline: a
// wait for an event another process makes, not a measure of time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	if d, ok := t.Deadline(); ok && d.Before(deadline) {
		deadline = d.Add(-time.Second)
	}
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
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
	held := f.w.Lease(f.a, other, nil)
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
