package maint

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// unregister makes the binding of worktree key one written before
// registrations existed: no registration document, no marker.
func (f *fixture) unregister(key string) {
	f.t.Helper()
	f.write(func(tx *store.Tx) error { return tx.RemoveRegistration(key) })
}

// TestBackfill: bindings without a registration are registered only when
// the live evidence proves them; every other one is refused with exactly
// the blockers that apply; apply writes the plan it was given, once.
func TestBackfill(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	allocs := map[string]store.Allocation{}
	for _, k := range []string{"w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8", "w9"} {
		allocs[k] = f.allocate("T-"+k, "alice", "", k, "")
	}
	res, err := Backfill(f.ctx, f.r, "")
	if err != nil || res.Code != decision.BackfillNothing || res.AlreadyRegistered != 9 || len(res.Candidates)+len(res.Refused) != 0 {
		t.Fatalf("all registered: %+v %v", res, err)
	}
	admin := func(k string) string { return gitrepo.AdminDir(f.r.Git.CommonDir, k) }
	// w9: its marker names its own allocation (a registration cut short
	// between its two files): a candidate, written again.
	if err := os.Remove(filepath.Join(f.r.Store.Root(), "registrations", "w9.json")); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"w1", "w2", "w3", "w4", "w5", "w6", "w7"} {
		f.unregister(k)
	}
	// Each allocation's admin dir dates from the instant its record was
	// made, whatever time passed between the two here (the window is a
	// rule of the code, not of this machine's speed).
	for _, k := range []string{"w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8", "w9"} {
		at, err := time.Parse(time.RFC3339Nano, allocs[k].CreatedAt)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(admin(k), "commondir"), at, at); err != nil {
			t.Fatal(err)
		}
	}
	// w2: git registered it long after its allocation was made.
	future := time.Now().Add(100 * 365 * 24 * time.Hour)
	if err := os.Chtimes(filepath.Join(admin("w2"), "commondir"), future, future); err != nil {
		t.Fatal(err)
	}
	// w3: its admin dir points at another checkout.
	if err := os.MkdirAll(f.path("other3"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.path("other3/.git"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(admin("w3"), "gitdir"), []byte(f.path("other3")+"/.git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// w4: a stale marker, w8's.
	marker, err := os.ReadFile(filepath.Join(admin("w8"), store.MarkerName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(admin("w4"), store.MarkerName), marker, 0o644); err != nil {
		t.Fatal(err)
	}
	// w5: its checkout is gone.
	if err := os.RemoveAll(f.path("w5")); err != nil {
		t.Fatal(err)
	}
	// w6: its HEAD does not descend from its base.
	f.git(f.path("w6"), "checkout", "-q", "--orphan", "orphan6")
	f.commit(f.path("w6"), "orphan")
	// w7: its allocation record is gone.
	if err := os.Remove(filepath.Join(f.r.Store.Root(), "allocations", allocs["w7"].AllocationID+".json")); err != nil {
		t.Fatal(err)
	}
	// w1 moves on from its base: still a candidate.
	f.commit(f.path("w1"), "work")

	res, err = Backfill(f.ctx, f.r, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Code != decision.BackfillReady || !res.DryRun || res.AlreadyRegistered != 1 || res.Contract != BackfillContract {
		t.Fatalf("dry run: %+v", res)
	}
	var cands []string
	for _, c := range res.Candidates {
		cands = append(cands, c.WorktreeKey)
		if c.AllocationID != allocs[c.WorktreeKey].AllocationID || c.Path != f.path(c.WorktreeKey) || c.RegisteredAtNS == nil ||
			c.AdminDir != "worktrees/"+c.WorktreeKey || c.Branch != "wt/T-"+c.WorktreeKey {
			t.Errorf("candidate evidence: %+v", c)
		}
	}
	slices.Sort(cands)
	if !slices.Equal(cands, []string{"w1", "w9"}) {
		t.Errorf("candidates %v, want w1 w9", cands)
	}
	want := map[string][]string{
		"w2": {decision.RegistrationNewer},
		"w3": {decision.GitPointerMismatch},
		"w4": {decision.StaleRegistrationMarker},
		"w5": {decision.CheckoutMissing},
		"w6": {decision.BaseNotInHistory},
		"w7": {decision.RecordMissing},
	}
	if len(res.Refused) != len(want) {
		t.Errorf("refused %+v", res.Refused)
	}
	for _, r := range res.Refused {
		if !slices.Equal(r.Blockers, want[r.WorktreeKey]) {
			t.Errorf("%s: blockers %v, want %v", r.WorktreeKey, r.Blockers, want[r.WorktreeKey])
		}
	}

	// Apply: a malformed id, then another plan's id, write nothing.
	_, err = Backfill(f.ctx, f.r, "abc")
	wttest.WantCode(t, err, decision.Usage)
	_, err = Backfill(f.ctx, f.r, strings.Repeat("0", 64))
	wttest.WantCode(t, err, decision.ResourcePlanMismatch)
	if d, _ := decision.As(err); d.Facts["plan_id"] != res.PlanID {
		t.Errorf("the refusal does not give the plan id: %+v", d.Facts)
	}
	if _, reg := f.registered("w1"); reg {
		t.Fatal("a refused apply registered w1")
	}
	done, err := Backfill(f.ctx, f.r, res.PlanID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Code != decision.Backfilled || done.Written != 2 || done.DryRun {
		t.Fatalf("apply: %+v", done)
	}
	for _, k := range []string{"w1", "w9"} {
		if bound, reg := f.registered(k); !bound || !reg {
			t.Errorf("%s: bound %t, registered %t", k, bound, reg)
		}
	}
	for k := range want {
		if _, reg := f.registered(k); reg {
			t.Errorf("refused %s was registered", k)
		}
	}
	again, err := Backfill(f.ctx, f.r, "")
	if err != nil || again.Code != decision.BackfillNothing || len(again.Candidates) != 0 || again.AlreadyRegistered != 3 {
		t.Fatalf("after apply: %+v %v", again, err)
	}
	// The same plan id again: the plan changed (no candidates), so it is refused.
	_, err = Backfill(f.ctx, f.r, res.PlanID)
	wttest.WantCode(t, err, decision.ResourcePlanMismatch)
	// Applying the empty plan writes nothing.
	if none, err := Backfill(f.ctx, f.r, again.PlanID); err != nil || none.Code != decision.BackfillNothing || none.Written != 0 {
		t.Fatalf("the empty plan: %+v %v", none, err)
	}
}

// TestEvaluateBlockers: every blocker that applies is listed, not the
// first one only.
func TestEvaluateBlockers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.allocate("T-1", "alice", "", "w1", "")
	facts := &gitFacts{ctx: f.ctx, r: f.r, ancestor: map[[2]string]bool{}}
	item := gitrepo.Worktree{Key: "w1", Path: f.path("w1"), Head: a.BaseCommit, Branch: "wt/T-1"}
	if blockers, _ := evaluate(facts, item, a); len(blockers) != 0 {
		t.Fatalf("a sound binding: %v", blockers)
	}
	gone := item
	gone.Key, gone.Path, gone.Head, gone.Prunable = "nokey", f.path("nowhere"), "", true
	bad := a
	bad.CreatedAt = "yesterday"
	blockers, ev := evaluate(facts, gone, bad)
	want := []string{decision.AdminDirUnavailable, decision.CheckoutMissing, decision.GitPointerMismatch,
		decision.RegistrationTimeUnknown, decision.HeadUnresolved}
	if !slices.Equal(blockers, want) || ev.RegisteredAtNS != nil {
		t.Fatalf("blockers %v, want %v (%+v)", blockers, want, ev)
	}
	// Offline, a question not asked before counts against the candidate.
	moved := item
	moved.Head = f.commit(f.path("w1"), "work")
	facts.offline = true
	if blockers, _ := evaluate(facts, moved, a); !slices.Equal(blockers, []string{decision.BaseNotInHistory}) {
		t.Fatalf("offline: %v", blockers)
	}
	if _, err := facts.inventory(); decision.CodeOf(err) != decision.Internal {
		t.Fatalf("an offline inventory: %v", err)
	}
}
