package doctor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/land"
	"github.com/wt-tool/wt/core/maint"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/install"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wtfixture"
	"github.com/wt-tool/wt/internal/wttest"
)

// want is the finding (or, with note, the note) a case expects of its
// check: its problem holds each of problem; fix is its fix exactly ("":
// none); subject and hint, when given, are its subject exactly and a part
// of its hint.
type want struct {
	note    bool
	subject string
	problem []string
	fix     string
	hint    string
}

// finds is one condition of a check's: make sets it up in f (whose
// worktree w1, of task T-1, is a) and says what the check should report.
type finds struct {
	check string
	name  string
	make  func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want
}

// cases are the conditions the checks of the table are about, at least
// one for each check (TestEveryCheckFinds fails on a check without one).
var cases = []finds{
	{check: "admin", name: "an executable in a worktree's admin dir", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		p := filepath.Join(gitrepo.AdminDir(f.R.Git.CommonDir, a.WorktreeKey), "evil")
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return want{subject: a.WorktreePath,
			problem: []string{decision.AdminDirUnsafe + ": ", "T-1", "evil is an executable file"},
			fix:     "wt-admin --repo " + repoWord(f) + " quarantine " + shell.Word(a.WorktreePath)}
	}},
	{check: "store", name: "the policy removed", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		if err := os.Remove(filepath.Join(f.R.Store.Root(), "policy.json")); err != nil {
			t.Fatal(err)
		}
		return want{subject: "policy.json", problem: []string{"the policy is missing"}, fix: "wt-admin --repo " + repoWord(f) + " init"}
	}},
	{check: "store", name: "an allocation record that cannot be read", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		p := filepath.Join(f.R.Store.Root(), "allocations", a.AllocationID+".json")
		if err := os.WriteFile(p, []byte("{not json"), 0o644); err != nil {
			t.Fatal(err)
		}
		return want{subject: "store", problem: []string{a.AllocationID}, hint: "wt refuses to read it and never overwrites it"}
	}},
	{check: "gates", name: "an allocated worktree's checkout removed", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		if err := os.RemoveAll(a.WorktreePath); err != nil {
			t.Fatal(err)
		}
		return want{subject: a.WorktreePath,
			problem: []string{decision.CheckoutMissing + ": ", "T-1"},
			fix:     "wt-admin --repo " + repoWord(f) + " finish --task T-1 --owner alice",
			hint:    "the dry run shows what finishing keeps"}
	}},
	{check: "gates", name: "an allocated worktree moved by git", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		moved := f.Path("w1-moved")
		f.Git("worktree", "move", a.WorktreePath, moved)
		return want{subject: moved,
			problem: []string{decision.InvalidTarget + ": ", "T-1", a.WorktreePath},
			fix:     "git -C " + repoWord(f) + " worktree move " + shell.Word(moved) + " " + shell.Word(a.WorktreePath)}
	}},
	{check: "gates", name: "an allocation whose worktree git does not list", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		if err := os.RemoveAll(a.WorktreePath); err != nil {
			t.Fatal(err)
		}
		f.Git("worktree", "prune")
		return want{subject: a.WorktreePath,
			problem: []string{decision.UnregisteredWorktree + ": ", "T-1", a.WorktreePath},
			fix:     "wt-admin --repo " + repoWord(f) + " finish --task T-1 --owner alice"}
	}},
	{check: "gates", name: "a worktree of a role wt leaves ungated (a note)", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		in := f.Allocate("T-2", store.RoleIntegration, "integration")
		return want{note: true, subject: in.WorktreePath, problem: []string{decision.UngatedRole + ": ", "T-2"}}
	}},
	{check: "hooks", name: "a shim removed", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		if !shimsInHooksDir(t) {
			t.Skip("the git on PATH runs wt's configured hooks, not shims in the hooks dir")
		}
		p := filepath.Join(f.R.Git.CommonDir, "hooks", "reference-transaction")
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		return want{subject: p, problem: []string{"the reference-transaction hook is not installed"}, fix: "wt-hook -C " + repoWord(f) + " install"}
	}},
	{check: "refs", name: "a stale packed-refs lock", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		p := filepath.Join(f.R.Git.CommonDir, "packed-refs.lock")
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Minute)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		return want{subject: p, problem: []string{decision.RefLockStale + ": ", p}, fix: "rm -f -- " + shell.Word(p)}
	}},
	{check: "refs", name: "a landing attempt of a task with no live allocation", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		ref := maint.LandAttemptPrefix + "T-0/1"
		f.Git("update-ref", ref, f.Base)
		return want{subject: ref,
			problem: []string{"task T-0 has ended", "a landing attempt"},
			fix:     "git -C " + repoWord(f) + " update-ref -d " + ref + " " + f.Base}
	}},
	{check: "refs", name: "an ungated tip the publication branch holds", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		ref := maint.UngatedPrefix + "T-0/1"
		f.Git("update-ref", ref, f.Base)
		return want{subject: ref,
			problem: []string{"task T-0 has ended", "an ungated tip the publication branch holds"},
			fix:     "git -C " + repoWord(f) + " update-ref -d " + ref + " " + f.Base}
	}},
	{check: "refs", name: "an ungated tip nothing else holds (a note)", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		ref := maint.UngatedPrefix + "T-0/1"
		oid := f.Git("commit-tree", "-p", f.Base, "-m", "ungated", f.Base+"^{tree}")
		f.Git("update-ref", ref, oid)
		return want{note: true, subject: ref, problem: []string{"task T-0 has ended", "look at it", "update-ref -d " + ref + " " + oid}}
	}},
	{check: "leases", name: "a lease whose holder is dead", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		h := deadHolder(t)
		l := f.Lease(a, h, nil)
		return want{subject: a.WorktreePath,
			problem: []string{"the holder of lease " + l.LeaseID + " (client gone, pid " + strconv.Itoa(h.PID) + ") is dead and nothing of it runs"},
			fix:     "wt-admin --repo " + repoWord(f) + " lease release " + shell.Word(a.WorktreePath) + " --lease-id " + l.LeaseID}
	}},
	{check: "leases", name: "an expired lease whose holder is dead", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		l := f.Lease(a, deadHolder(t), func(l *store.Lease) { past := "2000-01-01T00:00:00Z"; l.ExpiresAt = &past })
		return want{subject: a.WorktreePath,
			problem: []string{"lease " + l.LeaseID, "expired and its holder is dead"},
			fix:     "wt-admin --repo " + repoWord(f) + " lease expire"}
	}},
	{check: "leases", name: "a dead holder's lease on a worktree that is gone", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		l := f.Lease(a, deadHolder(t), nil)
		if err := os.RemoveAll(a.WorktreePath); err != nil {
			t.Fatal(err)
		}
		return want{subject: a.WorktreePath,
			problem: []string{"lease " + l.LeaseID, "holds a worktree that is gone"},
			fix:     "wt-admin --repo " + repoWord(f) + " lease abandon " + shell.Word(a.WorktreePath) + " --reason 'worktree removed'"}
	}},
	{check: "leases", name: "a live holder's worktree that is gone", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		h := wttest.Self(t)
		l := f.Lease(a, h, nil)
		if err := os.RemoveAll(a.WorktreePath); err != nil {
			t.Fatal(err)
		}
		return want{subject: a.WorktreePath, problem: []string{"ALARM: " + decision.LeasedCheckoutMissing + ": ", l.LeaseID},
			hint: "kill -TERM " + strconv.Itoa(h.PID)}
	}},
	{check: "leases", name: "a leased worktree moved by git", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		l := f.Lease(a, deadHolder(t), nil)
		moved := f.Path("w1-moved")
		f.Git("worktree", "move", a.WorktreePath, moved)
		return want{subject: a.WorktreePath,
			problem: []string{"the worktree of lease " + l.LeaseID + " (client gone) was moved to " + moved},
			fix:     "git -C " + repoWord(f) + " worktree move " + shell.Word(moved) + " " + shell.Word(a.WorktreePath)}
	}},
	{check: "leases", name: "git's lock of a lease wt no longer has", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		reason := "wt: writer lease " + ids.New()
		f.Git("worktree", "lock", "--reason", reason, a.WorktreePath)
		return want{subject: a.WorktreePath,
			problem: []string{`git's lock says "` + reason + `" but wt has no such lease`},
			fix:     "git -C " + repoWord(f) + " worktree unlock " + shell.Word(a.WorktreePath)}
	}},
	{check: "views", name: "a view whose runner is dead", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		dead := exited(t)
		dir := f.Path("view")
		if err := store.WriteViewRecord(f.R.Store.Root(), a.WorktreeKey, store.ViewRecord{Dir: dir, Task: "T-1", Branch: *a.Branch, Runner: &dead}); err != nil {
			t.Fatal(err)
		}
		return want{subject: dir, problem: []string{decision.ViewLeft + ": ", "T-1"},
			fix: "wt-exec -C " + shell.Word(a.WorktreePath) + " --no-confine -- true"}
	}},
	{check: "views", name: "a sandbox's view of a worktree no longer allocated", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		dead := exited(t)
		dir := f.Path("view")
		if err := store.WriteViewRecord(f.R.Store.Root(), "gone", store.ViewRecord{Dir: dir, Task: "T-9", Discard: true, Runner: &dead}); err != nil {
			t.Fatal(err)
		}
		return want{subject: dir, problem: []string{decision.ViewLeft + ": ", "T-9"},
			hint: "git --git-dir=" + shell.Word(filepath.Join(dir, "upper")) + " log --oneline --all"}
	}},
	{check: "registrations", name: "a binding's registration removed", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		var key string
		f.Write(func(tx *store.Tx) error {
			keys, err := tx.Bindings()
			if err != nil {
				return err
			}
			if len(keys) != 1 {
				t.Fatalf("bindings %q, want one", keys)
			}
			key = keys[0]
			return tx.RemoveRegistration(key)
		})
		return want{subject: "bindings/" + key + ".json",
			problem: []string{"binding " + key + " has no registration"},
			fix:     "wt-admin --repo " + repoWord(f) + " backfill"}
	}},
	{check: "prune", name: "a retained audit worktree whose path is gone", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		au := f.Allocate("T-2", store.RoleAudit, "audit")
		if _, err := f.R.Retain(f.Ctx, au.WorktreePath, "alice", nil); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(au.WorktreePath); err != nil {
			t.Fatal(err)
		}
		return want{subject: au.WorktreePath,
			problem: []string{"retained audit worktree of task T-2 is gone"},
			fix:     "wt-admin --repo " + repoWord(f) + " prune " + shell.Word(au.WorktreePath) + " --owner alice"}
	}},
	{check: "journals", name: "an interrupted allocate", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		j := journal(t, f, "allocate", f.Path("w2"))
		return want{subject: j.Target,
			problem: []string{"a allocate of " + j.Target + " was interrupted (transaction " + j.TransactionID + ", phase PREPARED, by pid " + strconv.Itoa(j.Actor.PID) + ", gone)"},
			fix:     "wt-admin --repo " + repoWord(f) + " recover"}
	}},
	{check: "journals", name: "an interrupted land", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		j := journal(t, f, land.OpLand, "publication:T-1")
		return want{subject: j.Target, problem: []string{"a land of publication:T-1 was interrupted"},
			fix: "wt-admin --repo " + repoWord(f) + " land --recover"}
	}},
	{check: "journals", name: "an interrupted operation no command resumes", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		j := journal(t, f, "unheard-of", "somewhere")
		return want{subject: j.Target, problem: []string{"a unheard-of of somewhere was interrupted"},
			hint: j.TransactionID + ".json by hand"}
	}},
	{check: "publication", name: "the publication lease of a dead lander", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		h := deadHolder(t)
		publicationLease(t, f, h)
		return want{subject: "the publication lease of main",
			problem: []string{"its lander, pid " + strconv.Itoa(h.PID) + ", is gone"},
			fix:     "wt-admin --repo " + repoWord(f) + " land --recover"}
	}},
	{check: "publication", name: "the publication lease of a live lander (a note)", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		h := wttest.Self(t)
		publicationLease(t, f, h)
		return want{note: true, subject: "the publication lease of main", problem: []string{"held by lander pid " + strconv.Itoa(h.PID)}}
	}},
	{check: "objects", name: "an object of a task branch's commit deleted", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		w := a.WorktreePath
		if err := os.WriteFile(filepath.Join(w, "file"), []byte("work of T-1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		gittest.Git(t, w, "add", "file")
		gittest.Git(t, w, "commit", "-q", "-m", "work")
		oid := gittest.Git(t, w, "rev-parse", "HEAD:file")
		if err := os.Remove(filepath.Join(f.R.Git.CommonDir, "objects", oid[:2], oid[2:])); err != nil {
			t.Fatal(err)
		}
		return want{problem: []string{"1 object(s) reachable from the governed refs are missing: object " + oid},
			hint: "fsck --connectivity-only"}
	}},
	{check: "audit", name: "a task branch moved past the gate", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		oid := f.Git("commit-tree", "-p", f.Base, "-m", "ungated", f.Base+"^{tree}")
		f.Git("-c", "core.hooksPath=/dev/null", "update-ref", "refs/heads/"+*a.Branch, oid)
		return want{subject: "T-1", problem: []string{decision.UngatedRefMove + ": "}, fix: "wt-admin --repo " + repoWord(f) + " audit"}
	}},
	{check: "fleet", name: "fleet mode without its remote", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		fleetMode(t, f)
		if w, missing := helperMissing(); missing {
			return w
		}
		return want{subject: "remote origin", problem: []string{"which this repository lacks"},
			fix: "git -C " + repoWord(f) + " remote add origin URL"}
	}},
	{check: "fleet", name: "fleet mode with etcd unreachable", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
		f.Git("remote", "add", "origin", f.Path("origin.git"))
		fleetMode(t, f)
		if w, missing := helperMissing(); missing {
			return w
		}
		return want{subject: "http://127.0.0.1:1", hint: "start etcd or fix the endpoints"}
	}},
}

// journal writes the journal of an operation on target interrupted by the
// end of its actor.
func journal(t *testing.T, f *wtfixture.Repo, op, target string) store.Journal {
	t.Helper()
	j := store.Journal{Meta: store.Meta{SchemaVersion: store.SchemaVersion}, TransactionID: ids.New(), Operation: op, Phase: "PREPARED",
		Actor: exited(t), Target: target, Payload: json.RawMessage("{}"), CreatedAt: store.Now(), UpdatedAt: store.Now()}
	f.Write(func(tx *store.Tx) error { return tx.PutJournal(&j) })
	return j
}

// publicationLease writes main's publication lease, held by h.
func publicationLease(t *testing.T, f *wtfixture.Repo, h proc.Holder) {
	t.Helper()
	f.Write(func(tx *store.Tx) error {
		repo, err := tx.Repository()
		if err != nil {
			return err
		}
		l := store.PublicationLease{LeaseID: ids.New(), RepositoryID: repo.RepositoryID, Branch: "main", Holder: h, AcquiredAt: store.Now()}
		return tx.PutPublicationLease(&l)
	})
}

// fleetMode puts f in fleet mode, with an etcd endpoint nothing listens on.
func fleetMode(t *testing.T, f *wtfixture.Repo) {
	t.Helper()
	etcd, endpoints := store.CoordinatorEtcd, "http://127.0.0.1:1"
	f.SetPolicy(policy.Change{Coordinator: &etcd, EtcdEndpoints: &endpoints})
}

// helperMissing is the finding of a machine without wt-fleet, where the
// fleet check stops first.
func helperMissing() (want, bool) {
	if _, err := fleet.FindHelper(); err != nil {
		return want{subject: fleet.HelperName, problem: []string{err.Error()}, hint: "install wt again"}, true
	}
	return want{}, false
}

// TestEveryCheckFinds: each check of the table reports, under its own
// name, the condition it is about, with the command that fixes it; and
// every finding and note of every case names a check of the table.
func TestEveryCheckFinds(t *testing.T) {
	names := tableNames()
	for _, c := range checks {
		if !slices.ContainsFunc(cases, func(k finds) bool { return k.check == c.name }) {
			t.Errorf("check %q of the table has no case", c.name)
		}
	}
	reports := make([]*Report, len(cases)) // nil: the case stopped before Run
	t.Run("cases", func(t *testing.T) {
		for i, k := range cases {
			t.Run(k.check+": "+k.name, func(t *testing.T) {
				t.Parallel()
				if !slices.Contains(names, k.check) {
					t.Fatalf("case of check %q, which the table lacks (%q)", k.check, names)
				}
				f, a := governed(t)
				w := k.make(t, f, a)
				rep := run(t, f)
				reports[i] = &rep
				wantFinding(t, rep, k.check, w)
			})
		}
	})
	t.Run("every finding names a check of the table", func(t *testing.T) {
		for _, rep := range reports {
			if rep != nil {
				wantNamedChecks(t, *rep)
			}
		}
	})
}

// wantFinding fails the test unless rep has, from check, the finding (or
// note) w describes.
func wantFinding(t *testing.T, rep Report, check string, w want) {
	t.Helper()
	list, what := rep.Findings, "finding"
	if w.note {
		list, what = rep.Notes, "note"
	}
	for _, got := range list {
		if got.Check != check || w.subject != "" && got.Subject != w.subject ||
			slices.ContainsFunc(w.problem, func(p string) bool { return !strings.Contains(got.Problem, p) }) {
			continue
		}
		if got.Fix != w.fix {
			t.Errorf("%s %q: fix %q, want %q", what, got.Problem, got.Fix, w.fix)
		}
		if !strings.Contains(got.Hint, w.hint) {
			t.Errorf("%s %q: hint %q, want it to hold %q", what, got.Problem, got.Hint, w.hint)
		}
		return
	}
	t.Errorf("no %s of check %q about %q saying %q in:%s", what, check, w.subject, w.problem, describe(rep))
}

// TestCleanRepository: a fresh governed repository (the gate installed,
// one allocated worktree) has nothing to fix, and the checked line is the
// table's names in its order, less the fleet check, which applies in
// fleet mode only.
func TestCleanRepository(t *testing.T) {
	t.Parallel()
	f, _ := governed(t)
	rep := run(t, f)
	if len(rep.Findings) != 0 {
		t.Errorf("findings in a clean repository:%s", describe(rep))
	}
	wantNamedChecks(t, rep)
	var pol store.Policy
	f.Write(func(tx *store.Tx) error {
		var err error
		pol, _, err = tx.Policy()
		return err
	})
	var want []string
	for _, c := range checks {
		if c.applies == nil || c.applies(&scope{pol: pol}) {
			want = append(want, c.name)
		}
	}
	if !slices.Equal(rep.Checked, want) {
		t.Errorf("checked %q, want %q", rep.Checked, want)
	}
	if slices.Contains(rep.Checked, "fleet") {
		t.Errorf("checked %q: fleet checked outside fleet mode", rep.Checked)
	}
	if rep.Repository != f.Dir {
		t.Errorf("repository %q, want %q", rep.Repository, f.Dir)
	}
	hooks := filepath.Join(f.R.Git.CommonDir, "hooks")
	if !shimsInHooksDir(t) {
		hooks = install.ConfigDir(f.R.Git.CommonDir)
	}
	if rep.HooksDir != hooks {
		t.Errorf("hooks dir %q, want %q", rep.HooksDir, hooks)
	}
}

// TestFleetModeIsChecked: in fleet mode, the checked line is the whole
// table.
func TestFleetModeIsChecked(t *testing.T) {
	t.Parallel()
	f, _ := governed(t)
	fleetMode(t, f)
	rep := run(t, f)
	if !slices.Equal(rep.Checked, tableNames()) {
		t.Errorf("checked %q in fleet mode, want the table's %q", rep.Checked, tableNames())
	}
}

// TestGateNotInstalled: with the gate not installed, the hooks
// check says so for each hook, with wt-hook install as the fix, and only
// the hooks check finds anything.
func TestGateNotInstalled(t *testing.T) {
	t.Parallel()
	f := wtfixture.New(t, policy.Change{})
	rep := run(t, f)
	fix := "wt-hook -C " + repoWord(f) + " install"
	var hooks []string
	for _, got := range rep.Findings {
		if got.Check != "hooks" || got.Fix != fix {
			t.Errorf("finding %+v, want only the hooks check's, fixed by %q", got, fix)
		}
		hooks = append(hooks, filepath.Base(got.Subject))
	}
	has := func(hook string) bool {
		return slices.ContainsFunc(hooks, func(h string) bool { return strings.HasSuffix(h, hook) })
	}
	if !has("reference-transaction") || !has("pre-commit") {
		t.Errorf("hooks found not installed %q, want reference-transaction and pre-commit among them", hooks)
	}
}

// TestNotGoverned: a repository wt has not set up is the store check's
// one finding, fixed by init, and no other check runs.
func TestNotGoverned(t *testing.T) {
	t.Parallel()
	_, dir, _ := gittest.Repo(t)
	rep, err := Run(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Checked, []string{"store"}) {
		t.Errorf("checked %q, want only the store", rep.Checked)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Check != "store" || rep.Findings[0].Fix != "wt-admin --repo "+shell.Word(dir)+" init" {
		t.Errorf("findings %+v, want the store's, fixed by init", rep.Findings)
	}
	wantNamedChecks(t, rep)
}

// TestOutsideARepository: outside any repository, Run refuses with
// NOT_A_GIT_REPOSITORY, having checked nothing.
func TestOutsideARepository(t *testing.T) {
	t.Parallel()
	rep, err := Run(context.Background(), gittest.Outside(t))
	wttest.WantCode(t, err, decision.NotAGitRepository)
	if len(rep.Checked) != 0 || len(rep.Findings) != 0 {
		t.Errorf("report of a refusal %+v, want none checked, nothing found", rep)
	}
}

// TestInFlightIsNotAFinding: what a live process holds, and a lock git
// may be about to put in place, are left alone: no finding of the check
// that looks at them.
func TestInFlightIsNotAFinding(t *testing.T) {
	t.Parallel()
	self := func(t *testing.T) proc.Identity {
		id, err := proc.Self()
		if err != nil {
			t.Skip("this process cannot be described:", err)
		}
		return id
	}
	for _, k := range []finds{
		{check: "refs", name: "a ref lock a live process holds open", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
			p := filepath.Join(f.R.Git.CommonDir, "packed-refs.lock")
			holdOpen(t, p)
			old := time.Now().Add(-time.Minute)
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
			return want{}
		}},
		{check: "refs", name: "a ref lock younger than git's rename", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
			p := filepath.Join(f.R.Git.CommonDir, "packed-refs.lock")
			future := time.Now().Add(time.Hour) // young however slow the run
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, future, future); err != nil {
				t.Fatal(err)
			}
			return want{}
		}},
		{check: "leases", name: "a live holder's lease", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
			f.Lease(a, wttest.Self(t), nil)
			return want{}
		}},
		{check: "views", name: "a view whose runner runs", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
			id := self(t)
			if err := store.WriteViewRecord(f.R.Store.Root(), a.WorktreeKey, store.ViewRecord{Dir: f.Path("view"), Task: "T-1", Runner: &id}); err != nil {
				t.Fatal(err)
			}
			return want{}
		}},
		{check: "views", name: "a view of a worktree whose lease holder runs", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
			f.Lease(a, wttest.Self(t), nil)
			if err := store.WriteViewRecord(f.R.Store.Root(), a.WorktreeKey, store.ViewRecord{Dir: f.Path("view"), Task: "T-1"}); err != nil {
				t.Fatal(err)
			}
			return want{}
		}},
		{check: "journals", name: "an operation whose actor runs", make: func(t *testing.T, f *wtfixture.Repo, a store.Allocation) want {
			j := store.Journal{Meta: store.Meta{SchemaVersion: store.SchemaVersion}, TransactionID: ids.New(), Operation: "allocate", Phase: "PREPARED",
				Actor: self(t), Target: f.Path("w2"), Payload: json.RawMessage("{}"), CreatedAt: store.Now(), UpdatedAt: store.Now()}
			f.Write(func(tx *store.Tx) error { return tx.PutJournal(&j) })
			return want{}
		}},
	} {
		t.Run(k.check+": "+k.name, func(t *testing.T) {
			t.Parallel()
			f, a := governed(t)
			k.make(t, f, a)
			rep := run(t, f)
			if len(rep.Findings) != 0 {
				t.Errorf("findings:%s", describe(rep))
			}
			if !slices.Contains(rep.Checked, k.check) {
				t.Errorf("checked %q: %s not among them", rep.Checked, k.check)
			}
		})
	}
}

// TestRunChangesNothing: doctor reads only; the fixes are for a person to
// run. A repository with a finding of several checks is, file for file,
// as it was, but for the answer the gate's check keeps of what a commit in
// each worktree meets (install.GateState, under the common dir's
// wt-gate/).
func TestRunChangesNothing(t *testing.T) {
	t.Parallel()
	f, a := governed(t)
	made := 0
	for _, k := range cases {
		switch k.name {
		case "a lease whose holder is dead", "a stale packed-refs lock", "an interrupted allocate",
			"a view whose runner is dead", "a landing attempt of a task with no live allocation", "the publication lease of a dead lander":
			k.make(t, f, a)
			made++
		}
	}
	if made != 6 {
		t.Fatalf("made %d of the 6 conditions: a case was renamed", made)
	}
	kept := filepath.Join(f.R.Git.CommonDir, "wt-gate")
	before := tree(t, f.Top, kept)
	rep := run(t, f)
	if len(rep.Findings) < 6 {
		t.Errorf("want a finding of each condition made:%s", describe(rep))
	}
	if after := tree(t, f.Top, kept); after != before {
		t.Errorf("doctor changed the repository:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// tree is every file under dir but those under skip: path, mode and
// content (a link: its target), a line each.
func tree(t *testing.T, dir, skip string) string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == skip {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out = append(out, p+" -> "+target)
		case fi.IsDir():
			out = append(out, p+"/ "+fi.Mode().String())
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, p+" "+fi.Mode().String()+" "+string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, "\n")
}
