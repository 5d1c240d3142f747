package alloc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// recoverOne runs Recover and returns its one outcome.
func (f *fixture) recoverOne() Recovery {
	f.t.Helper()
	out, err := f.r.Recover(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	if len(out) != 1 {
		f.t.Fatalf("recovered %+v, want one", out)
	}
	return out[0]
}

// TestRecoverRolledBack: an allocate whose actor is gone and whose
// worktree git never added is rolled back: the plan dropped with a
// receipt and an event, the branch git made at the base commit deleted,
// an empty directory removed; its task key is free again.
func TestRecoverRolledBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	b := "wt/T-1"
	j := f.plan(f.planned("T-1", "w1", &b), wttest.DeadIdentity)
	f.git("branch", b)
	if err := os.Mkdir(f.path("w1"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := f.recoverOne()
	want := Recovery{TransactionID: j.TransactionID, Path: f.path("w1"), TaskKey: "T-1", Outcome: "rolled_back",
		Code:   decision.AllocationRolledBack,
		Detail: "the worktree was never added; the plan is dropped; the branch wt/T-1 it had created at the base commit is deleted"}
	if got != want {
		t.Errorf("recovery:\n got %+v\nwant %+v", got, want)
	}
	if exists, _ := f.r.Git.BranchExists(f.ctx, b); exists {
		t.Error("the empty branch is kept")
	}
	if _, err := os.Lstat(f.path("w1")); !os.IsNotExist(err) {
		t.Errorf("the empty directory is kept: %v", err)
	}
	if js := f.journals(); len(js) != 0 {
		t.Errorf("journals: %+v", js)
	}
	if ev := f.events(); ev[len(ev)-1].Event != "allocation_rolled_back" || ev[len(ev)-1].Detail["transaction_id"] != j.TransactionID {
		t.Errorf("event: %+v", ev[len(ev)-1])
	}
	if _, err := f.r.Allocate(f.ctx, Request{TaskKey: "T-1", Owner: "alice", Path: f.path("w1")}); err != nil {
		t.Errorf("the task after the rollback: %v", err)
	}
}

// TestRecoverKeepsWork: a branch that moved past the base commit is kept,
// and a directory that holds anything blocks the journal
// (INTERRUPTED_TRANSACTION), which keeps its task key.
func TestRecoverKeepsWork(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	b := "wt/T-1"
	f.plan(f.planned("T-1", "w1", &b), wttest.DeadIdentity)
	f.git("branch", b)
	f.git("update-ref", "refs/heads/"+b, f.git("commit-tree", "-p", f.base, "-m", "work", f.base+"^{tree}"))
	if got := f.recoverOne(); got.Outcome != "rolled_back" ||
		!strings.HasSuffix(got.Detail, "; the branch wt/T-1 has moved past the base commit and is kept") {
		t.Errorf("a branch with work: %+v", got)
	}
	if exists, _ := f.r.Git.BranchExists(f.ctx, b); !exists {
		t.Error("the branch with work is gone")
	}

	j := f.plan(f.planned("T-2", "w2", nil), wttest.DeadIdentity)
	if err := writeFile(filepath.Join(f.path("w2"), "notes"), "mine"); err != nil {
		t.Fatal(err)
	}
	got := f.recoverOne()
	if got.Outcome != "blocked" || got.Code != decision.InterruptedTx || got.TransactionID != j.TransactionID ||
		got.Detail != f.path("w2")+" exists but git does not list it as a worktree; move it away after checking its content, then run wt-admin allocate again" {
		t.Errorf("a directory with a file: %+v", got)
	}
	if b, err := os.ReadFile(filepath.Join(f.path("w2"), "notes")); err != nil || string(b) != "mine" {
		t.Errorf("the file: %q %v", b, err)
	}
	if js := f.journals(); len(js) != 1 {
		t.Errorf("journals: %+v", js)
	}
	// The next allocate reports it and holds the key.
	res, err := f.r.Allocate(f.ctx, Request{TaskKey: "T-2", Owner: "alice", Path: f.path("w3")})
	wttest.WantCode(t, err, decision.TaskKeyInUse)
	if len(res.Recovered) != 1 || res.Recovered[0].Outcome != "blocked" {
		t.Errorf("recovered on the way: %+v", res.Recovered)
	}
}

// TestRecoverFinished: an allocate whose worktree git added before its
// actor died is finished: its records written, as allocate writes them.
func TestRecoverFinished(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	b := "wt/T-1"
	p := f.planned("T-1", "w1", &b)
	j := f.plan(p, wttest.DeadIdentity)
	f.git("worktree", "add", "-q", "-b", b, p.WorktreePath, f.base)
	got := f.recoverOne()
	if got.Outcome != "finished" || got.Code != decision.AllocationRecovered || got.TaskKey != "T-1" ||
		got.Detail != "the worktree was added before the crash; its records are now written" {
		t.Errorf("recovery: %+v", got)
	}
	var tg Target
	f.write(func(tx *store.Tx) (err error) { tg, err = f.r.Resolve(tx, p.WorktreePath); return err })
	if tg.Allocation.AllocationID != p.AllocationID || tg.Key != "w1" || tg.Allocation.WorktreeKey != "w1" {
		t.Errorf("resolved: %+v", tg)
	}
	f.write(func(tx *store.Tx) error {
		rs, err := tx.Receipts()
		if err != nil || len(rs) != 1 || rs[0].TransactionID != j.TransactionID || rs[0].Outcome != "allocation_recovered" {
			t.Errorf("receipts: %+v %v", rs, err)
		}
		return nil
	})
	if led, _ := store.ReadLedger(f.r.Store.Root(), p.AllocationID, "refs/heads/"+b); len(led.Lines) != 1 || led.Lines[0].New != f.base {
		t.Errorf("ledger: %+v", led.Lines)
	}

	// finish run again over the written record keeps it as it is.
	f.write(func(tx *store.Tx) error {
		a, err := f.r.finish(f.ctx, tx, store.Journal{TransactionID: j.TransactionID, Target: p.WorktreePath}, p, "allocation_recovered")
		if err != nil || a.AllocationID != p.AllocationID || a.UpdatedAt != tg.Allocation.UpdatedAt {
			t.Errorf("finish again: %+v %v", a, err)
		}
		return nil
	})
}

// TestRecoverNotOurs: a worktree at the planned path that is not the
// planned one (another branch) blocks; a malformed plan blocks; neither is
// touched.
func TestRecoverNotOurs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	b := "wt/T-1"
	f.plan(f.planned("T-1", "w1", &b), wttest.DeadIdentity)
	f.git("worktree", "add", "-q", "-b", "other", f.path("w1"))
	got := f.recoverOne()
	if got.Outcome != "blocked" || !strings.HasPrefix(got.Detail, "a worktree at "+f.path("w1")+" is not the one planned (branch \"other\"") {
		t.Errorf("another branch: %+v", got)
	}
	if _, err := os.Stat(filepath.Join(f.path("w1"), ".git")); err != nil {
		t.Errorf("the worktree was touched: %v", err)
	}
	f.write(func(tx *store.Tx) error {
		js, err := tx.Journals()
		if err != nil {
			return err
		}
		for _, j := range js {
			if err := tx.FinishJournal(j, "test", nil, store.Now()); err != nil {
				return err
			}
		}
		return nil
	})

	j := f.plan(f.planned("T-2", "w2", nil), wttest.DeadIdentity)
	j.Payload = []byte(`{"allocation_id":""}`)
	f.write(func(tx *store.Tx) error { return tx.PutJournal(&j) })
	got = f.recoverOne()
	if got.Outcome != "blocked" || got.Code != decision.InterruptedTx || !strings.Contains(got.Detail, "does not hold an allocation plan") {
		t.Errorf("a malformed plan: %+v", got)
	}
	// A journal of another operation is not allocate's to judge.
	other := j
	other.TransactionID, other.Operation = "00000000-0000-4000-8000-000000000001", "finish"
	f.write(func(tx *store.Tx) error { return tx.PutJournal(&other) })
	if out, err := f.r.Recover(f.ctx); err != nil || len(out) != 1 || out[0].TransactionID != j.TransactionID {
		t.Errorf("with another operation's journal: %+v %v", out, err)
	}
}

// TestRecoverInFlight: an allocate whose actor runs is in flight: Recover
// lists it and touches nothing; the recovery inside allocate does not
// list it.
func TestRecoverInFlight(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	b := "wt/T-1"
	j := f.plan(f.planned("T-1", "w1", &b), wttest.Self(t).Identity())
	got := f.recoverOne()
	want := Recovery{TransactionID: j.TransactionID, Path: f.path("w1"), Outcome: "in_flight", Code: decision.TransactionInFlight,
		Detail: "wt-admin pid " + strconv.Itoa(os.Getpid()) + " still runs it"}
	if got != want {
		t.Errorf("in flight:\n got %+v\nwant %+v", got, want)
	}
	res, err := f.r.Allocate(f.ctx, Request{TaskKey: "T-2", Owner: "alice", Path: f.path("w2")})
	if err != nil || len(res.Recovered) != 0 {
		t.Errorf("allocate beside one in flight: %+v %v", res, err)
	}
	if js := f.journals(); len(js) != 1 || js[0].TransactionID != j.TransactionID {
		t.Errorf("journals: %+v", js)
	}
}

// TestRecoverHalfAdded: a git worktree add that died while checking out
// (git's "initializing" lock, files not yet written) is completed and
// finished; one whose checkout holds changes blocks.
func TestRecoverHalfAdded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	if err := writeFile(filepath.Join(f.dir, "a.txt"), "a\n"); err != nil {
		t.Fatal(err)
	}
	f.git("add", "a.txt")
	f.git("commit", "-q", "-m", "a")
	f.base = f.git("rev-parse", "HEAD")

	half := func(task, name string) store.Allocation {
		b := "wt/" + task
		p := f.planned(task, name, &b)
		f.plan(p, wttest.DeadIdentity)
		f.git("worktree", "add", "-q", "-b", b, p.WorktreePath, f.base)
		f.git("worktree", "lock", "--reason", gitrepo.InitializingReason, p.WorktreePath)
		if err := os.Remove(filepath.Join(p.WorktreePath, "a.txt")); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := half("T-1", "w1")
	// The lock files of the git that died are nobody's.
	if err := os.WriteFile(filepath.Join(gitrepo.AdminDir(f.r.Git.CommonDir, "w1"), "index.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := f.recoverOne(); got.Outcome != "finished" {
		t.Fatalf("recovery: %+v", got)
	}
	if b, err := os.ReadFile(filepath.Join(p.WorktreePath, "a.txt")); err != nil || string(b) != "a\n" {
		t.Errorf("the checkout is not completed: %q %v", b, err)
	}
	if _, locked, _ := gitrepo.ReadLock(f.r.Git.CommonDir, "w1"); locked {
		t.Error("git's initializing lock is kept")
	}

	q := half("T-2", "w2")
	if err := os.WriteFile(filepath.Join(q.WorktreePath, "new.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := f.recoverOne()
	if got.Outcome != "blocked" || !strings.Contains(got.Detail, "died half-way and the checkout holds changes") {
		t.Errorf("a half-made checkout with changes: %+v", got)
	}
	if _, locked, _ := gitrepo.ReadLock(f.r.Git.CommonDir, "w2"); !locked {
		t.Error("the lock of a blocked checkout is lifted")
	}
}

// TestRecoverHalfAdmin: a git worktree add that died writing its admin
// dir (locked initializing, HEAD not written) leaves a dir git cannot list
// worktrees with: discardHalfAdmin, which recovery calls before it rolls
// the plan back (TestRecoverRolledBack), removes it, with the planned
// checkout's orphan .git file and its empty directory. An admin dir of
// another path is left alone.
func TestRecoverHalfAdmin(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	p := f.planned("T-1", "w1", nil)
	f.plan(p, wttest.DeadIdentity)
	admin := gitrepo.AdminDir(f.r.Git.CommonDir, "w1")
	for name, content := range map[string]string{
		"locked": gitrepo.InitializingReason + "\n",
		"gitdir": filepath.Join(p.WorktreePath, ".git") + "\n",
	} {
		if err := writeFile(filepath.Join(admin, name), content); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeFile(filepath.Join(p.WorktreePath, ".git"), "gitdir: "+admin+"\n"); err != nil {
		t.Fatal(err)
	}
	// Another half-made admin dir, of a path nobody planned.
	stranger := gitrepo.AdminDir(f.r.Git.CommonDir, "zz")
	if err := writeFile(filepath.Join(stranger, "locked"), gitrepo.InitializingReason); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(filepath.Join(stranger, "gitdir"), "/elsewhere/.git\n"); err != nil {
		t.Fatal(err)
	}
	if got := f.r.discardHalfAdmin(p); got != "git died writing its admin dir "+admin+", which is removed" {
		t.Errorf("discardHalfAdmin: %q", got)
	}
	for _, gone := range []string{admin, p.WorktreePath} {
		if _, err := os.Lstat(gone); !os.IsNotExist(err) {
			t.Errorf("%s is kept: %v", gone, err)
		}
	}
	if _, err := os.Stat(filepath.Join(stranger, "gitdir")); err != nil {
		t.Errorf("another path's admin dir was touched: %v", err)
	}
	if got := f.r.discardHalfAdmin(p); got != "" {
		t.Errorf("nothing left to discard: %q", got)
	}
}

// TestRemoveOrphanDotGit: the .git file alone in a directory goes when it
// is empty or names an admin dir of the repository that does not exist;
// never one that names an existing admin dir, another repository's, or
// one beside other files.
func TestRemoveOrphanDotGit(t *testing.T) {
	t.Parallel()
	common := t.TempDir()
	if err := os.MkdirAll(filepath.Join(common, "worktrees", "live"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		dotgit  string
		other   bool
		removed bool
	}{
		{"empty", "", false, true},
		{"naming a missing admin dir", "gitdir: " + filepath.Join(common, "worktrees", "gone"), false, true},
		{"naming an existing admin dir", "gitdir: " + filepath.Join(common, "worktrees", "live"), false, false},
		{"naming another repository", "gitdir: /elsewhere/.git/worktrees/x", false, false},
		{"not a gitdir file", "hello", false, false},
		{"beside another file", "", true, false},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ".git"), []byte(c.dotgit), 0o644); err != nil {
			t.Fatal(err)
		}
		if c.other {
			if err := os.WriteFile(filepath.Join(dir, "work"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		removeOrphanDotGit(common, dir)
		_, err := os.Lstat(filepath.Join(dir, ".git"))
		if removed := os.IsNotExist(err); removed != c.removed {
			t.Errorf("%s: removed %v, want %v", c.name, removed, c.removed)
		}
	}
	nowhere := filepath.Join(common, "nowhere")
	removeOrphanDotGit(common, nowhere) // no directory: nothing to do
	if _, err := os.Lstat(nowhere); !os.IsNotExist(err) {
		t.Errorf("a directory that was not there: %v", err)
	}
}
