package lease

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wtfixture"
)

// TestMain keeps every git away from the configuration of the user and of
// the machine (gittest.Setenv), before any test runs.
func TestMain(m *testing.M) {
	gittest.Setenv()
	os.Exit(m.Run())
}

// gov is a governed repository (wtfixture.Repo) with one feature worktree,
// for the tests that run the lease operations on the real store, git's
// real lock files and real processes.
type gov struct {
	*wtfixture.Repo
	a store.Allocation
	c gitrepo.Checkout
}

func newGov(t *testing.T) *gov {
	t.Helper()
	return onRepo(t, wtfixture.New(t, policy.Change{}), 1)
}

// onRepo is a gov on a repository a table's subtests share (making one
// costs a few git processes): its own feature worktree, of task T-n at
// wn, checked with t. Its records are its allocation's alone; the events
// it reads are its allocation's.
func onRepo(t *testing.T, shared *wtfixture.Repo, n int) *gov {
	t.Helper()
	f := *shared
	f.T = t
	a := f.Allocate(fmt.Sprintf("T-%d", n), "", fmt.Sprintf("w%d", n))
	c, err := gitrepo.Locate(a.WorktreePath)
	if err != nil {
		t.Fatal(err)
	}
	return &gov{Repo: &f, a: a, c: c}
}

// sharedRepo is a governed repository for the subtests of a table.
func sharedRepo(t *testing.T) *wtfixture.Repo {
	t.Helper()
	return wtfixture.New(t, policy.Change{})
}

// realScan is the evidence wt-exec reads: every process on the machine.
func realScan() (Evidence, error) { return proc.NewScan() }

// acquire runs Acquire for holder as an agent; the child is already gone.
func (g *gov) acquire(req Request) (Grant, error) {
	g.T.Helper()
	if req.Kind == "" {
		req.Kind = "agent"
	}
	return Acquire(g.R, g.c, req, realScan, func(Grant) (*store.ChildGroup, error) { return nil, nil })
}

// mustAcquire is acquire that fails the test on a refusal.
func (g *gov) mustAcquire(req Request) Grant {
	g.T.Helper()
	gr, err := g.acquire(req)
	if err != nil {
		g.T.Fatalf("acquire: %v", err)
	}
	return gr
}

// plant writes a lease of the worktree held by h as a grant would leave
// it: the next generation on the allocation, git's lock with its reason,
// and its runtime binding. change, if not nil, edits the lease first.
func (g *gov) plant(h proc.Holder, change func(l *store.Lease)) store.Lease {
	g.T.Helper()
	var l store.Lease
	g.Write(func(tx *store.Tx) error {
		repo, err := tx.Repository()
		if err != nil {
			return err
		}
		a, err := tx.Allocation(g.a.AllocationID)
		if err != nil {
			return err
		}
		l = store.Lease{LeaseID: ids.New(), RepositoryID: repo.RepositoryID, AllocationID: a.AllocationID,
			WorktreePath: a.WorktreePath, Owner: a.Owner, Holder: h, Generation: a.LeaseGeneration + 1,
			AcquiredAt: store.Now(), RenewedAt: store.Now()}
		if change != nil {
			change(&l)
		}
		b, err := proc.RuntimeBinding{Holder: h, LeaseID: &l.LeaseID, Kind: "agent"}.Encode()
		if err != nil {
			return err
		}
		a.LeaseGeneration = l.Generation
		a.ExternalBindings = append(a.ExternalBindings, b)
		if err := tx.PutAllocationRuntime(&a); err != nil {
			return err
		}
		if err := placeLock(g.R.Git.CommonDir, a.WorktreeKey, l, false); err != nil {
			return err
		}
		return tx.PutLease(&l)
	})
	return l
}

// lease reads the worktree's lease (ok false: none).
func (g *gov) lease() (store.Lease, bool) {
	g.T.Helper()
	var l store.Lease
	var ok bool
	if err := g.R.Store.Read(func(tx *store.Tx) error {
		var err error
		l, ok, err = tx.Lease(g.a.AllocationID)
		return err
	}); err != nil {
		g.T.Fatal(err)
	}
	return l, ok
}

// alloc reads the worktree's allocation.
func (g *gov) alloc() store.Allocation {
	g.T.Helper()
	var a store.Allocation
	if err := g.R.Store.Read(func(tx *store.Tx) error {
		var err error
		a, err = tx.Allocation(g.a.AllocationID)
		return err
	}); err != nil {
		g.T.Fatal(err)
	}
	return a
}

// handoff reads the worktree's handoff (ok false: none).
func (g *gov) handoff() (store.Handoff, bool) {
	g.T.Helper()
	var h store.Handoff
	var ok bool
	if err := g.R.Store.Read(func(tx *store.Tx) error {
		var err error
		h, ok, err = tx.Handoff(g.a.AllocationID)
		return err
	}); err != nil {
		g.T.Fatal(err)
	}
	return h, ok
}

// lock is git's lock reason of the worktree ("" and false: unlocked).
func (g *gov) lock() (string, bool) {
	g.T.Helper()
	reason, locked, err := gitrepo.ReadLock(g.R.Git.CommonDir, g.a.WorktreeKey)
	if err != nil {
		g.T.Fatal(err)
	}
	return reason, locked
}

// events are the events of the worktree's allocation in events.jsonl, in
// order.
func (g *gov) events() []store.Event {
	g.T.Helper()
	var path string
	if err := g.R.Store.Read(func(tx *store.Tx) error { path = tx.EventsPath(); return nil }); err != nil {
		g.T.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		g.T.Fatal(err)
	}
	var out []store.Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var e store.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			g.T.Fatal(err)
		}
		if e.AllocationID != nil && *e.AllocationID == g.a.AllocationID {
			out = append(out, e)
		}
	}
	return out
}

// names are the names of the events, in order.
func (g *gov) names() []string {
	g.T.Helper()
	var out []string
	for _, e := range g.events() {
		out = append(out, e.Event)
	}
	return out
}

// last is the name of the last event.
func (g *gov) last() string {
	g.T.Helper()
	ev := g.events()
	if len(ev) == 0 {
		return ""
	}
	return ev[len(ev)-1].Event
}

// snapshot is what a refusal must leave as it was: the lease, the
// allocation's runtime state, git's lock, the handoff and the number of
// events.
type snapshot struct {
	lease     store.Lease
	has       bool
	bindings  string
	gen       int
	lock      string
	handoff   bool
	numEvents int
}

func (g *gov) snap() snapshot {
	g.T.Helper()
	l, has := g.lease()
	a := g.alloc()
	reason, _ := g.lock()
	_, h := g.handoff()
	return snapshot{lease: l, has: has, bindings: strings.Join(a.ExternalBindings, "\n"), gen: a.LeaseGeneration,
		lock: reason, handoff: h, numEvents: len(g.events())}
}

// unchanged fails the test unless the records are as before.
func (g *gov) unchanged(before snapshot) {
	g.T.Helper()
	after := g.snap()
	if after.has != before.has || after.lease.LeaseID != before.lease.LeaseID || after.lease.Generation != before.lease.Generation ||
		!after.lease.Holder.Same(before.lease.Holder) || after.bindings != before.bindings || after.gen != before.gen ||
		after.lock != before.lock || after.handoff != before.handoff || after.numEvents != before.numEvents {
		g.T.Fatalf("a refusal changed the records:\nbefore %+v\nafter  %+v", before, after)
	}
}

// exited is a holder whose process ran on this boot and has exited: a
// real identity (pid and start ticks read while it was there), of which
// nothing runs.
func exited(t *testing.T, client string) proc.Holder {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Until it is waited, its /proc entry stays (running or a zombie).
	st, err := proc.ReadStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	boot, err := proc.BootID()
	if err != nil {
		t.Skip("no boot id:", err)
	}
	return proc.Holder{ClientID: client, PID: st.PID, BootID: boot, StartTicks: st.StartTicks}
}

// exitedLeader is a holder that led a process group and exited, leaving
// a member of its group running (killed at the end of the test).
func exitedLeader(t *testing.T, client string) proc.Holder {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command("sh", "-c", "sleep 600 </dev/null >/dev/null 2>&1 & echo $!")
	cmd.Stdout = &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := proc.ReadStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	member, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(member, syscall.SIGKILL) })
	boot, _ := proc.BootID()
	return proc.Holder{ClientID: client, PID: st.PID, BootID: boot, StartTicks: st.StartTicks}
}

// sleeper starts a child of this process that sleeps in its own process
// group, in dir ("" here) with env added; it is killed and waited at the
// end of the test. It returns the child's group.
func sleeper(t *testing.T, dir string, env ...string) *store.ChildGroup {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	st, err := proc.ReadStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return &store.ChildGroup{PID: st.PID, StartTicks: st.StartTicks}
}

// stranger starts a process that sleeps with its cwd in dir and is not
// this process's descendant (its shell exits), so that a reading of the
// processes that use dir counts it; it is killed at the end of the test.
func stranger(t *testing.T, dir string) proc.Holder {
	t.Helper()
	out, err := exec.Command("sh", "-c", `cd "$1" && sleep 600 </dev/null >/dev/null 2>&1 & echo $!`, "sh", dir).Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	id, err := proc.Describe(pid)
	if err != nil {
		t.Fatal(err)
	}
	return proc.Holder{ClientID: "stranger", PID: id.PID, BootID: id.BootID, StartTicks: id.StartTicks}
}

// as is h under another client id.
func as(h proc.Holder, client string) proc.Holder {
	h.ClientID = client
	return h
}
