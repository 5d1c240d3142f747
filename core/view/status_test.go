package view

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/liveness"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// TestStatusRows: every worktree git lists has a row (the canonical
// checkout first, governed ones with their allocation and gate, unmanaged
// ones), and every live allocation git no longer lists; a gone checkout and a
// missing worktree point at finish, and an awaiting binding at backfill.
func TestStatusRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	feat := f.Allocate("T-1", store.RoleFeature, "w1")
	audit := f.Allocate("A-1", store.RoleAudit, "audit")
	gone := f.Allocate("T-2", store.RoleFeature, "gone")
	missing := f.Allocate("T-3", store.RoleFeature, "missing")
	unlisted := f.Allocate("T-4", store.RoleFeature, "unlisted")
	backfill := f.Allocate("T-5", store.RoleFeature, "backfill")
	f.Git("worktree", "add", "-q", "-b", "manual", f.Path("manual"))
	if err := os.RemoveAll(missing.WorktreePath); err != nil {
		t.Fatal(err)
	}
	f.Git("worktree", "prune", "--expire=now")
	if err := os.RemoveAll(gone.WorktreePath); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(gitrepo.AdminDir(f.R.Git.CommonDir, "unlisted")); err != nil {
		t.Fatal(err)
	}
	f.Write(func(tx *store.Tx) error { return tx.RemoveRegistration("backfill") })

	res := f.status(nil)
	if res.Code != decision.StatusShown || len(res.Pending) != 0 || len(res.ReadyQueue) != 0 || res.Publication != nil ||
		res.Policy.PublicationBranch != "main" {
		t.Errorf("result: %+v", res)
	}
	if res.Rows[0].Path != f.Dir {
		t.Errorf("the canonical checkout is not first: %+v", res.Rows[0])
	}
	type short struct {
		Key, Registration, TaskKey, Role, Lifecycle, Branch, GitState, Gate string
		Managed                                                             bool
		Problems                                                            []string
	}
	shorten := func(r Row) short {
		return short{r.Key, r.Registration, r.TaskKey, r.Role, r.Lifecycle, r.Branch, r.GitState, r.Gate, r.Managed, codes(r.Problems)}
	}
	for path, want := range map[string]short{
		f.Dir:                 {".", "canonical", "", "", "", "main", "present", alloc.GateUnmanaged, false, []string{}},
		feat.WorktreePath:     {"w1", "registered", "T-1", store.RoleFeature, store.Active, "wt/T-1", "present", alloc.GateLease, true, []string{}},
		audit.WorktreePath:    {"audit", "registered", "A-1", store.RoleAudit, store.Active, "", "present", alloc.GateReadOnly, true, []string{}},
		f.Path("manual"):      {"manual", "none", "", "", "", "manual", "present", alloc.GateUnmanaged, false, []string{}},
		gone.WorktreePath:     {"gone", "registered", "T-2", store.RoleFeature, store.Active, "wt/T-2", "prunable", alloc.GateLease, true, []string{}},
		missing.WorktreePath:  {"missing", "unregistered", "T-3", store.RoleFeature, store.Active, "wt/T-3", "missing", alloc.GateLease, true, []string{decision.UnregisteredWorktree}},
		unlisted.WorktreePath: {"unlisted", "unregistered", "T-4", store.RoleFeature, store.Active, "wt/T-4", "unlisted", alloc.GateLease, true, []string{decision.UnregisteredWorktree}},
		backfill.WorktreePath: {"backfill", "unregistered", "", "", "", "wt/T-5", "present", alloc.GateLease + " (another task's branch)", false, []string{decision.WriterLeaseRequired}},
	} {
		if got := shorten(row(t, res, path)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", path, got, want)
		}
	}
	if len(res.Rows) != 8 {
		t.Errorf("%d rows", len(res.Rows))
	}
	repo := f.Dir
	wantNext := []Next{
		{backfill.WorktreePath, "binding written before registrations existed: backfill proves and registers it", "wt-admin --repo " + repo + " backfill"},
		{gone.WorktreePath, "task T-2's checkout is gone: finishing it frees the task key", "wt-admin --repo " + repo + " finish --task T-2 --owner alice"},
		{missing.WorktreePath, "task T-3 has no worktree any more: finishing it frees the task key", "wt-admin --repo " + repo + " finish --task T-3 --owner alice"},
		{unlisted.WorktreePath, "task T-4 has no worktree any more: finishing it frees the task key", "wt-admin --repo " + repo + " finish --task T-4 --owner alice"},
	}
	if !sameSet(res.Next, wantNext) {
		t.Errorf("next:\n got %+v\nwant %+v", res.Next, wantNext)
	}
	p := row(t, res, missing.WorktreePath).Problems[0]
	if p.Message != "task T-3 is ACTIVE but wt has no registered worktree for it at "+missing.WorktreePath+" (removed, or re-created by git): nobody can take its lease, and its branch stays guarded" ||
		p.Hint != "finish the task (its dry run shows what it keeps): wt-admin --repo "+repo+" finish --task T-3 --owner alice" {
		t.Errorf("missing's problem: %+v", p)
	}
}

// sameSet reports whether a and b hold the same elements, in any order.
func sameSet[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	left := map[T]int{}
	for _, x := range a {
		left[x]++
	}
	for _, x := range b {
		if left[x] == 0 {
			return false
		}
		left[x]--
	}
	return true
}

// TestStatusPrunable: a registered worktree whose checkout is gone asks
// for finish (a retained audit for prune); one whose checkout is in place
// but whose admin dir's gitdir names elsewhere is GIT_POINTER_MISMATCH.
func TestStatusPrunable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	gone := f.Allocate("T-1", store.RoleFeature, "gone")
	audit := f.Allocate("A-1", store.RoleAudit, "audit")
	moved := f.Allocate("T-2", store.RoleFeature, "moved")
	if _, err := f.R.Retain(f.Ctx, audit.WorktreePath, "alice", nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{gone.WorktreePath, audit.WorktreePath} {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	elsewhere := f.Path("elsewhere")
	if err := os.WriteFile(filepath.Join(gitrepo.AdminDir(f.R.Git.CommonDir, "moved"), "gitdir"), []byte(elsewhere+"/.git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	calls := 0
	gate := func(context.Context, gitrepo.Checkout) (string, string, string, error) {
		calls++
		return "wt", "", "", nil
	}
	res := f.status(gate)
	repo := f.Dir
	wantNext := []Next{
		{gone.WorktreePath, "task T-1's checkout is gone: finishing it frees the task key", "wt-admin --repo " + repo + " finish --task T-1 --owner alice"},
		{audit.WorktreePath, "retained audit whose checkout is gone: its registration can be pruned", "wt-admin --repo " + repo + " prune " + audit.WorktreePath + " --owner alice"},
	}
	if !sameSet(res.Next, wantNext) {
		t.Errorf("next:\n got %+v\nwant %+v", res.Next, wantNext)
	}
	if r := row(t, res, gone.WorktreePath); r.GitState != "prunable" || r.Registration != "registered" || r.TaskKey != "T-1" {
		t.Errorf("gone: %+v", r)
	}
	r := row(t, res, elsewhere)
	want := []Problem{GitdirRewritten(repo, moved, elsewhere)}
	if !reflect.DeepEqual(r.Problems, want) || r.TaskKey != "T-2" {
		t.Errorf("moved:\n got %+v\nwant %+v", r.Problems, want)
	}
	if want[0].Code != decision.GitPointerMismatch || !want[0].Alarm || want[0].Fix != "git -C "+repo+" worktree repair "+moved.WorktreePath {
		t.Errorf("GitdirRewritten: %+v", want[0])
	}
	if calls != 0 {
		t.Errorf("the gate was asked %d times about prunable worktrees", calls)
	}
}

// TestStatusGate: with a gate check, a governed feature worktree whose
// commits meet no gate is an alarm with the fix; one whose gate cannot be
// found says so; an unmanaged worktree is refused by policy when the
// policy says so (a checkout on another task's branch is TestGateProblems').
func TestStatusGate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{Unmanaged: ptr(store.UnmanagedRefuse)})
	off := f.Allocate("T-1", store.RoleFeature, "off")
	unknown := f.Allocate("T-2", store.RoleFeature, "unknown")
	on := f.Allocate("T-3", store.RoleFeature, "on")
	audit := f.Allocate("A-1", store.RoleAudit, "audit")
	f.Git("worktree", "add", "-q", "-b", "manual", f.Path("manual"))
	var asked []string
	gate := func(_ context.Context, c gitrepo.Checkout) (string, string, string, error) {
		asked = append(asked, c.Key)
		if c.CommonDir != f.R.Git.CommonDir || c.GitDir != gitrepo.AdminDir(f.R.Git.CommonDir, c.Key) {
			t.Errorf("checkout: %+v", c)
		}
		switch c.TopLevel {
		case off.WorktreePath:
			return "", "core.hooksPath is set in its config.worktree", "git -C off config --worktree --unset core.hooksPath", nil
		case unknown.WorktreePath:
			return "", "", "", errors.New("git config failed")
		}
		return "wt-hook", "", "", nil
	}
	res := f.status(gate)
	if !sameSet(asked, []string{"off", "unknown", "on"}) {
		t.Errorf("the gate was asked about %v", asked)
	}
	r := row(t, res, off.WorktreePath)
	if r.Gate != "none: commits meet no gate" || !reflect.DeepEqual(r.Problems, []Problem{{Alarm: true, Code: decision.HooksMissing,
		Message: "commits here meet no gate: core.hooksPath is set in its config.worktree", Fix: "git -C off config --worktree --unset core.hooksPath"}}) {
		t.Errorf("off: %+v", r)
	}
	r = row(t, res, unknown.WorktreePath)
	if r.Gate != alloc.GateLease+" (not known: git config failed)" || !reflect.DeepEqual(r.Problems, []Problem{{Code: decision.HooksMissing,
		Message: "what a commit here meets cannot be found: git config failed", Hint: "ask git there: wt-hook -C " + unknown.WorktreePath + " check"}}) {
		t.Errorf("unknown: %+v", r)
	}
	if r := row(t, res, on.WorktreePath); r.Gate != alloc.GateLease || len(r.Problems) != 0 {
		t.Errorf("on: %+v", r)
	}
	if r := row(t, res, audit.WorktreePath); r.Gate != alloc.GateReadOnly {
		t.Errorf("audit: %+v", r)
	}
	if r := row(t, res, f.Path("manual")); r.Gate != alloc.GateUnmanaged+" (refused by policy)" {
		t.Errorf("manual: %+v", r)
	}
}

// TestGateProblems: a feature worktree whose HEAD left its branch, and a
// checkout that has a live task's branch checked out without being its
// registered worktree, each with what ends it.
func TestGateProblems(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", store.RoleFeature, "w1")
	retired := f.Allocate("T-2", store.RoleFeature, "w2")
	audit := f.Allocate("A-1", store.RoleAudit, "audit")
	f.Write(func(tx *store.Tx) error {
		r := retired
		r.Lifecycle = store.Released
		return tx.PutAllocation(&r)
	})
	repo := "REPO"
	gitDir := gitrepo.AdminDir(f.R.Git.CommonDir, "w1")
	var got = map[string][]Problem{}
	f.Write(func(tx *store.Tx) error {
		for name, c := range map[string]struct {
			wt gitrepo.Worktree
			a  *store.Allocation
		}{
			"on its branch":             {gitrepo.Worktree{Path: a.WorktreePath, Key: "w1", Branch: "wt/T-1"}, &a},
			"on main":                   {gitrepo.Worktree{Path: a.WorktreePath, Key: "w1", Branch: "main"}, &a},
			"detached":                  {gitrepo.Worktree{Path: a.WorktreePath, Key: "w1", Detached: true}, &a},
			"canonical on T-1's branch": {gitrepo.Worktree{Path: f.Dir, Key: gitrepo.MainKey, Branch: "wt/T-1"}, nil},
			"another on T-1's branch":   {gitrepo.Worktree{Path: "/else where", Key: "else", Branch: "wt/T-1"}, nil},
			"the audit on T-1's branch": {gitrepo.Worktree{Path: audit.WorktreePath, Key: "audit", Branch: "wt/T-1"}, &audit},
			"on a released task's":      {gitrepo.Worktree{Path: "/x", Key: "x", Branch: "wt/T-2"}, nil},
			"on a branch of no task":    {gitrepo.Worktree{Path: "/x", Key: "x", Branch: "topic"}, nil},
		} {
			ps, err := GateProblems(tx, repo, c.wt, gitDir, c.a)
			if err != nil {
				return err
			}
			got[name] = ps
		}
		return nil
	})
	leaseRequired := func(hint string) Problem {
		return Problem{Code: decision.WriterLeaseRequired, Hint: hint,
			Message: "has task T-1's branch wt/T-1 checked out but is not that task's registered worktree (" + a.WorktreePath + "): writes there are judged by task T-1's lease"}
	}
	want := map[string][]Problem{
		"on its branch": nil,
		"on main": {{Code: decision.HeadOffTaskBranch, Fix: "git -C " + a.WorktreePath + " switch wt/T-1",
			Message: "task T-1's worktree is on branch main, not its branch wt/T-1: its commits are refused and wt-exec refuses it"}},
		"detached": {{Code: decision.HeadOffTaskBranch, Fix: "git -C " + a.WorktreePath + " switch wt/T-1",
			Message: "task T-1's worktree is on a detached HEAD, not its branch wt/T-1: its commits are refused and wt-exec refuses it"}},
		"canonical on T-1's branch": {leaseRequired("switch the canonical checkout back to its own branch: git -C " + f.Dir + " switch BRANCH")},
		"another on T-1's branch":   {leaseRequired("if it holds nothing you need, remove it: git -C REPO worktree remove '/else where' (git refuses if it has changes)")},
		"the audit on T-1's branch": {leaseRequired("if it holds nothing you need, remove it: git -C REPO worktree remove " + audit.WorktreePath + " (git refuses if it has changes)")},
		"on a released task's":      nil,
		"on a branch of no task":    nil,
	}
	for name, w := range want {
		if !reflect.DeepEqual(got[name], w) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got[name], w)
		}
	}

	// T-1's own worktree, bound but not registered: backfill registers it.
	f.Write(func(tx *store.Tx) error { return tx.RemoveRegistration("w1") })
	f.Write(func(tx *store.Tx) error {
		ps, err := GateProblems(tx, repo, gitrepo.Worktree{Path: a.WorktreePath, Key: "w1", Branch: "wt/T-1"}, gitDir, nil)
		if w := []Problem{leaseRequired("it is bound to the task but not registered: wt-admin --repo REPO backfill proves and registers it")}; !reflect.DeepEqual(ps, w) {
			t.Errorf("awaiting backfill:\n got %+v\nwant %+v", ps, w)
		}
		return err
	})
	// In status, that gate makes the row's gate the other task's lease.
	res := f.status(nil)
	if r := row(t, res, a.WorktreePath); r.Gate != alloc.GateLease+" (another task's branch)" || r.Registration != "unregistered" {
		t.Errorf("status row: %+v", r)
	}
}

// TestStatusLeases: a lease shows with its freshness from one reading of
// the processes: a running holder's is active, a dead holder's stale; a
// leased checkout gone while its holder runs is an alarm, first; a
// reading that fails fails the view.
func TestStatusLeases(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	live := f.Allocate("T-1", store.RoleFeature, "live")
	dead := f.Allocate("T-2", store.RoleFeature, "dead")
	vanished := f.Allocate("T-3", store.RoleFeature, "vanished")
	idle := f.Allocate("T-4", store.RoleFeature, "idle")
	me := wttest.Self(t)
	future := "2999-01-01T00:00:00Z"
	ll := f.Lease(live, me, nil)
	dl := f.Lease(dead, wttest.DeadHolder, nil)
	vl := f.Lease(vanished, me, nil)
	f.Write(func(tx *store.Tx) error {
		ll.ExpiresAt = &future
		return tx.PutLease(&ll)
	})
	if err := os.RemoveAll(vanished.WorktreePath); err != nil {
		t.Fatal(err)
	}
	// A reading of this process alone: the holders that run are this one.
	getScan := sync.OnceValues(func() (*proc.Scan, error) {
		return proc.NewScanOf(func(pid int) bool { return pid == me.PID })
	})
	res, err := status(f.Ctx, f.R, getScan, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := row(t, res, live.WorktreePath); r.Lease == nil || !reflect.DeepEqual(*r.Lease, LeaseView{LeaseID: ll.LeaseID, Holder: me,
		Generation: 1, Freshness: liveness.FreshActive, ExpiresAt: &future}) || len(r.Problems) != 0 {
		t.Errorf("live: %+v %+v", r, r.Lease)
	}
	if r := row(t, res, dead.WorktreePath); r.Lease == nil || r.Lease.Freshness != liveness.FreshDeadProcess || r.Lease.LeaseID != dl.LeaseID {
		t.Errorf("dead: %+v", r.Lease)
	}
	if r := row(t, res, idle.WorktreePath); r.Lease != nil {
		t.Errorf("idle: %+v", r.Lease)
	}
	r := row(t, res, vanished.WorktreePath)
	if r.Lease == nil || r.Lease.Freshness != liveness.FreshMissingWorktree {
		t.Errorf("vanished: %+v", r.Lease)
	}
	if got := codes(r.Problems); !reflect.DeepEqual(got, []string{"!" + decision.LeasedCheckoutMissing}) {
		t.Errorf("vanished's problems: %v", got)
	}
	if !reflect.DeepEqual(r.Problems[0], VanishedUnderHolder(f.Dir, vl)) ||
		r.Problems[0].Hint != "see what it runs with wt-admin --repo "+f.Dir+" ps "+vanished.WorktreePath+", stop it (kill -TERM "+itoa(me.PID)+"), then finish or re-allocate the task" {
		t.Errorf("vanished's alarm: %+v", r.Problems[0])
	}

	boom := errors.New("no /proc")
	if _, err := status(f.Ctx, f.R, func() (*proc.Scan, error) { return nil, boom }, nil); !errors.Is(err, boom) {
		t.Errorf("a failed reading: %v", err)
	}
}

// TestStatusNoLeaseNoScan: with no lease, status never reads the
// processes.
func TestStatusNoLeaseNoScan(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	f.Allocate("T-1", store.RoleFeature, "w1")
	res, err := status(f.Ctx, f.R, func() (*proc.Scan, error) { return nil, errors.New("read") }, nil)
	if err != nil || len(res.Rows) != 2 {
		t.Errorf("%+v %v", res, err)
	}
}

// TestStatusOccupant: a process a run left using the worktree keeps
// every writer out: RUNTIME_OCCUPIED, with its kill and ps.
func TestStatusOccupant(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", store.RoleFeature, "w1")
	// This process holds a file open in the worktree: it uses it.
	file, err := os.Create(filepath.Join(a.WorktreePath, "held"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	me := wttest.Self(t)
	leaseID := ids.New()
	v, err := proc.RuntimeBinding{Holder: me, LeaseID: &leaseID, Kind: proc.OccupantKind}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	f.Write(func(tx *store.Tx) error {
		cur, err := tx.Allocation(a.AllocationID)
		if err != nil {
			return err
		}
		cur.ExternalBindings = []string{v}
		return tx.PutAllocationRuntime(&cur)
	})
	res := f.status(nil)
	r := row(t, res, a.WorktreePath)
	if len(r.Occupants) != 1 || r.Occupants[0].PID != me.PID || r.Occupants[0].LeaseID != leaseID || r.Occupants[0].ClientID != "test" {
		t.Fatalf("occupants: %+v", r.Occupants)
	}
	if r.Gate != alloc.GateLease+" (occupied: no writer is let in)" {
		t.Errorf("gate: %q", r.Gate)
	}
	want := []Problem{OccupantProblem(f.Dir, a.WorktreePath, r.Occupants[0])}
	if !reflect.DeepEqual(r.Problems, want) || want[0].Code != decision.RuntimeOccupied || want[0].Fix != "kill -TERM "+itoa(me.PID) ||
		!strings.HasPrefix(want[0].Hint, "see it first with wt-admin --repo "+f.Dir+" ps "+a.WorktreePath+" (the run of client test ended with it still there)") {
		t.Errorf("problems:\n got %+v\nwant %+v", r.Problems, want)
	}
}

// TestStatusKept: a tip a confined run could not publish, kept under
// refs/wt/kept/<task>, is PUBLISH_CONFLICT on the task's row.
func TestStatusKept(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", store.RoleFeature, "w1")
	f.Git("update-ref", store.KeptPrefix+"T-1", f.Base)
	r := row(t, f.status(nil), a.WorktreePath)
	want := []Problem{{Code: decision.PublishConflict,
		Message: "a confined run of task T-1 could not publish " + gitrepo.Short(f.Base) + ": its branch moved outside the run; it is kept as refs/wt/kept/T-1",
		Hint:    "compare them: git -C " + f.Dir + " log --oneline --graph refs/heads/wt/T-1 refs/wt/kept/T-1; once it is taken or not wanted: git -C " + f.Dir + " update-ref -d refs/wt/kept/T-1"}}
	if !reflect.DeepEqual(r.Problems, want) {
		t.Errorf("problems:\n got %+v\nwant %+v", r.Problems, want)
	}
}

// TestStatusPending: journals show as pending with whether their actor
// runs; an interrupted allocate is also a warning.
func TestStatusPending(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	me := wttest.Self(t).Identity()
	dead := wttest.DeadHolder.Identity()
	put := func(op, target string, actor proc.Identity) store.Journal {
		j := store.Journal{TransactionID: ids.New(), Operation: op, Phase: "PREPARED", Actor: actor, Target: target,
			Payload: []byte("{}"), CreatedAt: store.Now(), UpdatedAt: store.Now()}
		f.Write(func(tx *store.Tx) error { return tx.PutJournal(&j) })
		return j
	}
	interrupted := put(alloc.OpAllocate, "/w/interrupted", dead)
	running := put(alloc.OpAllocate, "/w/running", me)
	finish := put("finish", "/w/finish", dead)
	res := f.status(nil)
	want := []Pending{
		{interrupted.TransactionID, alloc.OpAllocate, "PREPARED", "/w/interrupted", dead, false},
		{running.TransactionID, alloc.OpAllocate, "PREPARED", "/w/running", me, true},
		{finish.TransactionID, "finish", "PREPARED", "/w/finish", dead, false},
	}
	if !sameSet(res.Pending, want) {
		t.Errorf("pending:\n got %+v\nwant %+v", res.Pending, want)
	}
	if w := []string{"an allocate of /w/interrupted was interrupted; wt-admin recover (or the next allocate) finishes or undoes it"}; !reflect.DeepEqual(res.Warnings, w) {
		t.Errorf("warnings: %q", res.Warnings)
	}
}

// TestStatusLandings: landing records show on their rows; the ready queue
// lists the live tasks marked ready; LANDED holds only while the branch is
// the tip that landed; a task handed back is a problem naming what to do.
func TestStatusLandings(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	ready := f.Allocate("T-1", store.RoleFeature, "ready")
	landed := f.Allocate("T-2", store.RoleFeature, "landed")
	moved := f.Allocate("T-3", store.RoleFeature, "moved")
	conflict := f.Allocate("T-4", store.RoleFeature, "conflict")
	failed := f.Allocate("T-5", store.RoleFeature, "failed")
	released := f.Allocate("T-6", store.RoleFeature, "released")
	f.Write(func(tx *store.Tx) error {
		r := released
		r.Lifecycle = store.Released
		if err := tx.PutAllocation(&r); err != nil {
			return err
		}
		for _, l := range []store.Landing{
			{AllocationID: ready.AllocationID, TaskKey: "T-1", State: store.LandingReady, ReadySeq: 1},
			{AllocationID: released.AllocationID, TaskKey: "T-6", State: store.LandingReady, ReadySeq: 2},
			{AllocationID: landed.AllocationID, TaskKey: "T-2", State: store.LandingLanded, Source: f.Base},
			{AllocationID: moved.AllocationID, TaskKey: "T-3", State: store.LandingLanded, Source: "1111111111111111111111111111111111111111"},
			{AllocationID: conflict.AllocationID, TaskKey: "T-4", State: store.LandingConflict, Paths: []string{"a.go", "b.go"}, AttemptRef: "refs/wt/land/T-4/1"},
			{AllocationID: failed.AllocationID, TaskKey: "T-5", State: store.LandingTestFailed, TestExit: 2, TestLog: "/logs/1.log", AttemptRef: "refs/wt/land/T-5/1"},
		} {
			if err := tx.PutLanding(&l); err != nil {
				return err
			}
		}
		return nil
	})
	res := f.status(nil)
	if !reflect.DeepEqual(res.ReadyQueue, []string{"T-1"}) {
		t.Errorf("ready queue: %v", res.ReadyQueue)
	}
	for path, want := range map[string]string{ready.WorktreePath: store.LandingReady, landed.WorktreePath: store.LandingLanded,
		moved.WorktreePath: "", conflict.WorktreePath: store.LandingConflict, failed.WorktreePath: store.LandingTestFailed} {
		if r := row(t, res, path); r.Landing == nil || r.LandingState != want {
			t.Errorf("%s: %q %+v", path, r.LandingState, r.Landing)
		}
		// What the table shows, in --json too: the landing state of an
		// ACTIVE task over its lifecycle.
		if r := row(t, res, path); r.DisplayLifecycle != cmp.Or(want, store.Active) || r.Lifecycle != store.Active {
			t.Errorf("%s: display_lifecycle %q, lifecycle %q", path, r.DisplayLifecycle, r.Lifecycle)
		}
	}
	repo := f.Dir
	// A conflict is a rebase that stops on it, finished in a next run; a
	// failed test its output and a fix.
	if got, want := row(t, res, conflict.WorktreePath).Problems, []Problem{{Code: store.LandingConflict,
		Message: "wt-admin land handed task T-4 back to its owner: conflicts in a.go, b.go; the attempt is kept as refs/wt/land/T-4/1",
		Hint: "rebase it in a run of its worktree: wt-exec -C " + conflict.WorktreePath + " -- git rebase main stops on the conflict, and the rebase must be finished in a next run, " +
			"as a rule by the task's agent (resolve the files, git add them, git rebase --continue, from outside a run wt-exec -C " + conflict.WorktreePath + " -- git rebase --continue), " +
			"then mark it ready again: wt-admin --repo " + repo + " ready T-4 --owner alice"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("conflict:\n got %+v\nwant %+v", got, want)
	}
	if got, want := row(t, res, failed.WorktreePath).Problems, []Problem{{Code: store.LandingTestFailed,
		Message: "wt-admin land handed task T-5 back to its owner: its test failed (exit 2, output /logs/1.log); the attempt is kept as refs/wt/land/T-5/1",
		Hint: "read the test's output (cat /logs/1.log) and the attempt it tested (git -C " + repo + " log refs/wt/land/T-5/1), fix the task's branch in its worktree " + failed.WorktreePath +
			", as a rule by its agent in a run, then mark it ready again: wt-admin --repo " + repo + " ready T-5 --owner alice"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("test failed:\n got %+v\nwant %+v", got, want)
	}
	if r := row(t, res, f.Dir); r.Landing != nil {
		t.Errorf("the canonical checkout has a landing: %+v", r.Landing)
	}
}

// TestStatusPublication: the publication lease shows with whether its
// lander runs; none when nobody holds it.
func TestStatusPublication(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	me := wttest.Self(t)
	for _, c := range []struct {
		holder proc.Holder
		live   bool
	}{{me, true}, {wttest.DeadHolder, false}} {
		l := store.PublicationLease{LeaseID: ids.New(), Branch: "main", Holder: c.holder, AcquiredAt: store.Now(), Task: "T-1"}
		f.Write(func(tx *store.Tx) error { return tx.PutPublicationLease(&l) })
		res := f.status(nil)
		if p := res.Publication; p == nil || p.Live != c.live || p.Unknown != "" || p.LeaseID != l.LeaseID || p.Task != "T-1" {
			t.Errorf("holder %+v: %+v", c.holder, p)
		}
	}
	f.Write(func(tx *store.Tx) error { return tx.RemovePublicationLease() })
	var v *PublicationView
	f.Write(func(tx *store.Tx) (err error) { v, err = ReadPublication(tx); return err })
	if v != nil {
		t.Errorf("no lease: %+v", v)
	}
}

// TestFinishCommand: the dry run of finish, its words quoted for a shell,
// with --archive when the task's work needs it.
func TestFinishCommand(t *testing.T) {
	t.Parallel()
	got := FinishCommand("'/my repo'", store.Allocation{TaskKey: "T-1", Owner: "a b"}, false)
	if got != "wt-admin --repo '/my repo' finish --task T-1 --owner 'a b'" {
		t.Errorf("FinishCommand: %q", got)
	}
	got = FinishCommand("'/my repo'", store.Allocation{TaskKey: "T-1", Owner: "a b"}, true)
	if got != "wt-admin --repo '/my repo' finish --task T-1 --owner 'a b' --archive" {
		t.Errorf("FinishCommand, archive: %q", got)
	}
}

func ptr[T any](v T) *T { return &v }

func itoa(n int) string { return strconv.Itoa(n) }
