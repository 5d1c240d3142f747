package hooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wttest"
)

const zeroOID = "0000000000000000000000000000000000000000"

// commit makes a commit on top of parent in the repository of dir, and
// moves no ref.
func commit(t *testing.T, dir, parent, msg string) string {
	t.Helper()
	return gittest.Git(t, dir, "commit-tree", "-p", parent, "-m", msg, parent+"^{tree}")
}

// tx runs RefTransaction in "prepared" for the lines given, from dir, for
// process pid.
func tx(t *testing.T, dir string, pid int, lines ...string) []Verdict {
	t.Helper()
	vs, err := RefTransaction(dir, "prepared", strings.NewReader(strings.Join(lines, "\n")+"\n"), pid, "")
	if err != nil {
		t.Fatalf("RefTransaction %q: %v", lines, err)
	}
	return vs
}

// codesOf are the verdicts' codes, with "+" in front of an allowed one.
func codesOf(vs []Verdict) string {
	var out []string
	for _, v := range vs {
		c := v.Code
		if v.Allowed {
			c = "+" + c
		}
		out = append(out, c)
	}
	return strings.Join(out, " ")
}

func wantCodes(t *testing.T, what string, vs []Verdict, want string) {
	t.Helper()
	if got := codesOf(vs); got != want {
		t.Errorf("%s: got [%s], want [%s]", what, got, want)
		for _, v := range vs {
			t.Logf("  %s: %s", v.Code, v.Reason)
		}
	}
}

// gateLines are the lines of allocation id's ledger about ref that the
// gate wrote.
func gateLines(t *testing.T, f *fixture, id, ref string) []store.LedgerLine {
	t.Helper()
	led, err := store.ReadLedger(f.R.Store.Root(), id, ref)
	if err != nil {
		t.Fatal(err)
	}
	var out []store.LedgerLine
	for _, l := range led.Lines {
		if l.Via == store.ViaGate {
			out = append(out, l)
		}
	}
	return out
}

// TestRefTransactionStates: only "prepared" is judged, and a line git
// would not write is INVALID_HOOK_INPUT.
func TestRefTransactionStates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	line := f.Base + " " + commit(t, f.Dir, f.Base, "x") + " refs/heads/wt/T-1\n"
	for _, state := range []string{"preparing", "committed", "aborted"} {
		if vs, err := RefTransaction(a.WorktreePath, state, strings.NewReader(line), other, ""); vs != nil || err != nil {
			t.Errorf("%s: %+v %v", state, vs, err)
		}
	}
	if vs, err := RefTransaction(f.Dir, "prepared", strings.NewReader(""), other, ""); vs != nil || err != nil {
		t.Errorf("no lines: %+v %v", vs, err)
	}
	if _, err := RefTransaction(f.Dir, "prepared", strings.NewReader("garbage\n"), other, ""); decision.CodeOf(err) != decision.InvalidHookInput {
		t.Errorf("garbage: %v", err)
	}
	if _, err := RefTransaction(gittest.Outside(t), "prepared", strings.NewReader(line), other, ""); decision.CodeOf(err) != decision.NotAGitRepository {
		t.Errorf("outside a repository: %v", err)
	}
	// An ungoverned repository judges nothing.
	_, plain, base := gittest.Repo(t)
	if vs := tx(t, plain, other, base+" "+commit(t, plain, base, "x")+" refs/heads/main"); len(vs) != 0 {
		t.Errorf("an ungoverned repository: %+v", vs)
	}
}

// TestRefTransactionTaskBranch: a move of a task branch, from anywhere,
// needs the task's entitlement; the gate records the moves it approves in
// the allocation's ledger, and nothing of a refused transaction.
func TestRefTransactionTaskBranch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	ref := "refs/heads/wt/T-1"
	next := commit(t, f.Dir, f.Base, "next")
	move := f.Base + " " + next + " " + ref

	// From the canonical checkout, with no lease.
	vs := tx(t, f.Dir, me, move)
	wantCodes(t, "no lease", vs, decision.WriterLeaseRequired)
	if !strings.HasPrefix(vs[0].Reason, "this transaction moves "+ref+": "+ref+" is task T-1's branch") || vs[0].Refusal.Hint == "" {
		t.Errorf("reason %q hint %q", vs[0].Reason, vs[0].Refusal.Hint)
	}
	// A deletion and a creation, too.
	wantCodes(t, "a deletion", tx(t, f.Dir, me, f.Base+" "+zeroOID+" "+ref), decision.WriterLeaseRequired)
	// Other refs pass: tags, remote-tracking refs, branches no task owns.
	wantCodes(t, "other refs", tx(t, f.Dir, me,
		zeroOID+" "+next+" refs/tags/v1", zeroOID+" "+next+" refs/remotes/origin/wt/T-1", zeroOID+" "+next+" refs/heads/topic", zeroOID+" "+next+" refs/stash"), "")
	// A line that leaves the ref as it is (pack-refs) changes nothing.
	wantCodes(t, "the value it has", tx(t, f.Dir, me, f.Base+" "+f.Base+" "+ref), "")
	if got := gateLines(t, f, a.AllocationID, ref); len(got) != 0 {
		t.Fatalf("refused moves were recorded: %+v", got)
	}

	l := f.Lease(a, wttest.Self(t), nil)
	wantCodes(t, "the holder", tx(t, f.Dir, me, move), "")
	wantCodes(t, "not the holder", tx(t, f.Dir, other, move), decision.WriterLeaseHeld)
	got := gateLines(t, f, a.AllocationID, ref)
	if len(got) != 1 {
		t.Fatalf("ledger: %+v", got)
	}
	want := store.LedgerLine{Via: store.ViaGate, Ref: ref, Old: f.Base, New: next, LeaseID: l.LeaseID, Generation: 1, ClientID: "test"}
	got[0].Time = 0
	if got[0] != want {
		t.Errorf("ledger line:\n got %+v\nwant %+v", got[0], want)
	}
	// A line without its old value gets the ref's value now.
	wantCodes(t, "no old value", tx(t, f.Dir, me, zeroOID+" "+next+" "+ref), "")
	got = gateLines(t, f, a.AllocationID, ref)
	if len(got) != 2 || got[1].Old != f.Base {
		t.Errorf("ledger after a line without old value: %+v", got)
	}

	// One refused line refuses the whole transaction, and records none of it.
	f.Allocate("T-2", "", "t2")
	wantCodes(t, "two tasks, one not entitled", tx(t, f.Dir, me, move, f.Base+" "+next+" refs/heads/wt/T-2"), decision.WriterLeaseRequired)
	if got := gateLines(t, f, a.AllocationID, ref); len(got) != 2 {
		t.Errorf("a refused transaction was recorded: %+v", got)
	}
}

// TestRefTransactionCommit: a commit in a feature worktree moves its HEAD
// and its branch: both need the entitlement (git before 2.45 shows the
// HEAD line in "prepared"; later gits do not, and the gate adds it).
func TestRefTransactionCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	wt := a.WorktreePath
	next := commit(t, f.Dir, f.Base, "next")
	branch := f.Base + " " + next + " refs/heads/wt/T-1"
	head := f.Base + " " + next + " HEAD"

	wantCodes(t, "HEAD and branch, no lease", tx(t, wt, me, head, branch), decision.WriterLeaseRequired+" "+decision.WriterLeaseRequired)
	vs := tx(t, wt, me, branch)
	wantCodes(t, "the branch alone (the HEAD line added)", vs, decision.WriterLeaseRequired+" "+decision.WriterLeaseRequired)
	if len(vs) == 2 && !strings.HasPrefix(vs[0].Reason, "this transaction moves HEAD: ") {
		t.Errorf("the added HEAD line: %q", vs[0].Reason)
	}
	// HEAD alone, even to the value it has (git reset --hard).
	wantCodes(t, "HEAD alone", tx(t, wt, me, f.Base+" "+f.Base+" HEAD"), decision.WriterLeaseRequired)

	f.Lease(a, wttest.Self(t), nil)
	wantCodes(t, "the holder", tx(t, wt, me, head, branch), "")
	wantCodes(t, "not the holder", tx(t, wt, other, branch), decision.WriterLeaseHeld+" "+decision.WriterLeaseHeld)

	if got := gateLines(t, f, a.AllocationID, "refs/heads/wt/T-1"); len(got) != 1 {
		t.Errorf("ledger after the holder's move and a refused one: %+v", got)
	}
	// Under enforcement warn a refusal is allowed, with its warning. The
	// ledger records only what the gate approved outright: a warned move
	// shows in the views as one no gate approved.
	f.SetPolicy(policy.Change{Enforcement: ptr(store.EnforcementWarn)})
	vs = tx(t, wt, other, branch)
	wantCodes(t, "warn", vs, "+"+decision.WriterLeaseHeld+" +"+decision.WriterLeaseHeld)
	if len(vs) == 2 && !vs[1].Warning {
		t.Errorf("a warned move without its warning: %+v", vs[1])
	}
	if got := gateLines(t, f, a.AllocationID, "refs/heads/wt/T-1"); len(got) != 1 {
		t.Errorf("ledger after a warned move: %+v", got)
	}
}

// TestRefTransactionHeads: the HEAD of another worktree, named from where
// the hook runs (worktrees/<key>/HEAD, main-worktree/HEAD).
func TestRefTransactionHeads(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	next := commit(t, f.Dir, f.Base, "next")
	wantCodes(t, "a feature worktree's HEAD from the canonical checkout",
		tx(t, f.Dir, me, f.Base+" "+next+" worktrees/"+a.WorktreeKey+"/HEAD"), decision.WriterLeaseRequired)
	wantCodes(t, "an unknown worktree's HEAD", tx(t, f.Dir, me, f.Base+" "+next+" worktrees/nosuch/HEAD"), "")
	wantCodes(t, "the canonical checkout's HEAD from a feature worktree",
		tx(t, a.WorktreePath, me, f.Base+" "+next+" main-worktree/HEAD"), "")
	// An audit worktree's HEAD moves freely.
	r := f.Allocate("R-1", store.RoleAudit, "audit")
	wantCodes(t, "an audit worktree's HEAD", tx(t, r.WorktreePath, me, f.Base+" "+next+" HEAD"), "")
	// One judgement per HEAD in a transaction.
	wantCodes(t, "HEAD twice", tx(t, f.Dir, me, f.Base+" "+next+" worktrees/"+a.WorktreeKey+"/HEAD", next+" "+f.Base+" worktrees/"+a.WorktreeKey+"/HEAD"), decision.WriterLeaseRequired)
}

// TestRefTransactionRetarget: pointing a feature worktree's HEAD at
// another branch is refused to everyone; pointing it back at the task
// branch is the remedy. Pointing another checkout's HEAD at a task branch
// needs the task's entitlement.
func TestRefTransactionRetarget(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	f.Lease(a, wttest.Self(t), nil)
	vs := tx(t, a.WorktreePath, me, "ref:refs/heads/wt/T-1 ref:refs/heads/side HEAD")
	wantCodes(t, "off the task branch", vs, decision.HeadOffTaskBranch)
	if len(vs) == 1 && !strings.Contains(vs[0].Refusal.Hint, "work on wt/T-1 here") {
		t.Errorf("hint %q", vs[0].Refusal.Hint)
	}
	wantCodes(t, "back onto the task branch", tx(t, a.WorktreePath, other, "ref:refs/heads/side ref:refs/heads/wt/T-1 HEAD"), "")

	wantCodes(t, "the canonical checkout onto the task branch, not the holder",
		tx(t, f.Dir, other, "ref:refs/heads/main ref:refs/heads/wt/T-1 HEAD"), decision.WriterLeaseHeld)
	wantCodes(t, "the canonical checkout onto the task branch, the holder",
		tx(t, f.Dir, me, "ref:refs/heads/main ref:refs/heads/wt/T-1 HEAD"), "")
	wantCodes(t, "the canonical checkout onto another branch",
		tx(t, f.Dir, other, "ref:refs/heads/main ref:refs/heads/topic HEAD"), "")
}

// TestRefTransactionNewWorktree: while git worktree add makes a worktree
// (its admin dir locked "initializing"), a line for HEAD with no old value
// is the new worktree's: pointing it at a task branch needs the task's
// entitlement, a detached one guards nothing. Once the checkout's own HEAD
// is locked, the line is its own again.
func TestRefTransactionNewWorktree(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	admin := filepath.Join(f.Dir, ".git", "worktrees", "new")
	if err := os.MkdirAll(admin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(admin, "locked"), []byte("initializing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	vs := tx(t, f.Dir, me, zeroOID+" ref:refs/heads/wt/T-1 HEAD")
	wantCodes(t, "a new worktree on the task branch", vs, decision.WriterLeaseRequired)
	if len(vs) == 1 && !strings.Contains(vs[0].Reason, "a new worktree checks out task T-1's branch wt/T-1") {
		t.Errorf("reason %q", vs[0].Reason)
	}
	wantCodes(t, "a new worktree on another branch", tx(t, f.Dir, me, zeroOID+" ref:refs/heads/topic HEAD"), "")
	// In the feature worktree: a detached new HEAD guards nothing, but
	// once the worktree's own HEAD is locked the line is its own.
	wantCodes(t, "a new detached worktree", tx(t, a.WorktreePath, me, zeroOID+" "+f.Base+" HEAD"), "")
	lock := filepath.Join(f.Dir, ".git", "worktrees", a.WorktreeKey, "HEAD.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wantCodes(t, "the worktree's own HEAD, locked", tx(t, a.WorktreePath, me, zeroOID+" "+f.Base+" HEAD"), decision.WriterLeaseRequired)
}

// TestRefTransactionRecreated: a task branch gone from git may be created
// again only on the tip wt's ledger records for it.
func TestRefTransactionRecreated(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	f.Lease(a, wttest.Self(t), nil)
	ref := "refs/heads/wt/T-1"
	f.Git("update-ref", "-d", ref)
	elsewhere := commit(t, f.Dir, f.Base, "elsewhere")
	vs := tx(t, f.Dir, me, zeroOID+" "+elsewhere+" "+ref)
	wantCodes(t, "created anew", vs, decision.TaskBranchMissing)
	if len(vs) == 1 && !strings.Contains(vs[0].Refusal.Hint, f.Base) {
		t.Errorf("the hint does not restore the recorded tip: %q", vs[0].Refusal.Hint)
	}
	wantCodes(t, "restored", tx(t, f.Dir, me, zeroOID+" "+f.Base+" "+ref), "")
}

// TestRefTransactionPublication: policy publication-lease on makes the
// lander (the live holder of the publication lease, and what it starts)
// the only writer of the publication branch; off, its moves are only
// recorded.
func TestRefTransactionPublication(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{})
	next := commit(t, f.Dir, f.Base, "next")
	move := f.Base + " " + next + " refs/heads/main"
	ledger := func() int {
		led, err := store.ReadLedger(f.R.Store.Root(), store.PublicationLedger, "refs/heads/main")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, l := range led.Lines {
			if l.Via == store.ViaGate {
				n++
			}
		}
		return n
	}
	wantCodes(t, "publication-lease off", tx(t, f.Dir, other, move), "")
	if n := ledger(); n != 1 {
		t.Errorf("publication ledger: %d gate lines, want 1", n)
	}

	f.SetPolicy(policy.Change{PublicationLease: ptr("on")})
	vs := tx(t, f.Dir, me, move)
	wantCodes(t, "no lander", vs, decision.PublicationLeaseRequired)
	if len(vs) == 1 && (!strings.Contains(vs[0].Reason, "no lander holds the publication lease") || !strings.Contains(vs[0].Refusal.Hint, "wt-admin --repo "+f.Dir+" land")) {
		t.Errorf("no lander: %q / %q", vs[0].Reason, vs[0].Refusal.Hint)
	}
	const secret = "the-landers-own-secret"
	lander := func(h proc.Holder) {
		f.Write(func(tx *store.Tx) error {
			repo, err := tx.Repository()
			if err != nil {
				return err
			}
			return tx.PutPublicationLease(&store.PublicationLease{LeaseID: ids.New(), RepositoryID: repo.RepositoryID,
				Branch: "main", Holder: h, AcquiredAt: store.Now(), Task: "T-9", MoveToken: store.MoveTokenHash(secret)})
		})
	}
	txTok := func(pid int, token string, lines ...string) []Verdict {
		t.Helper()
		vs, err := RefTransaction(f.Dir, "prepared", strings.NewReader(strings.Join(lines, "\n")+"\n"), pid, token)
		if err != nil {
			t.Fatal(err)
		}
		return vs
	}
	lander(wttest.DeadHolder)
	vs = tx(t, f.Dir, me, move)
	wantCodes(t, "a dead lander", vs, decision.PublicationLeaseRequired)
	if len(vs) == 1 && !strings.Contains(vs[0].Reason, "no lander holds") {
		t.Errorf("a dead lander: %q", vs[0].Reason)
	}
	lander(wttest.Self(t))
	vs = tx(t, f.Dir, other, move)
	wantCodes(t, "not the lander", vs, decision.PublicationLeaseRequired)
	if len(vs) == 1 && !strings.Contains(vs[0].Reason, "(landing task T-9)") {
		t.Errorf("not the lander: %q", vs[0].Reason)
	}
	if n := ledger(); n != 1 {
		t.Errorf("refused moves were recorded: %d gate lines", n)
	}
	// What the lander starts descends from it, but holds no secret: its
	// test, the integration's git, their hooks (issue: a task's test.sh
	// moved main).
	vs = tx(t, f.Dir, me, move)
	wantCodes(t, "a descendant of the lander without the secret", vs, decision.PublicationLeaseRequired)
	if len(vs) == 1 && !strings.Contains(vs[0].Reason, "only its own compare-and-swap moves the branch") {
		t.Errorf("a descendant of the lander: %q", vs[0].Reason)
	}
	wantCodes(t, "a wrong secret", txTok(me, "guessed", move), decision.PublicationLeaseRequired)
	wantCodes(t, "the secret, from a process that does not descend from the lander", txTok(other, secret, move), decision.PublicationLeaseRequired)
	lander(wttest.DeadHolder)
	wantCodes(t, "a dead lander's secret", txTok(me, secret, move), decision.PublicationLeaseRequired)
	lander(wttest.Self(t))
	if n := ledger(); n != 1 {
		t.Errorf("refused moves were recorded: %d gate lines", n)
	}
	wantCodes(t, "the lander's compare-and-swap", txTok(me, secret, move), "")
	if n := ledger(); n != 2 {
		t.Errorf("the lander's move: %d gate lines, want 2", n)
	}
}

// TestRefTransactionPublicationNoMove: under policy publication-lease on,
// a transaction that leaves the publication branch where it is passes for
// anyone (git pack-refs moves it between the loose file and packed-refs;
// gc runs pack-refs; a reset --hard to its own tip writes the value it
// has), and is not recorded as a move.
func TestRefTransactionPublicationNoMove(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{PublicationLease: ptr("on")})
	ref := "refs/heads/main"
	wantCodes(t, "a reset to the tip it has", tx(t, f.Dir, other, f.Base+" "+f.Base+" "+ref), "")
	wantCodes(t, "with HEAD beside it", tx(t, f.Dir, other, f.Base+" "+f.Base+" HEAD", f.Base+" "+f.Base+" "+ref), "")
	if !gitrepo.Reftable(f.R.Git.CommonDir) {
		// packed, the loose file still there: then git deletes the loose file
		f.Git("pack-refs", "--all", "--no-prune")
		wantCodes(t, "pack-refs pruning the loose ref", tx(t, f.Dir, other, f.Base+" "+zeroOID+" "+ref), "")
	}
	wantCodes(t, "a real move", tx(t, f.Dir, other, f.Base+" "+commit(t, f.Dir, f.Base, "x")+" "+ref), decision.PublicationLeaseRequired)
	led, err := store.ReadLedger(f.R.Store.Root(), store.PublicationLedger, ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range led.Lines {
		if l.Via == store.ViaGate {
			t.Errorf("a transaction that moves nothing was recorded: %+v", l)
		}
	}
}

// TestRefTransactionPublicationSymref: under policy publication-lease on,
// making the publication branch a symbolic ref, or any ref a symbolic ref
// to it, is refused (git 2.46 and later show such updates to the hook);
// once the branch is one (made where no hook saw it), a move of the ref it
// names is refused, and making it a branch again where it points passes.
func TestRefTransactionPublicationSymref(t *testing.T) {
	t.Parallel()
	f := newFixture(t, policy.Change{PublicationLease: ptr("on")})
	vs := tx(t, f.Dir, me, f.Base+" ref:refs/heads/evil refs/heads/main")
	wantCodes(t, "main made a symref", vs, decision.PublicationSymref)
	vs = tx(t, f.Dir, me, zeroOID+" ref:refs/heads/main refs/heads/alias")
	wantCodes(t, "an alias of main", vs, decision.PublicationSymref)
	if len(vs) == 1 && !strings.Contains(vs[0].Reason, "refs/heads/alias would become a symbolic ref to the publication branch main") {
		t.Errorf("alias: %q", vs[0].Reason)
	}
	f.SetPolicy(policy.Change{PublicationLease: ptr("off")})
	wantCodes(t, "policy off: the operator's", tx(t, f.Dir, me, zeroOID+" ref:refs/heads/main refs/heads/alias"), "")
	f.SetPolicy(policy.Change{PublicationLease: ptr("on")})

	// main made a symref to evil behind every hook's back (git before
	// 2.46 shows no hook): a move of evil moves main.
	evil := commit(t, f.Dir, f.Base, "evil")
	gittest.Git(t, f.Dir, "-c", "core.hooksPath=/dev/null", "branch", "evil", f.Base)
	gittest.Git(t, f.Dir, "-c", "core.hooksPath=/dev/null", "symbolic-ref", "refs/heads/main", "refs/heads/evil")
	vs = tx(t, f.Dir, other, f.Base+" "+evil+" refs/heads/evil")
	wantCodes(t, "a move of what main names", vs, decision.PublicationSymref)
	if len(vs) == 1 && (!strings.Contains(vs[0].Reason, "main is a symbolic ref to refs/heads/evil") || !strings.Contains(vs[0].Refusal.Hint, "update-ref --no-deref refs/heads/main")) {
		t.Errorf("follows: %q / %q", vs[0].Reason, vs[0].Refusal.Hint)
	}
	wantCodes(t, "main a branch again where it points", tx(t, f.Dir, other, zeroOID+" "+f.Base+" refs/heads/main"), "")
	wantCodes(t, "main a branch elsewhere", tx(t, f.Dir, other, zeroOID+" "+evil+" refs/heads/main"), decision.PublicationLeaseRequired)
	wantCodes(t, "another branch moves freely", tx(t, f.Dir, other, zeroOID+" "+evil+" refs/heads/other"), "")
}
