package hooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wttest"
)

// TestEntitledUngoverned: a repository without a wt store is not governed,
// and anything may be written there.
func TestEntitledUngoverned(t *testing.T) {
	t.Parallel()
	_, dir, _ := gittest.Repo(t)
	v, err := Entitled(dir, me)
	wantVerdict(t, v, err, decision.Unmanaged, true)
	if v.Reason != "the repository is not governed by wt" {
		t.Errorf("reason %q", v.Reason)
	}
	if _, err := Entitled(gittest.Outside(t), me); decision.CodeOf(err) != decision.NotAGitRepository {
		t.Errorf("outside any repository: %v", err)
	}
}

// TestEntitledLease walks the lease rules of a feature worktree, in the
// order the gate applies them.
func TestEntitledLease(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	wt := a.WorktreePath
	entitled := func(pid int) (Verdict, error) { return Entitled(wt, pid) }

	v, err := entitled(me)
	wantVerdict(t, v, err, decision.WriterLeaseRequired, false)
	if v.Role != store.RoleFeature || v.TaskKey != "T-1" || v.AllocationID != a.AllocationID || v.Path != wt || v.Branch != "wt/T-1" || !v.own {
		t.Errorf("facts of the verdict: %+v", v)
	}
	if !strings.Contains(v.Refusal.Hint, "wt-exec -C "+wt+" -- git commit") {
		t.Errorf("hint %q", v.Refusal.Hint)
	}

	// The holder is this process: it and what it starts are entitled.
	l := f.Lease(a, wttest.Self(t), nil)
	v, err = entitled(me)
	wantVerdict(t, v, err, decision.Entitled, true)
	if v.Lease == nil || v.Lease.LeaseID != l.LeaseID {
		t.Errorf("the verdict's lease: %+v", v.Lease)
	}
	// A process that does not descend from the live holder.
	v, err = entitled(other)
	wantVerdict(t, v, err, decision.WriterLeaseHeld, false)
	if h, ok := v.Refusal.Facts["holder"].(proc.Holder); !ok || h != l.Holder {
		t.Errorf("holder fact: %+v", v.Refusal.Facts)
	}

	// A holder that is gone (another boot's) entitles nobody.
	f.Lease(a, wttest.DeadHolder, nil)
	v, err = entitled(me)
	wantVerdict(t, v, err, decision.WriterLeaseRequired, false)
	if !strings.Contains(v.Reason, "has exited") || !strings.Contains(v.Refusal.Hint, "wt-admin lease adopt") {
		t.Errorf("a dead holder: %q / %q", v.Reason, v.Refusal.Hint)
	}

	// An expired lease, even of a live holder.
	f.Lease(a, wttest.Self(t), func(l *store.Lease) { l.ExpiresAt = ptr("2020-01-01T00:00:00Z") })
	v, err = entitled(me)
	wantVerdict(t, v, err, decision.WriterLeaseExpired, false)
	// An expiry in the future is no refusal.
	f.Lease(a, wttest.Self(t), func(l *store.Lease) { l.ExpiresAt = ptr("2999-01-01T00:00:00Z") })
	v, err = entitled(me)
	wantVerdict(t, v, err, decision.Entitled, true)

	// A lease that does not match its records, field by field.
	for name, change := range map[string]func(l *store.Lease){
		"owner":      func(l *store.Lease) { l.Owner = "mallory" },
		"path":       func(l *store.Lease) { l.WorktreePath = f.Path("elsewhere") },
		"repository": func(l *store.Lease) { l.RepositoryID = "01ARZ3NDEKTSV4RRFFQ69G5FAV" },
	} {
		f.Lease(a, wttest.Self(t), change)
		v, err = entitled(me)
		if err != nil || v.Code != decision.WriterLeaseMismatch || v.Allowed {
			t.Errorf("a lease of another %s: %+v %v", name, v, err)
		}
	}

	// An opaque external binding fences the writer.
	f.Lease(a, wttest.Self(t), nil)
	f.Write(func(tx *store.Tx) error {
		b := a
		b.ExternalBindings = []string{"ci:job-42"}
		return tx.PutAllocation(&b)
	})
	v, err = entitled(me)
	wantVerdict(t, v, err, decision.ExternalBinding, false)
	if !strings.Contains(v.Reason, `"ci:job-42"`) {
		t.Errorf("reason %q", v.Reason)
	}
}

// TestEntitledWarn: under policy enforcement warn a refusal is an
// allowance with a warning, the refusal kept.
func TestEntitledWarn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{Enforcement: ptr(store.EnforcementWarn)})
	a := f.Allocate("T-1", "", "t1")
	v, err := Entitled(a.WorktreePath, me)
	wantVerdict(t, v, err, decision.WriterLeaseRequired, true)
	if !v.Warning || v.Refusal == nil || v.Refusal.Code != decision.WriterLeaseRequired {
		t.Errorf("a warning: %+v", v)
	}
	f.Lease(a, wttest.Self(t), nil)
	v, err = Entitled(a.WorktreePath, me)
	wantVerdict(t, v, err, decision.Entitled, true)
	if v.Warning {
		t.Errorf("an entitled writer was warned: %+v", v)
	}
}

// TestEntitledHeadOff: a feature worktree whose HEAD left its task branch
// is refused, even to its live writer.
func TestEntitledHeadOff(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	f.Lease(a, wttest.Self(t), nil)
	gittest.Git(t, a.WorktreePath, "switch", "-q", "-c", "side")
	v, err := Entitled(a.WorktreePath, me)
	wantVerdict(t, v, err, decision.HeadOffTaskBranch, false)
	if !strings.Contains(v.Refusal.Hint, "switch wt/T-1") {
		t.Errorf("hint %q", v.Refusal.Hint)
	}
	gittest.Git(t, a.WorktreePath, "switch", "-q", "--detach")
	v, err = Entitled(a.WorktreePath, me)
	wantVerdict(t, v, err, decision.HeadOffTaskBranch, false)
	gittest.Git(t, a.WorktreePath, "switch", "-q", "wt/T-1")
	v, err = Entitled(a.WorktreePath, me)
	wantVerdict(t, v, err, decision.Entitled, true)
}

// TestEntitledRoles: the canonical checkout and unregistered worktrees are
// unmanaged (refused under policy unmanaged refuse), audit worktrees are
// read-only, an unknown role is refused; any checkout that has a guarded
// task branch checked out is judged by that task's allocation.
func TestEntitledRoles(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	feat := f.Allocate("T-1", "", "t1")
	audit := f.Allocate("R-1", store.RoleAudit, "audit")
	stray := f.Path("stray")
	f.Git("worktree", "add", "-q", "-b", "stray", stray)

	v, err := Entitled(f.Dir, me)
	wantVerdict(t, v, err, decision.Unmanaged, true)
	if v.Reason != "the canonical checkout is not a governed worktree" {
		t.Errorf("canonical: %q", v.Reason)
	}
	v, err = Entitled(stray, me)
	wantVerdict(t, v, err, decision.Unmanaged, true)
	if v.Reason != "wt does not govern this worktree" {
		t.Errorf("stray: %q", v.Reason)
	}
	v, err = Entitled(audit.WorktreePath, me)
	wantVerdict(t, v, err, decision.AuditReadOnly, false)
	if v.Role != store.RoleAudit || v.TaskKey != "R-1" {
		t.Errorf("audit: %+v", v)
	}

	// A stray checkout of the task branch is judged by its allocation.
	gittest.Git(t, stray, "checkout", "-q", "--ignore-other-worktrees", "wt/T-1")
	v, err = Entitled(stray, me)
	wantVerdict(t, v, err, decision.WriterLeaseRequired, false)
	if v.AllocationID != feat.AllocationID || !strings.HasPrefix(v.Reason, stray+" has task T-1's branch wt/T-1 checked out") || v.own {
		t.Errorf("a stray checkout of the task branch: %+v", v)
	}
	f.Lease(feat, wttest.Self(t), nil)
	v, err = Entitled(stray, me)
	wantVerdict(t, v, err, decision.Entitled, true)
	if v.own {
		t.Error("a checkout of the task's branch elsewhere counts as the task's own")
	}
	v, err = Entitled(stray, other)
	wantVerdict(t, v, err, decision.WriterLeaseHeld, false)
	gittest.Git(t, stray, "checkout", "-q", "stray")

	// The canonical checkout on the task branch, too.
	f.Git("checkout", "-q", "--ignore-other-worktrees", "wt/T-1")
	v, err = Entitled(f.Dir, other)
	wantVerdict(t, v, err, decision.WriterLeaseHeld, false)
	f.Git("checkout", "-q", "main")

	f.SetPolicy(policy.Change{Unmanaged: ptr(store.UnmanagedRefuse)})
	for _, dir := range []string{f.Dir, stray} {
		v, err = Entitled(dir, me)
		wantVerdict(t, v, err, decision.UnmanagedRefused, false)
		if !strings.HasPrefix(v.Reason, dir+": ") || !strings.Contains(v.Reason, "policy unmanaged is refuse") {
			t.Errorf("%s: %q", dir, v.Reason)
		}
	}

	// A role wt does not know is refused rather than guessed.
	f.Write(func(tx *store.Tx) error {
		b := audit
		b.Role = "janitor"
		return tx.PutAllocation(&b)
	})
	v, err = Entitled(audit.WorktreePath, me)
	if err != nil || v.Code != decision.InvalidRole || v.Allowed {
		t.Errorf("an unknown role: %+v %v", v, err)
	}
}

// TestEntitledLegacyBinding: a bound worktree whose registration was
// never written is refused to everyone (UNREGISTERED_WORKTREE).
func TestEntitledLegacyBinding(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	f.Lease(a, wttest.Self(t), nil)
	f.Write(func(tx *store.Tx) error { return tx.RemoveRegistration(a.WorktreeKey) })
	v, err := Entitled(a.WorktreePath, me)
	wantVerdict(t, v, err, decision.UnregisteredWorktree, false)
	if !strings.Contains(v.Reason, "is bound to allocation "+a.AllocationID) || !strings.Contains(v.Refusal.Hint, "wt-admin backfill") {
		t.Errorf("%q / %q", v.Reason, v.Refusal.Hint)
	}
}

// TestEntitledNoPolicy: a store without its policy is INVALID_METADATA,
// not a guess.
func TestEntitledNoPolicy(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	if err := os.Remove(filepath.Join(f.R.Store.Root(), "policy.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := Entitled(f.Dir, me); decision.CodeOf(err) != decision.InvalidMetadata {
		t.Errorf("no policy.json: %v", err)
	}
}

// TestHeadKey: the refs that name a worktree's HEAD, and whose.
func TestHeadKey(t *testing.T) {
	t.Parallel()
	c := gitrepo.Checkout{Key: "t1"}
	for ref, want := range map[string]string{
		"HEAD": "t1", "main-worktree/HEAD": gitrepo.MainKey, "worktrees/x/HEAD": "x",
		"worktrees//HEAD": "", "worktrees/a/b/HEAD": "", "worktrees/../HEAD": "", "refs/heads/HEAD": "", "worktrees/x/ORIG_HEAD": "",
	} {
		got, ok := headKey(c, ref)
		if got != want || ok != (want != "") {
			t.Errorf("headKey(%q) = %q, %v; want %q", ref, got, ok, want)
		}
	}
}
