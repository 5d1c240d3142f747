package alloc

import (
	"encoding/json"
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

// TestAllocate: a feature allocation gets a worktree on a new branch
// wt/<task> at the publication branch's tip, its record, binding,
// registration (document and marker), the branch index and the ledger's
// birth, one event, and a receipt in place of its journal.
func TestAllocate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	res, err := f.r.Allocate(f.ctx, Request{TaskKey: "T-1", Owner: "alice", Path: f.path("w1")})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Allocation
	if res.Code != decision.Allocated || len(res.Recovered) != 0 {
		t.Errorf("result: %+v", res)
	}
	if a.AllocationID == "" || a.TaskKey != "T-1" || a.Owner != "alice" || a.Role != store.RoleFeature ||
		a.Lifecycle != store.Active || a.WorktreePath != f.path("w1") || a.WorktreeKey != "w1" ||
		a.Branch == nil || *a.Branch != "wt/T-1" || a.BaseCommit != f.base {
		t.Errorf("allocation: %+v", a)
	}
	if got := gittest.Git(t, f.path("w1"), "symbolic-ref", "HEAD"); got != "refs/heads/wt/T-1" {
		t.Errorf("worktree HEAD: %s", got)
	}
	var b store.Allocation
	f.write(func(tx *store.Tx) error {
		bind, ok, err := tx.Binding("w1")
		if err != nil || !ok || bind.AllocationID != a.AllocationID {
			t.Errorf("binding: %+v %v %v", bind, ok, err)
		}
		reg, ok, err := tx.Registered("w1")
		if err != nil || !ok || reg.AllocationID != a.AllocationID || reg.WorktreePath != a.WorktreePath {
			t.Errorf("registration: %+v %v %v", reg, ok, err)
		}
		b, ok, err = tx.BranchAllocation("refs/heads/wt/T-1")
		if err != nil || !ok {
			t.Errorf("branch index: %v %v", ok, err)
		}
		rs, err := tx.Receipts()
		if err != nil || len(rs) != 1 || rs[0].Outcome != "allocated" || rs[0].Target != a.WorktreePath {
			t.Errorf("receipts: %+v %v", rs, err)
		}
		return nil
	})
	if b.AllocationID != a.AllocationID {
		t.Errorf("the branch index names %s", b.AllocationID)
	}
	if js := f.journals(); len(js) != 0 {
		t.Errorf("journals left: %+v", js)
	}
	led, err := store.ReadLedger(f.r.Store.Root(), a.AllocationID, "refs/heads/wt/T-1")
	if err != nil || len(led.Lines) != 1 || led.Lines[0].Via != store.ViaAllocate || led.Lines[0].New != f.base {
		t.Errorf("ledger: %+v %v", led, err)
	}
	ev := f.events()
	last := ev[len(ev)-1]
	if last.Event != "allocated" || last.AllocationID == nil || *last.AllocationID != a.AllocationID ||
		last.Detail["task_key"] != "T-1" || last.Detail["worktree_key"] != "w1" || last.Detail["base_commit"] != f.base {
		t.Errorf("event: %+v", last)
	}
	// ledgerBirth run again (recovery's finish) adds nothing.
	f.r.ledgerBirth(a)
	if led, _ := store.ReadLedger(f.r.Store.Root(), a.AllocationID, "refs/heads/wt/T-1"); len(led.Lines) != 1 {
		t.Errorf("a second birth: %+v", led.Lines)
	}
	got, err := f.r.TaskAllocation("T-1")
	if err != nil || got == nil || got.AllocationID != a.AllocationID {
		t.Errorf("TaskAllocation: %+v %v", got, err)
	}
	if got, err := f.r.TaskAllocation("T-2"); err != nil || got != nil {
		t.Errorf("TaskAllocation of no task: %+v %v", got, err)
	}
}

// TestAllocateShapes: an audit worktree is detached at its base and has
// no branch; a branch and a base can be named; the task-dir layout puts
// the default branch under the task's own ref directory.
func TestAllocateShapes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	f.git("commit", "-q", "--allow-empty", "-m", "two")
	tip := f.git("rev-parse", "HEAD")

	audit, err := f.r.Allocate(f.ctx, Request{TaskKey: "A-1", Owner: "bob", Role: store.RoleAudit, Path: f.path("audit")})
	if err != nil {
		t.Fatal(err)
	}
	if a := audit.Allocation; a.Branch != nil || a.Role != store.RoleAudit || a.BaseCommit != tip || GateOf(a) != GateReadOnly {
		t.Errorf("audit: %+v", a)
	}
	if got := gittest.Git(t, f.path("audit"), "rev-parse", "HEAD"); got != tip {
		t.Errorf("audit HEAD: %s", got)
	}
	if store.HasLedger(f.r.Store.Root(), audit.Allocation.AllocationID) {
		t.Error("an audit (no branch) got a ledger")
	}

	named, err := f.r.Allocate(f.ctx, Request{TaskKey: "T-1", Owner: "bob", Branch: "topic/one", Base: "HEAD~1", Path: f.path("named")})
	if err != nil {
		t.Fatal(err)
	}
	if a := named.Allocation; *a.Branch != "topic/one" || a.BaseCommit != f.base {
		t.Errorf("named: %+v", a)
	}

	f.setPolicy(policy.Change{BranchLayout: ptr(store.LayoutTaskDir)})
	dir, err := f.r.Allocate(f.ctx, Request{TaskKey: "T-2", Owner: "bob", Path: f.path("dir")})
	if err != nil {
		t.Fatal(err)
	}
	if a := dir.Allocation; *a.Branch != "wt/T-2/work" {
		t.Errorf("task-dir layout: %+v", a)
	}
}

// TestAllocateRefusals: each malformed or conflicting request is refused
// with its code before anything is made: no record, no worktree, no
// journal.
func TestAllocateRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	first := f.allocate("T-1", "alice", "w1")
	f.git("branch", "taken")
	if err := os.Mkdir(f.path("exists"), 0o755); err != nil {
		t.Fatal(err)
	}
	req := func(task, path string) Request { return Request{TaskKey: task, Owner: "alice", Path: f.path(path)} }
	for _, c := range []struct {
		name string
		req  Request
		want string
	}{
		{"a bad role", Request{TaskKey: "T-2", Owner: "alice", Role: "boss", Path: f.path("x")}, decision.InvalidRole},
		{"a bad task key", req("-T", "x"), decision.InvalidTaskKey},
		{"a bad owner", Request{TaskKey: "T-2", Owner: "al ice", Path: f.path("x")}, decision.InvalidOwner},
		{"no path", Request{TaskKey: "T-2", Owner: "alice"}, decision.Usage},
		{"a path with a newline", req("T-2", "x\ny"), decision.Usage},
		{"a branch with an escape", Request{TaskKey: "T-2", Owner: "alice", Branch: "b\x1b", Path: f.path("x")}, decision.Usage},
		{"a path that exists", req("T-2", "exists"), decision.PathExists},
		{"a branch for an audit", Request{TaskKey: "A-2", Owner: "alice", Role: store.RoleAudit, Branch: "b", Path: f.path("x")}, decision.InvalidBranch},
		{"a bad branch name", Request{TaskKey: "T-2", Owner: "alice", Branch: "a..b", Path: f.path("x")}, decision.InvalidBranch},
		{"a task key whose branch is no ref name", req("T..2", "x"), decision.InvalidBranch},
		{"a base that names nothing", Request{TaskKey: "T-2", Owner: "alice", Base: "refs/heads/nope", Path: f.path("x")}, decision.InvalidBase},
		{"the task in use", req("T-1", "x"), decision.TaskKeyInUse},
		{"a key close to a live task's", req("t-01", "x"), decision.TaskKeySimilar},
		{"an existing branch", Request{TaskKey: "T-2", Owner: "alice", Branch: "taken", Path: f.path("x")}, decision.BranchExists},
		{"the publication branch", Request{TaskKey: "T-2", Owner: "alice", Branch: "main", Path: f.path("x")}, decision.BranchExists},
		{"another task's branch", Request{TaskKey: "T-2", Owner: "alice", Branch: "wt/T-1", Path: f.path("x")}, decision.BranchExists},
	} {
		_, err := f.r.Allocate(f.ctx, c.req)
		if got := decision.CodeOf(err); got != c.want {
			t.Errorf("%s: got %q (%v), want %s", c.name, got, err, c.want)
		}
	}
	_, err := f.r.Allocate(f.ctx, req("T-1", "x"))
	if fact(err, "allocation_id") != first.AllocationID {
		t.Errorf("TASK_KEY_IN_USE names %v", fact(err, "allocation_id"))
	}
	if d, _ := decision.As(err); d.Hint != "work in "+first.WorktreePath+", or choose another task key" {
		t.Errorf("hint: %q", d.Hint)
	}
	_, err = f.r.Allocate(f.ctx, req("t-01", "x"))
	if fact(err, "similar_task") != "T-1" {
		t.Errorf("TASK_KEY_SIMILAR names %v", fact(err, "similar_task"))
	}
	if _, err := os.Lstat(f.path("x")); !os.IsNotExist(err) {
		t.Errorf("a refused allocate made its path: %v", err)
	}
	if all := f.allocations(); len(all) != 1 {
		t.Errorf("records after refusals: %+v", all)
	}
	if js := f.journals(); len(js) != 0 {
		t.Errorf("journals after refusals: %+v", js)
	}
	// Meant as a new task, the close key is allocated.
	if _, err := f.r.Allocate(f.ctx, Request{TaskKey: "t-01", Owner: "alice", Path: f.path("x"), NewTask: true}); err != nil {
		t.Errorf("--new-task: %v", err)
	}
}

// TestAllocateBudget: ACTIVE allocations other than integration count
// against max-active; RETAINED ones and an integration worktree do not.
func TestAllocateBudget(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{MaxActive: ptr("1")})
	if _, err := f.r.Allocate(f.ctx, Request{TaskKey: "I-1", Owner: "lander", Role: store.RoleIntegration, Path: f.path("int")}); err != nil {
		t.Fatal(err)
	}
	a := f.allocate("T-1", "alice", "w1")
	_, err := f.r.Allocate(f.ctx, Request{TaskKey: "T-2", Owner: "alice", Path: f.path("w2")})
	wttest.WantCode(t, err, decision.BudgetExhausted)
	if got := fact(err, "holders"); !reflect.DeepEqual(got, []string{a.AllocationID + " (task T-1)"}) {
		t.Errorf("holders: %v", got)
	}
	if d, _ := decision.As(err); d.Message != "1 active allocation of max 1: "+a.AllocationID+" (task T-1)" {
		t.Errorf("message: %q", d.Message)
	}
	if _, err := f.r.Retain(f.ctx, a.WorktreePath, "alice", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Allocate(f.ctx, Request{TaskKey: "T-2", Owner: "alice", Path: f.path("w2")}); err != nil {
		t.Errorf("with T-1 retained: %v", err)
	}
	// T-1 retained still holds its key, with the resume as the way back.
	_, err = f.r.Allocate(f.ctx, Request{TaskKey: "T-1", Owner: "alice", Path: f.path("w3")})
	wttest.WantCode(t, err, decision.TaskKeyInUse)
	if d, _ := decision.As(err); !strings.HasPrefix(d.Hint, "resume it with wt-admin resume "+a.WorktreePath+" --owner alice") {
		t.Errorf("hint: %q", d.Hint)
	}
}

// TestAllocateIntegrationOverBudget: the integration worktree takes no
// share of the budget (checkTaskAndBudget), and is allocated while the
// features fill it: wt-admin land makes its integration worktree when
// max-active is reached (it was refused BUDGET_EXHAUSTED), and a feature
// is still refused.
func TestAllocateIntegrationOverBudget(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{MaxActive: ptr("1")})
	f.allocate("T-1", "alice", "w1")
	if _, err := f.r.Allocate(f.ctx, Request{TaskKey: "I-1", Owner: "lander", Role: store.RoleIntegration, Path: f.path("int"), NewTask: true}); err != nil {
		t.Errorf("an integration worktree with the budget full: %v", err)
	}
	_, err := f.r.Allocate(f.ctx, Request{TaskKey: "T-2", Owner: "alice", Path: f.path("w2")})
	wttest.WantCode(t, err, decision.BudgetExhausted)
}

// TestAllocatePending: an allocate in flight (its journal's actor live)
// holds its task key, its branch and its share of the budget.
func TestAllocatePending(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{MaxActive: ptr("1")})
	b := "wt/P-1"
	f.plan(f.planned("P-1", "p1", &b), wttest.Self(t).Identity())
	_, err := f.r.Allocate(f.ctx, Request{TaskKey: "P-1", Owner: "alice", Path: f.path("x")})
	wttest.WantCode(t, err, decision.TaskKeyInUse)
	_, err = f.r.Allocate(f.ctx, Request{TaskKey: "T-2", Owner: "alice", Path: f.path("x")})
	wttest.WantCode(t, err, decision.BudgetExhausted)
	f.setPolicy(policy.Change{MaxActive: ptr("unlimited")})
	_, err = f.r.Allocate(f.ctx, Request{TaskKey: "T-2", Owner: "alice", Branch: b, Path: f.path("x")})
	wttest.WantCode(t, err, decision.BranchExists)
	if d, _ := decision.As(err); d.Message != "branch wt/P-1 already exists: task P-1's" {
		t.Errorf("message: %q", d.Message)
	}
	if _, err := f.r.Allocate(f.ctx, Request{TaskKey: "T-2", Owner: "alice", Path: f.path("x")}); err != nil {
		t.Errorf("another task and branch: %v", err)
	}
	// The live allocate's journal is kept.
	if js := f.journals(); len(js) != 1 || js[0].Target != f.path("p1") {
		t.Errorf("journals: %+v", js)
	}
}

// TestAllocateGitFails: when git worktree add fails after the plan, the
// plan is undone (its receipt says failed) and GIT_FAILED names git's
// complaint.
func TestAllocateGitFails(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	// git cannot make the new worktree's admin dir where a file stands.
	if err := os.WriteFile(filepath.Join(f.r.Git.CommonDir, "worktrees"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := f.r.Allocate(f.ctx, Request{TaskKey: "T-1", Owner: "alice", Path: f.path("w1")})
	wttest.WantCode(t, err, decision.GitFailed)
	if all := f.allocations(); len(all) != 0 {
		t.Errorf("records: %+v", all)
	}
	if js := f.journals(); len(js) != 0 {
		t.Errorf("journals: %+v", js)
	}
	f.write(func(tx *store.Tx) error {
		rs, err := tx.Receipts()
		if err != nil || len(rs) != 1 || rs[0].Outcome != "failed" {
			t.Errorf("receipts: %+v %v", rs, err)
		}
		return nil
	})
}

// TestAllocateMissingPolicy: a store without policy.json is
// INVALID_METADATA, not the zero policy.
func TestAllocateMissingPolicy(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	if err := os.Remove(filepath.Join(f.r.Store.Root(), "policy.json")); err != nil {
		t.Fatal(err)
	}
	_, err := f.r.Allocate(f.ctx, Request{TaskKey: "T-1", Owner: "alice", Base: "main", Path: f.path("w1")})
	wttest.WantCode(t, err, decision.InvalidMetadata)
}

// TestPlannedOf: a journal whose payload is not a plan for its target
// is INVALID_METADATA.
func TestPlannedOf(t *testing.T) {
	t.Parallel()
	good := store.Allocation{AllocationID: "a1", WorktreePath: "/w"}
	payload, _ := json.Marshal(good)
	for name, j := range map[string]store.Journal{
		"not JSON":       {TransactionID: "x", Target: "/w", Payload: json.RawMessage(`{`)},
		"an unknown key": {TransactionID: "x", Target: "/w", Payload: json.RawMessage(`{"allocation_id":"a1","worktree_path":"/w","extra":1}`)},
		"no id":          {TransactionID: "x", Target: "/w", Payload: json.RawMessage(`{"worktree_path":"/w"}`)},
		"another target": {TransactionID: "x", Target: "/v", Payload: payload},
	} {
		if _, err := plannedOf(nil, j); decision.CodeOf(err) != decision.InvalidMetadata {
			t.Errorf("%s: %v", name, err)
		}
	}
	a, err := plannedOf(nil, store.Journal{TransactionID: "x", Target: "/w", Payload: payload})
	if err != nil || a.AllocationID != "a1" {
		t.Errorf("a plan: %+v %v", a, err)
	}
}

// keyOf is the admin dir name git gave the worktree at path.
func keyOf(t *testing.T, commonDir, path string) string {
	t.Helper()
	key, ok := gitrepo.KeyOfCheckout(commonDir, path)
	if !ok {
		t.Fatalf("%s is no checkout", path)
	}
	return key
}
