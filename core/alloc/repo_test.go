package alloc

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wttest"
)

// TestResolve: a governed worktree resolves to its allocation and
// registration, from its top level and by its path once its checkout is
// gone; the canonical checkout, a plain directory, a worktree wt does not
// govern and a path that names nothing are UNREGISTERED_WORKTREE, each
// with its hint.
func TestResolve(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.allocate("T-1", "alice", "w1")
	gone := f.allocate("T-2", "alice", "w2")
	f.git("worktree", "add", "-q", "-b", "manual", f.path("manual"))
	gittest.Git(t, f.top, "init", "-q", f.path("other"))
	if err := os.Mkdir(f.path("plain"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(gone.WorktreePath); err != nil {
		t.Fatal(err)
	}

	var got, gotGone Target
	errs := map[string]error{}
	f.write(func(tx *store.Tx) error {
		var err error
		if got, err = f.r.Resolve(tx, a.WorktreePath); err != nil {
			return err
		}
		if gotGone, err = f.r.Resolve(tx, gone.WorktreePath); err != nil {
			return err
		}
		for _, p := range []string{f.dir, f.path("plain"), f.path("manual"), f.path("nowhere"), f.path("other")} {
			_, errs[p] = f.r.Resolve(tx, p)
		}
		return nil
	})
	if got.Path != a.WorktreePath || got.Key != "w1" || got.Allocation.AllocationID != a.AllocationID ||
		got.Registration.AllocationID != a.AllocationID || got.Registration.WorktreeKey != "w1" {
		t.Errorf("Resolve: %+v", got)
	}
	if gotGone.Key != "w2" || gotGone.Allocation.AllocationID != gone.AllocationID {
		t.Errorf("Resolve of a gone checkout: %+v", gotGone)
	}
	for p, hint := range map[string]string{
		f.dir:             "allocate a worktree with wt-admin allocate --task KEY --owner NAME PATH",
		f.path("plain"):   "list the governed worktrees with wt-admin status",
		f.path("nowhere"): "list the governed worktrees with wt-admin status",
		f.path("other"):   "pass --repo naming a checkout of the repository that owns it",
		f.path("manual"):  "bring it under wt as a task's worktree, its branch kept: wt-admin --repo " + f.path("manual") + " adopt " + f.path("manual") + " --task KEY --owner NAME (a dry run; then --apply PLAN_ID)",
	} {
		d, ok := decision.As(errs[p])
		if !ok || d.Code != decision.UnregisteredWorktree || d.Hint != hint {
			t.Errorf("%s: %+v", p, errs[p])
		}
	}
}

// TestResolveRecords: a binding counts only with its registration's
// document and marker naming the same allocation, and with its
// allocation's record; RegisteredAllocation and AwaitingBackfill read
// the same records.
func TestResolveRecords(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.allocate("T-1", "alice", "w1")
	resolve := func() error {
		return f.r.Store.Write(func(tx *store.Tx) error { _, err := f.r.Resolve(tx, a.WorktreePath); return err })
	}
	registered := func() (got *store.Allocation, id string, awaiting bool) {
		f.write(func(tx *store.Tx) (err error) {
			if got, err = f.r.RegisteredAllocation(tx, "w1"); err != nil {
				return err
			}
			id, awaiting, err = AwaitingBackfill(tx, "w1")
			return err
		})
		return
	}
	if got, _, awaiting := registered(); got == nil || got.AllocationID != a.AllocationID || awaiting {
		t.Fatalf("registered: %+v %v", got, awaiting)
	}

	// The marker in git's admin dir no longer matches.
	marker := filepath.Join(gitrepo.AdminDir(f.r.Git.CommonDir, "w1"), "wt-registration")
	saved, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	err = resolve()
	wttest.WantCode(t, err, decision.UnregisteredWorktree)
	if !strings.Contains(err.Error(), "its registration marker does not match") {
		t.Errorf("message: %v", err)
	}
	if got, _, awaiting := registered(); got != nil || awaiting {
		t.Errorf("with no marker: %+v %v", got, awaiting)
	}
	if err := os.WriteFile(marker, saved, 0o644); err != nil {
		t.Fatal(err)
	}

	// No registration document: awaiting backfill.
	f.write(func(tx *store.Tx) error { return tx.RemoveRegistration("w1") })
	if got, id, awaiting := registered(); got != nil || id != a.AllocationID || !awaiting {
		t.Errorf("with no registration: %+v %q %v", got, id, awaiting)
	}
	wttest.WantCode(t, resolve(), decision.UnregisteredWorktree)

	// The binding names an allocation with no record.
	f.write(func(tx *store.Tx) error {
		return tx.PutRegistration(&store.Registration{RegistrationID: "r2", WorktreeKey: "w1", WorktreePath: a.WorktreePath,
			AllocationID: a.AllocationID, CreatedAt: store.Now()})
	})
	if err := os.Remove(filepath.Join(f.r.Store.Root(), "allocations", a.AllocationID+".json")); err != nil {
		t.Fatal(err)
	}
	wttest.WantCode(t, resolve(), decision.InvalidMetadata)
	if got, _, _ := registered(); got != nil {
		t.Errorf("with no record: %+v", got)
	}

	// No binding at all.
	f.write(func(tx *store.Tx) error { return tx.RemoveBinding("w1") })
	wttest.WantCode(t, resolve(), decision.UnregisteredWorktree)
	if got, id, awaiting := registered(); got != nil || id != "" || awaiting {
		t.Errorf("with no binding: %+v %q %v", got, id, awaiting)
	}
}

// TestResolveCheckout: the canonical checkout resolves to the canonical
// pseudo-allocation; a linked one as Resolve does, through a store opened
// from the checkout's paths alone.
func TestResolveCheckout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.allocate("T-1", "alice", "w1")
	main, err := gitrepo.Locate(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	linked, err := gitrepo.Locate(a.WorktreePath)
	if err != nil {
		t.Fatal(err)
	}
	r, err := OpenCheckout(linked)
	if err != nil {
		t.Fatal(err)
	}
	if r.Git.CommonDir != f.r.Git.CommonDir || r.Git.TopLevel != a.WorktreePath || r.Store.Root() != f.r.Store.Root() {
		t.Errorf("OpenCheckout: %+v", r.Git)
	}
	var canon, got Target
	if err := r.Store.Read(func(tx *store.Tx) error {
		if canon, err = r.ResolveCheckout(tx, main); err != nil {
			return err
		}
		got, err = r.ResolveCheckout(tx, linked)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	want := Target{Path: f.dir, Key: gitrepo.MainKey, Allocation: store.Allocation{Role: store.RoleCanonical,
		WorktreePath: f.dir, WorktreeKey: gitrepo.MainKey, Lifecycle: store.Active}}
	if !reflect.DeepEqual(canon, want) {
		t.Errorf("canonical:\n got %+v\nwant %+v", canon, want)
	}
	if got.Allocation.AllocationID != a.AllocationID || got.Key != "w1" {
		t.Errorf("linked: %+v", got)
	}
	if _, err := OpenCheckout(gitrepo.Checkout{CommonDir: filepath.Join(f.top, "nowhere")}); err == nil {
		t.Error("OpenCheckout of no store: no error")
	}
}

// TestLogEvent: an event names its allocation when given one, and this
// process as its actor.
func TestLogEvent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	f.write(func(tx *store.Tx) error {
		if err := tx.LogEvent("one", "a1", map[string]any{"k": "v"}); err != nil {
			return err
		}
		return tx.LogEvent("two", "", nil)
	})
	ev := f.events()
	one, two := ev[len(ev)-2], ev[len(ev)-1]
	if one.Event != "one" || one.AllocationID == nil || *one.AllocationID != "a1" || one.Detail["k"] != "v" || one.Actor.PID != os.Getpid() {
		t.Errorf("one: %+v", one)
	}
	if two.Event != "two" || two.AllocationID != nil {
		t.Errorf("two: %+v", two)
	}
}

// TestOpenOutsideRepository: a directory outside any repository is
// NOT_A_GIT_REPOSITORY.
func TestOpenOutsideRepository(t *testing.T) {
	t.Parallel()
	_, err := Open(context.Background(), gittest.Outside(t))
	wttest.WantCode(t, err, decision.NotAGitRepository)
}
