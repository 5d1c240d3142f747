package hooks

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ledger"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// hookCheckout is where a hook runs: the checkout at dir, or, when git names
// a git dir in $GIT_DIR that is not that checkout's (a push received into
// this repository, git --git-dir=... from elsewhere), that git dir without
// a checkout (TopLevel "").
func hookCheckout(dir string) (gitrepo.Checkout, error) {
	c, err := gitrepo.Locate(dir)
	gd := os.Getenv("GIT_DIR")
	if gd == "" {
		return c, err
	}
	// The usual case (git sets GIT_DIR to the checkout's own git dir for
	// hooks in linked worktrees) is settled without reading anything more.
	if err == nil && filepath.IsAbs(gd) && filepath.Clean(gd) == c.GitDir {
		return c, nil
	}
	cwd, aerr := filepath.Abs(dir)
	if aerr != nil {
		return c, decision.SayWrap(decision.NotAGitRepository, aerr, "as-given", dir)
	}
	g, gerr := gitrepo.LocateGitDir(cwd, gd)
	if gerr != nil {
		return g, gerr
	}
	if err == nil && gitrepo.SameFile(c.GitDir, g.GitDir) {
		return c, nil
	}
	return g, nil
}

// checkoutOfKey locates the checkout of worktree key, from a hook that runs
// without one: ok is false when it cannot be found (a bare repository, a
// checkout that is gone), and then its HEAD guards nothing.
func checkoutOfKey(commonDir, key string) (gitrepo.Checkout, bool) {
	var top string
	if key == gitrepo.MainKey {
		if filepath.Base(commonDir) != ".git" {
			return gitrepo.Checkout{}, false
		}
		top = filepath.Dir(commonDir)
	} else {
		p, err := gitrepo.CheckoutOf(commonDir, key)
		if err != nil {
			return gitrepo.Checkout{}, false
		}
		top = p
	}
	c, err := gitrepo.Locate(top)
	if err != nil || !gitrepo.SameFile(c.CommonDir, commonDir) || c.Key != key {
		return gitrepo.Checkout{}, false
	}
	return c, true
}

// RefTransaction judges the "prepared" state of a reference transaction,
// the gate that `git commit --no-verify` cannot skip: git runs it for every
// ref update, from any checkout, from a push received into the repository,
// and from git --git-dir. The whole transaction is refused when, for a
// process (pid) that is not entitled:
//
//   - it changes what refs/heads/B resolves to (creates, moves or deletes
//     it), where B is the branch of an ACTIVE or RETAINED feature
//     allocation: task branches are guarded by record, whatever is checked
//     out where. A line that leaves the ref's value as it is (git
//     pack-refs moves refs from loose files into packed-refs and reports
//     that as creations and deletions) changes nothing and passes;
//   - it updates the HEAD of a governed feature worktree, or of any
//     checkout that has a guarded task branch checked out (even to the
//     value it has: git reset --hard, git stash and git worktree add
//     rewrite files around such an update, and refusing it fails them);
//   - it points a governed feature worktree's HEAD at another branch (git
//     2.46 and later report symbolic-ref updates): refused for everyone,
//     the writer included (HEAD_OFF_TASK_BRANCH). Pointing it back at the
//     task branch is always allowed: that is the remedy.
//
// The publication branch (docs/design.md, "The publication lease"): a line
// that leaves it where it is passes (pack-refs, gc, a reset to the tip it
// has); with policy publication-lease on, a move of it needs token, the
// secret the live lander gives its own compare-and-swap and nothing else
// (store.PublicationTokenEnv), and making it, or any branch pointing at
// it, a symbolic ref is refused (git 2.46 and later show those; doctor
// and audit report one made where git does not).
//
// Remote-tracking refs, tags, notes, refs/stash and branches no allocation
// owns pass. The other states pass.
func RefTransaction(dir, state string, stdin io.Reader, pid int, token string) ([]Verdict, error) {
	if state != "prepared" {
		return nil, nil
	}
	updates, err := ParseRefUpdates(stdin)
	if err != nil || len(updates) == 0 {
		return nil, err
	}
	c, err := hookCheckout(dir)
	if err != nil {
		return nil, err
	}
	updates = withHeadLine(c, updates)
	var out []Verdict
	_, err = underGate(c, pid, func(g *gate) error {
		judged := map[string]bool{}
		var moves []ledgerMove
		follows, err := g.publicationFollows(c)
		if err != nil {
			return err
		}
		for _, u := range updates {
			v, ok, err := g.update(c, u, judged)
			if err != nil {
				return err
			}
			switch {
			case follows != "" && u.Ref == follows:
				// The publication branch is a symbolic ref to this one
				// (made where git showed no hook): moving it moves the
				// publication branch.
				v, ok = g.verdict(c.TopLevel, c.Branch), true
				v.refuse(followsRefusal(c, g, follows))
			case ok && v.Refusal == nil && v.TaskKey != "" && strings.HasPrefix(u.Ref, "refs/heads/"):
				if d := g.recreated(v, u); d != nil {
					v.refuse(d)
					v = done(v)
					break
				}
				moves = append(moves, ledgerMove{v.AllocationID, u, v.Lease})
			case g.pol.PublicationBranch != "" && u.Ref == "refs/heads/"+g.pol.PublicationBranch && (!ok || v.Refusal == nil):
				d, record, err := g.publicationUpdate(c, u, token, follows)
				if err != nil {
					return err
				}
				if d != nil {
					v, ok = g.verdict(c.TopLevel, c.Branch), true
					v.refuse(d)
				}
				if record {
					moves = append(moves, ledgerMove{store.PublicationLedger, u, nil})
				}
			case g.pol.PublicationLease && g.pol.PublicationBranch != "" && strings.HasPrefix(u.Ref, "refs/") && u.New == "ref:refs/heads/"+g.pol.PublicationBranch:
				// A symbolic ref to the publication branch: an update of
				// it would move the branch under another name.
				v, ok = g.verdict(c.TopLevel, c.Branch), true
				v.refuse(symrefRefusal(c, g, u.Ref))
			}
			if !ok || v.Refusal == nil {
				continue
			}
			v.Refusal = decision.Within(v.Refusal, "transaction-moves", u.Ref)
			v.Reason = v.Refusal.Message
			out = append(out, v)
		}
		for _, v := range out {
			if !v.Allowed {
				return nil // refused: none of it moves
			}
		}
		g.record(c, moves)
		return nil
	})
	return out, err
}

// ledgerMove is a move the gate approved, for the branch ledger named.
type ledgerMove struct {
	ledger string
	u      RefUpdate
	lease  *store.Lease
}

// record appends the moves of an approved transaction to the branch
// ledgers (ledgerFile): in "prepared", once the whole transaction is
// judged, before git makes it. A line whose old value git did not give
// (update-ref without one, checkout -B) gets the ref's value now, which
// is the one git's reflog will name. Best effort: a move that cannot be
// recorded shows as one no gate saw (never the other way).
func (g *gate) record(c gitrepo.Checkout, moves []ledgerMove) {
	for _, m := range moves {
		p := ledgerFile(c, g.r, m.ledger, m.u.Ref)
		if p == "" {
			return
		}
		l := store.LedgerLine{Via: store.ViaGate, Ref: m.u.Ref, Old: m.u.Old, New: m.u.New}
		if isZeroOID(l.Old) {
			if cur, err := gitrepo.ReadRef(g.r.Git.CommonDir, m.u.Ref); err == nil && isOID(cur) {
				l.Old = cur
			}
		}
		if m.lease != nil {
			l.LeaseID, l.Generation, l.ClientID = m.lease.LeaseID, m.lease.Generation, m.lease.Holder.ClientID
		}
		_ = store.AppendLedgerAt(p, l) // Best effort, as above.
	}
}

// ledgerFile is where the gate in checkout c records a move of ref for
// ledger name: the store's ledger ("" for a command in a private view,
// whose moves wt-exec records as it publishes them; the checkout's
// pending file for one confined by Landlock alone, which may not write the
// store). A ledger the store does not have yet begins with a baseline
// (ledger.Begin).
func ledgerFile(c gitrepo.Checkout, r *alloc.Repo, name, ref string) string {
	switch {
	case os.Getenv(store.ViewEnv) != "":
		return ""
	case os.Getenv(confinedEnv) != "":
		if c.GitDir == "" {
			return ""
		}
		return filepath.Join(c.GitDir, store.PendingLedgerName)
	}
	p := store.LedgerPath(r.Store.Root(), name)
	if store.HasLedger(r.Store.Root(), name) {
		return p // every commit but a ledger's first: one stat
	}
	if store.EnsureLedgerDir(r.Store.Root()) != nil {
		return ""
	}
	ledger.Begin(r.Git.CommonDir, r.Store.Root(), name, ref)
	return p
}

// recreated refuses (TASK_BRANCH_MISSING) an update that creates task
// branch u.Ref, which git no longer has, on anything but the tip wt's
// ledger records for it: a commit there would start an empty history
// where the task's work was. Restoring the recorded tip passes.
func (g *gate) recreated(v Verdict, u RefUpdate) *decision.Error {
	if isZeroOID(u.New) || !isZeroOID(u.Old) {
		return nil // a deletion, or a move of a branch that is there
	}
	if cur, err := gitrepo.ReadRef(g.r.Git.CommonDir, u.Ref); err != nil || cur != "" {
		return nil // there after all (git gave no old value), or unreadable: the entitlement judged it
	}
	return missingBranch(g.r.Store.Root(), v.AllocationID, v.TaskKey, v.Path, u.Ref, u.New)
}

// missingBranch is TASK_BRANCH_MISSING when the ledger of allocation id,
// in the store at root,
// records a tip for ref other than to (the value about to be given it), and
// nil when the ledger records none (an allocation older than ledgers).
func missingBranch(root, id, task, path, ref, to string) *decision.Error {
	led, err := store.ReadLedgerTail(root, id, ref)
	if err != nil {
		return decision.SayWrap(decision.InvalidMetadata, err, "read-ledger", ref)
	}
	tip := led.LastExisting()
	if tip == "" || tip == to {
		return nil
	}
	return decision.Say(decision.TaskBranchMissing, "task-branch-gone", task, ref, gitrepo.Short(tip)).
		WithHint("%s", ledger.RestoreBranch(path, ref, tip))
}

// withHeadLine adds the line for checkout c's HEAD that git before 2.45
// showed in "prepared" when a transaction moves the branch c has checked
// out (the log-only update of HEAD git makes beside it): later gits show
// it only in "preparing", and without it a commit through HEAD is seen as
// a move of the branch alone, so that what guards the checkout (its role,
// its registration, the unmanaged policy) would not be asked.
func withHeadLine(c gitrepo.Checkout, updates []RefUpdate) []RefUpdate {
	if c.TopLevel == "" || c.Detached || c.Branch == "" {
		return updates
	}
	var moved *RefUpdate
	for i, u := range updates {
		if u.Ref == "HEAD" {
			return updates
		}
		if u.Ref == "refs/heads/"+c.Branch {
			moved = &updates[i]
		}
	}
	if moved == nil {
		return updates
	}
	return append([]RefUpdate{{Old: moved.Old, New: moved.New, Ref: "HEAD"}}, updates...)
}

// update judges one line of a transaction; ok is false when it concerns
// nothing wt guards. judged keeps each allocation and each HEAD to one
// judgement per transaction (a commit moves HEAD and its branch).
func (g *gate) update(c gitrepo.Checkout, u RefUpdate, judged map[string]bool) (Verdict, bool, error) {
	key, isHead := headKey(c, u.Ref)
	if isHead {
		if isZeroOID(u.Old) && !headLocked(c) && gitrepo.Initializing(c.CommonDir) {
			return g.newHead(c, u)
		}
		if judged["HEAD "+key] {
			return Verdict{}, false, nil
		}
		judged["HEAD "+key] = true
		wt := c
		if c.TopLevel == "" || key != c.Key {
			var ok bool
			if wt, ok = checkoutOfKey(c.CommonDir, key); !ok {
				return Verdict{}, false, nil
			}
		}
		return g.head(wt, u)
	}
	if !strings.HasPrefix(u.Ref, "refs/heads/") {
		return Verdict{}, false, nil
	}
	a, ok, err := g.guarded(u.Ref)
	if err != nil || !ok || judged[a.AllocationID] {
		return Verdict{}, false, err
	}
	if same, err := unchanged(c.CommonDir, u); err == nil && same {
		return Verdict{}, false, nil
	}
	judged[a.AllocationID] = true
	return g.forBranch(a, a.WorktreePath, strings.TrimPrefix(u.Ref, "refs/heads/"),
		fmt.Sprintf("%s is task %s's branch, which only that task's writer may create, move or delete", u.Ref, a.TaskKey)), true, nil
}

// headKey tells whether ref is a worktree's HEAD and whose: HEAD is the
// checkout's own, worktrees/<key>/HEAD and main-worktree/HEAD name one.
func headKey(c gitrepo.Checkout, ref string) (string, bool) {
	switch {
	case ref == "HEAD":
		return c.Key, true
	case ref == "main-worktree/HEAD":
		return gitrepo.MainKey, true
	case strings.HasPrefix(ref, "worktrees/") && strings.HasSuffix(ref, "/HEAD"):
		k := strings.TrimSuffix(strings.TrimPrefix(ref, "worktrees/"), "/HEAD")
		if k != "" && !strings.Contains(k, "/") && k != "." && k != ".." {
			return k, true
		}
	}
	return "", false
}

// newHead judges the HEAD of a worktree git is making: git 2.45 and later
// create it (git worktree add) in a transaction whose hook runs in the
// checkout git was started in, as a line for "HEAD" with a null old value
// (the same line a branch switch there gives), while the new worktree's
// admin dir is locked "initializing" and the checkout's own HEAD is not
// locked (headLocked). Pointing the new HEAD at a guarded task branch
// needs that task's entitlement, as checking the branch out anywhere does;
// a detached one guards nothing.
func (g *gate) newHead(c gitrepo.Checkout, u RefUpdate) (Verdict, bool, error) {
	target, symbolic := strings.CutPrefix(u.New, "ref:")
	if !symbolic {
		return Verdict{}, false, nil
	}
	a, guarded, err := g.guarded(target)
	if err != nil || !guarded {
		return Verdict{}, false, err
	}
	branch := strings.TrimPrefix(target, "refs/heads/")
	return g.forBranch(a, c.TopLevel, branch, fmt.Sprintf("a new worktree checks out task %s's branch %s, which only that task's writer may move", a.TaskKey, branch)), true, nil
}

// headLocked reports whether git holds the lock on checkout c's own HEAD
// (the files backend's HEAD.lock in its git dir, or the lock of the table
// stack that keeps its HEAD): git takes it before the hook judges an
// update of that HEAD, so a line for HEAD is then c's own, whatever other
// worktree is being made (or was left half made by a git that died).
func headLocked(c gitrepo.Checkout) bool {
	if c.GitDir == "" {
		return false
	}
	for _, p := range []string{filepath.Join(c.GitDir, "HEAD.lock"), filepath.Join(c.GitDir, "reftable", "tables.list.lock")} {
		if _, err := os.Lstat(p); err == nil {
			return true
		}
	}
	return false
}

// head judges an update of checkout wt's HEAD.
func (g *gate) head(wt gitrepo.Checkout, u RefUpdate) (Verdict, bool, error) {
	if target, ok := strings.CutPrefix(u.New, "ref:"); ok {
		return g.headRetarget(wt, target)
	}
	v, err := g.checkout(wt)
	if err != nil {
		return v, false, err
	}
	// The HEAD of an audit worktree moves freely (reviewers check out what
	// they review), and so does that of an unmanaged checkout on a branch
	// no task owns: only what concerns a task branch's writer is gated.
	gated := v.Role == store.RoleFeature || v.Code == decision.InvalidRole || v.Code == decision.UnregisteredWorktree
	return v, gated, nil
}

// headRetarget judges pointing wt's HEAD at target (a symbolic-ref update,
// reported by git 2.46 and later).
func (g *gate) headRetarget(wt gitrepo.Checkout, target string) (Verdict, bool, error) {
	v := g.verdict(wt.TopLevel, strings.TrimPrefix(target, "refs/heads/"))
	t, err := g.r.ResolveCheckout(g.tx, wt)
	if err == nil && wt.Key != gitrepo.MainKey && t.Allocation.Role == store.RoleFeature && t.Allocation.Branch != nil {
		a := t.Allocation
		v.Role, v.TaskKey, v.AllocationID = a.Role, a.TaskKey, a.AllocationID
		if target == "refs/heads/"+*a.Branch {
			return done(v), false, nil
		}
		v.Refusal = decision.Say(decision.HeadOffTaskBranch, "task-worktree-head", wt.TopLevel, a.TaskKey, *a.Branch, target).
			WithHint("work on %s here; for other work allocate a worktree: wt-admin allocate --task KEY --owner NAME PATH", shell.Word(*a.Branch))
		return done(v), true, nil
	}
	if err != nil && decision.CodeOf(err) != decision.UnregisteredWorktree {
		return v, false, err
	}
	// Any other checkout: moving its HEAD onto a guarded task branch needs
	// that task's entitlement.
	a, ok, err := g.guarded(target)
	if err != nil || !ok {
		return v, false, err
	}
	branch := strings.TrimPrefix(target, "refs/heads/")
	return g.forBranch(a, wt.TopLevel, branch, fmt.Sprintf("%s checks out task %s's branch %s, which only that task's writer may move", wt.TopLevel, a.TaskKey, branch)), true, nil
}

// publicationUpdate judges update u of the publication branch (follows:
// a ref that is a symbolic ref to it, "" for none): a write that moves
// nothing is no move (record false); under policy publication-lease on,
// only the lander's own compare-and-swap moves it (d refuses any other).
// A move let through is recorded: wt does not gate the branch (or the
// lander moves it), but it saw the move, which audit tells from one made
// with hooks off.
func (g *gate) publicationUpdate(c gitrepo.Checkout, u RefUpdate, token, follows string) (d *decision.Error, record bool, err error) {
	if same, err := unchanged(c.CommonDir, u); err == nil && same || follows != "" && repairsSymref(c.CommonDir, follows, u) {
		return nil, false, nil
	}
	if g.pol.PublicationLease {
		if d, err := g.publicationMove(c, u, token); err != nil || d != nil {
			return d, false, err
		}
	}
	return nil, true, nil
}

// unchanged reports whether a line leaves what the ref resolves to as it
// is: a new value equal to the current one, or a deletion of one of the
// two places (loose file, packed-refs) while the other holds the same
// value (git pack-refs pruning loose refs; git deletes the packed entry and
// the loose file in two transactions, so a real deletion meets its second
// one, which is judged). An unreadable ref is never unchanged.
func unchanged(commonDir string, u RefUpdate) (bool, error) {
	vals, err := gitrepo.ReadRefValues(commonDir, u.Ref)
	if err != nil {
		return false, err
	}
	if isZeroOID(u.New) {
		return vals.Loose != "" && vals.Loose == vals.Packed, nil
	}
	return vals.Current() == u.New, nil
}

func isZeroOID(s string) bool { return isOID(s) && strings.Trim(s, "0") == "" }

// confinedEnv marks a command wt-exec confined (its environment).
const confinedEnv = "WT_CONFINED"

// ConfinedLocalPush refuses (PUSH_LOCAL_REMOTE_CONFINED) a push that a
// confined command makes to a remote on a local path: the repository there
// is outside the command's confinement, read-only to it, and a push would
// fail half-way with "Permission denied" (or, with hooks off, does). Its
// task branch leaves its private view through wt-exec, which publishes it
// in the repository; from there the push is anyone's (the hint names it).
// nil when the command is not confined or the remote is not a local path.
func ConfinedLocalPush(dir, remote, url string) *decision.Error {
	if os.Getenv(confinedEnv) == "" || !localURL(url) {
		return nil
	}
	top, branch := dir, "BRANCH"
	if c, err := gitrepo.Locate(dir); err == nil {
		top = c.TopLevel
		if c.Branch != "" {
			branch = c.Branch
		}
	}
	if abs, err := filepath.Abs(top); err == nil {
		top = abs
	}
	return decision.Say(decision.PushLocalRemoteConfined, "confined-command", remote, url).
		WithHint("once the run has ended, push the published branch as its writer, unconfined: wt-exec -C %s --no-confine -- git push %s %s", shell.Word(top), shell.Word(remote), shell.Word(branch))
}

// localURL reports whether a remote URL names a repository on this
// machine by its path (git's local protocol): an absolute or relative
// path, or a file:// URL.
func localURL(url string) bool {
	if strings.HasPrefix(url, "file://") || strings.HasPrefix(url, "/") || strings.HasPrefix(url, "./") || strings.HasPrefix(url, "../") {
		return true
	}
	if strings.Contains(url, "://") {
		return false
	}
	// scp-like host:path is remote; a path without a colon before its
	// first slash is local.
	colon, slash := strings.Index(url, ":"), strings.Index(url, "/")
	return colon < 0 || (slash >= 0 && slash < colon)
}

// PrePush judges a push from the checkout that holds dir, line by line, by
// both sides of each line (pre-push's stdin, see ParsePushUpdates):
//
//   - from a governed feature worktree: the process must be entitled; each
//     line's remote side must be the task's branch (PUSH_REF_NOT_OWNED for
//     any other branch, a tag, or a deletion) and its local side (git
//     gives it resolved: HEAD, a branch, a sha or any refspec) must be the
//     task branch's tip or a commit of its history. In fleet mode the
//     fleet lease is checked last (FLEET_FENCED, FLEET_UNREACHABLE).
//   - from anywhere else: a line whose remote side is the branch of an
//     ACTIVE or RETAINED feature allocation of this repository needs that
//     allocation's entitlement; other refs push freely (unless policy
//     unmanaged is refuse for an unmanaged checkout).
func PrePush(dir string, stdin io.Reader, pid int) (Verdict, error) {
	updates, err := ParsePushUpdates(stdin)
	if err != nil {
		return Verdict{}, err
	}
	v, err := Entitled(dir, pid)
	if err != nil || (v.Refusal != nil && !v.Allowed) {
		return v, err
	}
	if !v.own {
		return pushElsewhere(dir, v, updates, pid)
	}
	c, err := gitrepo.Locate(dir)
	if err != nil {
		return v, err
	}
	own := "refs/heads/" + v.Branch
	for _, u := range updates {
		if d := ownPushLine(c, v, own, u); d != nil {
			v.refuse(d)
			return v, nil
		}
	}
	if v.pol.FleetOn() && len(updates) > 0 {
		if err := fenced(v); err != nil {
			v.refuse(err)
		}
	}
	return v, nil
}

// ownPushLine checks one line of a push from the task's own worktree.
func ownPushLine(c gitrepo.Checkout, v Verdict, own string, u PushUpdate) *decision.Error {
	hint := "push the task's branch only: git push <remote> HEAD:" + v.Branch
	if u.RemoteRef != own {
		return decision.Say(decision.PushRefNotOwned, "this-push", u.RemoteRef, u.LocalRef, v.Path, v.TaskKey, own).
			WithHint("%s", hint)
	}
	if u.Deletes() || isZeroOID(u.LocalOID) {
		return decision.Say(decision.PushRefNotOwned, "this-push-deletes", u.RemoteRef, v.Path, v.TaskKey).
			WithHint("%s", hint)
	}
	tip, err := gitrepo.ReadRefValues(c.CommonDir, own)
	if err != nil {
		return asDecision(err)
	}
	if tip.Current() == u.LocalOID {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	repo := &gitrepo.Repo{CommonDir: c.CommonDir, GitDir: c.GitDir, TopLevel: c.TopLevel}
	if ok, err := repo.IsAncestor(ctx, u.LocalOID, own); err == nil && ok {
		return nil
	}
	return decision.Say(decision.PushRefNotOwned, "this-push-sets", u.RemoteRef, u.LocalOID, u.LocalRef, own).
		WithHint("%s", hint)
}

// pushElsewhere judges a push from a checkout that is not a governed
// feature worktree: only lines that update a guarded task branch on the
// remote need that task's entitlement.
func pushElsewhere(dir string, v Verdict, updates []PushUpdate, pid int) (Verdict, error) {
	c, err := gitrepo.Locate(dir)
	if err != nil {
		return v, err
	}
	_, err = underGate(c, pid, func(g *gate) error {
		for _, u := range updates {
			a, ok, err := g.guarded(u.RemoteRef)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			w := g.forBranch(a, c.TopLevel, strings.TrimPrefix(u.RemoteRef, "refs/heads/"),
				fmt.Sprintf("this push updates %s, task %s's branch, which only that task's writer may push", u.RemoteRef, a.TaskKey))
			if w.Refusal != nil {
				v = w
				return nil
			}
		}
		return nil
	})
	return v, err
}

// fenced checks, in fleet mode, that the task's fleet key still exists
// with the create revision recorded in the local lease (docs/decisions.md, "Fleet mode"): a
// holder whose fleet lease expired or was taken over is refused even while
// its local lease reads live, and so is any push when etcd cannot be asked
// (fail closed). It runs the wt-fleet helper; commits never get here.
func fenced(v Verdict) *decision.Error {
	if v.Lease == nil || v.Lease.Fleet == nil {
		return decision.Say(decision.FleetFenced, "fleet-mode", v.Path).
			WithHint("end this run and start it again under wt-exec, which takes the fleet lease")
	}
	fl := v.Lease.Fleet
	h, err := fleet.NewHelper(fl.Endpoints, v.pol.EtcdAuth(), os.Stderr)
	if err != nil {
		d, _ := decision.As(err)
		return d
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Check(ctx, fl.Key, fl.Revision, ""); err != nil {
		d, ok := decision.As(err)
		if !ok {
			d = decision.SayWrap(decision.FleetUnreachable, err, "check-fleet")
		}
		return d
	}
	return nil
}

// publicationMove judges a move of the publication branch under policy
// publication-lease on: only the live lander's own compare-and-swap may
// make it. Authority is a capability, not an ancestry: the move must
// carry token, the secret whose hash the live lease records for this one
// move (store.PublicationLease.MoveToken), and come from a process that
// descends from the lander. Everything else the lander starts (its
// test, the integration's git, their hooks and filters) descends from it
// too, but never holds the secret. A lander whose liveness cannot be read
// is not taken for dead: the move is refused. The branch made a symbolic
// ref is refused to everyone, the lander included.
func (g *gate) publicationMove(c gitrepo.Checkout, u RefUpdate, token string) (*decision.Error, error) {
	if strings.HasPrefix(u.New, "ref:") {
		return symrefRefusal(c, g, u.Ref), nil
	}
	l, has, err := g.tx.PublicationLease()
	if err != nil {
		return nil, err
	}
	who := "no lander holds the publication lease"
	if has {
		live, err := proc.IsLive(g.procs, l.Holder.Identity())
		if err != nil {
			return nil, err
		}
		if live {
			if l.MoveTokenMatches(token) {
				in, err := g.procs.HasAncestor(g.pid, l.Holder.Identity())
				if err != nil || in {
					return nil, err
				}
			}
			who = fmt.Sprintf("the lander pid %d holds the publication lease", l.Holder.PID)
			if l.Task != "" {
				who += " (landing task " + l.Task + ")"
			}
			who += ", and only its own compare-and-swap moves the branch (its test, hooks and the processes it starts may not)"
		}
	}
	repo := gateRepoArg(c, g)
	return decision.Say(decision.PublicationLeaseRequired, "policy-makes", g.pol.PublicationBranch, who).
		WithHint("land work through it: wt-admin --repo %s land --task KEY (or switch it off: wt-admin --repo %s policy --publication-lease off)", repo, repo), nil
}

// publicationFollows is, under policy publication-lease on, the ref the
// publication branch is a symbolic ref to ("" when it is a branch, as it
// should be, or the policy is off): one small read per transaction.
func (g *gate) publicationFollows(c gitrepo.Checkout) (string, error) {
	if !g.pol.PublicationLease || g.pol.PublicationBranch == "" {
		return "", nil
	}
	v, err := gitrepo.ReadRef(c.CommonDir, "refs/heads/"+g.pol.PublicationBranch)
	if err != nil {
		return "", err
	}
	target, _ := strings.CutPrefix(v, "ref:")
	if target == v {
		return "", nil
	}
	return target, nil
}

// repairsSymref reports whether u makes the publication branch, a
// symbolic ref to target, a branch again at the commit it resolves to
// now: what it resolves to does not change.
func repairsSymref(commonDir, target string, u RefUpdate) bool {
	if !isOID(u.New) || isZeroOID(u.New) || !strings.HasPrefix(target, "refs/") {
		return false
	}
	v, err := gitrepo.ReadRef(commonDir, target)
	return err == nil && v == u.New
}

// followsRefusal is PUBLICATION_BRANCH_SYMREF for a move of target, the
// ref the publication branch is a symbolic ref to.
func followsRefusal(c gitrepo.Checkout, g *gate, target string) *decision.Error {
	pub := "refs/heads/" + g.pol.PublicationBranch
	top := gateRepoArg(c, g)
	return decision.Say(decision.PublicationSymref, "publication-branch", g.pol.PublicationBranch, target, target, g.pol.PublicationBranch).
		WithHint("make %s a branch again where it points now: git -C %s update-ref --no-deref %s $(git -C %s rev-parse %s)", g.pol.PublicationBranch, top, pub, top, pub)
}

// symrefRefusal is PUBLICATION_BRANCH_SYMREF for a transaction that makes
// ref a symbolic ref to the publication branch, or the branch one.
func symrefRefusal(c gitrepo.Checkout, g *gate, ref string) *decision.Error {
	repo := gateRepoArg(c, g)
	if ref == "refs/heads/"+g.pol.PublicationBranch {
		return decision.Say(decision.PublicationSymref, "publication-branch-would", g.pol.PublicationBranch, g.pol.PublicationBranch).
			WithHint("keep %s a branch; land work through wt-admin --repo %s land --task KEY", g.pol.PublicationBranch, repo)
	}
	return decision.Say(decision.PublicationSymref, "would-become", ref, g.pol.PublicationBranch, g.pol.PublicationBranch).
		WithHint("name the branch itself (git rev-parse %s); land work through wt-admin --repo %s land --task KEY", g.pol.PublicationBranch, repo)
}

// gateRepoArg is how a hint names the repository of checkout c: its
// checkout, or its common dir where the hook runs without one.
func gateRepoArg(c gitrepo.Checkout, g *gate) string {
	if c.TopLevel == "" {
		return shell.Word(g.r.Git.CommonDir)
	}
	return shell.Word(c.TopLevel)
}
