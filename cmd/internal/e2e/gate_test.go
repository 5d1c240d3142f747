package e2e

// The gated-operations table of the README, row by row: ordinary git
// operations by a process that is not the writer, against a worktree whose
// lease agent-A holds, from that worktree, from the canonical checkout and
// from another worktree. Real git, real hooks, a real holder.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/internal/gittest"
)

// gateOutcome is what a row expects.
type gateOutcome int

const (
	// refusedBefore: wt refuses before git changes the task branch or the
	// worktree's HEAD (files may have been rewritten first; the README says
	// for which operations).
	refusedBefore gateOutcome = iota
	// gitRefuses: git itself refuses (a branch checked out elsewhere, a
	// locked worktree) before any hook runs; nothing changes either.
	gitRefuses
	// reportedAfter: git before 2.46 shows the operation to no hook that
	// can refuse it (a branch switch is a symbolic-ref update); the
	// post-checkout hook reports it, and the next commit is refused.
	reportedAfter
)

type gateRow struct {
	name string
	// where: "leased" (the leased worktree w0), "canonical" (the main
	// checkout) or "other" (worktree w1 of task T-1).
	where string
	cmd   string // sh -c, run in where's directory; $W0 is the leased worktree
	want  gateOutcome
	// says is a regexp stderr must match.
	says string
	// touches is what git changed in the leased worktree before the
	// refusal: "" nothing, "files" its files (reset --hard, checkout,
	// merge, rebase, cherry-pick, revert write the tree before moving
	// HEAD), "stash" the change moved into the stash and the files reset.
	touches string
}

// holderSays is the refusal naming the live holder.
const holderSays = `WRITER_LEASE_HELD: .*held by client agent-A, pid [0-9]+`

var gateRows = []gateRow{
	{"commit", "leased", "git commit -q --allow-empty -m rogue", refusedBefore, holderSays, ""},
	{"commit --amend", "leased", "git commit -q --amend --allow-empty -m rogue", refusedBefore, holderSays, ""},
	{"commit --no-verify", "leased", "git commit -q --no-verify --allow-empty -m rogue", refusedBefore, holderSays, ""},
	{"update-ref branch", "leased", "git update-ref refs/heads/wt/T-0 HEAD~1", refusedBefore, holderSays, ""},
	{"update-ref HEAD", "leased", "git update-ref HEAD HEAD~1", refusedBefore, holderSays, ""},
	{"branch -f", "leased", "git branch -f wt/T-0 HEAD~1", gitRefuses, "cannot force update the branch", ""},
	{"branch -m", "leased", "git branch -m wt/T-0 renamed", refusedBefore, holderSays, ""},
	{"branch -d", "leased", "git branch -D wt/T-0", gitRefuses, "[Cc]annot delete branch", ""},
	{"reset --hard", "leased", "git reset -q --hard HEAD~1", refusedBefore, holderSays, "files"},
	{"reset --soft", "leased", "git reset -q --soft HEAD~1", refusedBefore, holderSays, ""},
	{"checkout -B", "leased", "git checkout -q -B wt/T-0 HEAD~1", refusedBefore, holderSays, "files"},
	{"switch -c", "leased", "git switch -q -c newb", reportedAfter, "HEAD_OFF_TASK_BRANCH", ""},
	{"rebase", "leased", "git rebase -q other", refusedBefore, holderSays, "files"},
	{"merge", "leased", "git merge -q --no-edit other", refusedBefore, holderSays, "files"},
	{"cherry-pick", "leased", "git cherry-pick other", refusedBefore, holderSays, "files"},
	{"revert", "leased", "git revert --no-edit HEAD", refusedBefore, holderSays, "files"},
	{"stash", "leased", "echo change >> a.txt && git stash -q", refusedBefore, holderSays, "stash"},
	{"worktree add --force", "leased", "git worktree add -q --force ../zz wt/T-0", refusedBefore, holderSays, ""},

	{"update-ref", "canonical", "git update-ref refs/heads/wt/T-0 main", refusedBefore, holderSays, ""},
	{"update-ref -d", "canonical", "git update-ref -d refs/heads/wt/T-0", refusedBefore, holderSays, ""},
	{"branch -f", "canonical", "git branch -f wt/T-0 main", gitRefuses, "cannot force update the branch", ""},
	{"branch -m", "canonical", "git branch -m wt/T-0 renamed", refusedBefore, holderSays, ""},
	{"branch -d", "canonical", "git branch -D wt/T-0", gitRefuses, "[Cc]annot delete branch", ""},
	{"checkout, commit", "canonical", "git checkout -q --ignore-other-worktrees wt/T-0 && git commit -q --allow-empty -m rogue", refusedBefore, holderSays, ""},
	{"checkout, commit --no-verify", "canonical", "git checkout -q --ignore-other-worktrees wt/T-0 && git commit -q --no-verify --allow-empty -m rogue", refusedBefore, holderSays, ""},
	{"fetch into the branch", "canonical", "git fetch -q --update-head-ok . +main:refs/heads/wt/T-0", refusedBefore, holderSays, ""},
	{"worktree add --force", "canonical", "git worktree add -q --force ../aa wt/T-0", refusedBefore, holderSays, ""},
	{"worktree remove, add", "canonical", `git worktree remove "$W0" && git worktree add "$W0" wt/T-0`, gitRefuses, "cannot remove a locked working tree", ""},

	{"update-ref", "other", "git update-ref refs/heads/wt/T-0 HEAD", refusedBefore, holderSays, ""},
	{"branch -m", "other", "git branch -m wt/T-0 renamed", refusedBefore, holderSays, ""},
	{"worktree add --force", "other", "git worktree add -q --force ../yy wt/T-0", refusedBefore, holderSays, ""},
	{"checkout, commit", "other", "git checkout -q --ignore-other-worktrees wt/T-0; git commit -q --allow-empty -m rogue", refusedBefore, "HEAD_OFF_TASK_BRANCH", ""},
	{"git -C leased reset --hard", "other", `git -C "$W0" reset -q --hard HEAD~1`, refusedBefore, holderSays, "files"},
	{"git -C leased stash", "other", `echo change >> "$W0/a.txt" && git -C "$W0" stash -q`, refusedBefore, holderSays, "stash"},
}

// TestGateTable runs every row against one repository per place, in
// parallel; after each row the task branch and the leased worktree's HEAD
// must be as they were.
func TestGateTable(t *testing.T) {
	byWhere := map[string][]gateRow{}
	for _, r := range gateRows {
		byWhere[r.where] = append(byWhere[r.where], r)
	}
	// Set up one after another: wt-admin runs in this process, and its
	// command definitions are shared (urfave/cli writes to them).
	repos := map[string]*gateRepo{}
	for where := range byWhere {
		repos[where] = newGateRepo(t)
	}
	for where, rows := range byWhere {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			g := repos[where]
			for _, r := range rows {
				t.Run(r.name, func(t *testing.T) { g.check(t, r) })
				g.restore(t)
			}
		})
	}
}

type gateRepo struct {
	top, repo, w0, w1 string
	tip               string
}

func newGateRepo(t *testing.T) *gateRepo {
	top, repo, wts := governed(t, 2)
	g := &gateRepo{top: top, repo: repo, w0: wts[0], w1: wts[1]}
	git(t, repo, "switch", "-q", "-c", "other")
	os.WriteFile(filepath.Join(repo, "o.txt"), []byte("other\n"), 0o644)
	git(t, repo, "add", "o.txt")
	git(t, repo, "commit", "-q", "-m", "other")
	git(t, repo, "switch", "-q", "main")
	for _, f := range []string{"a.txt", "b.txt"} {
		os.WriteFile(filepath.Join(g.w0, f), []byte(f+"\n"), 0o644)
		git(t, g.w0, "add", f)
		// Set up, not judged: with every hook off.
		git(t, g.w0, append(slices.Clone(gitrepo.HooksOff), "commit", "-q", "-m", f)...)
	}
	g.tip = git(t, repo, "rev-parse", "refs/heads/wt/T-0")
	var out bytes.Buffer
	cmd := exec.Command("wt-hook", "install")
	cmd.Dir, cmd.Stdout, cmd.Stderr = repo, &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("wt-hook install: %v\n%s", err, out.String())
	}
	holder, _, _ := command(g.w0, "wt-exec", "--client-id", "agent-A", "--", "sleep", "600")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		holder.Process.Signal(syscall.SIGTERM)
		holder.Wait()
	})
	waitFor(t, "agent-A's lease", func() bool { l, ok := readLease(t, g.w0); return ok && l.Child != nil })
	return g
}

func (g *gateRepo) dir(where string) string {
	return map[string]string{"leased": g.w0, "canonical": g.repo, "other": g.w1}[where]
}

func (g *gateRepo) check(t *testing.T, r gateRow) {
	cmd, out, errb := command(g.dir(r.where), "sh", "-c", r.cmd)
	cmd.Env = append(cmd.Env, "W0="+g.w0, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@wt.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@wt.invalid", "GIT_EDITOR=true")
	res := resultOf(cmd, cmd.Run(), out, errb)
	if r.name == "branch -m" && gitrepo.Reftable(filepath.Join(g.repo, ".git")) {
		// git's gap, not wt's: the reftable backend (git 2.55) renames a
		// branch without a reference transaction, so no hook sees it
		// (docs/hook-managers.md, "What no hook sees"); git then fails
		// to point a worktree's HEAD at the new name (the gate refuses
		// that), with the branch renamed already. This row says so while
		// it holds, and fails the day git shows renames to the hook.
		if run(t, g.repo, "git", "rev-parse", "--verify", "-q", "refs/heads/wt/T-0").code == 0 {
			t.Errorf("%s from %s: the task branch is still there: the reftable rename gap is closed; make this row refusedBefore (exit %d)\n%s", r.cmd, r.where, res.code, res.stderr)
			return
		}
		git(t, g.repo, append(slices.Clone(gitrepo.HooksOff), "branch", "-m", "renamed", "wt/T-0")...)
		git(t, g.w0, append(slices.Clone(gitrepo.HooksOff), "symbolic-ref", "HEAD", "refs/heads/wt/T-0")...)
		return
	}
	if res.code == 0 {
		t.Errorf("%s from %s succeeded:\n%s%s", r.cmd, r.where, res.stdout, res.stderr)
	}
	if !regexp.MustCompile(r.says).MatchString(res.stderr) {
		t.Errorf("%s from %s: stderr does not say %q:\n%s", r.cmd, r.where, r.says, res.stderr)
	}
	if got := git(t, g.repo, "rev-parse", "--verify", "-q", "refs/heads/wt/T-0"); got != g.tip {
		t.Errorf("%s from %s moved the task branch to %s", r.cmd, r.where, got)
	}
	st := git(t, g.w0, "status", "--porcelain", "--untracked-files=no")
	stashed := git(t, g.w0, "stash", "list") != ""
	switch {
	case r.touches == "files" && st == "":
		t.Errorf("%s from %s: expected git to have rewritten files before the refusal; the worktree is clean", r.cmd, r.where)
	case r.touches == "stash" && (!stashed || st != ""):
		t.Errorf("%s from %s: expected the change moved into the stash and the files reset (status %q, stashed %v)", r.cmd, r.where, st, stashed)
	case r.touches == "" && (st != "" || stashed):
		t.Errorf("%s from %s: the worktree's files changed: %q (stashed %v)", r.cmd, r.where, st, stashed)
	}
	head := git(t, g.w0, "symbolic-ref", "-q", "HEAD")
	want := r.want
	if v, err := gittest.VersionOf("git"); err == nil && want == reportedAfter && v.AtLeast(2, 46) {
		want = refusedBefore // git 2.46 and later show the switch to reference-transaction
	}
	switch want {
	case reportedAfter:
		if head == "refs/heads/wt/T-0" {
			t.Errorf("%s: expected HEAD to have moved (git < 2.46 shows branch switches to no refusing hook); did git gain symref reporting?", r.cmd)
		}
		if c := run(t, g.w0, "git", "commit", "-q", "--allow-empty", "-m", "after"); c.code == 0 || !strings.Contains(c.stderr, "HEAD_OFF_TASK_BRANCH") {
			t.Errorf("a commit after %s: exit %d\n%s", r.cmd, c.code, c.stderr)
		}
	default:
		if head != "refs/heads/wt/T-0" {
			t.Errorf("%s from %s moved the leased worktree's HEAD to %s", r.cmd, r.where, head)
		}
	}
}

// restore undoes what a row left besides refs (a rebase, merge or
// cherry-pick in progress, rewritten files, a switched checkout), with
// wt's hooks off: the test's own clean-up is not what the gate judges.
func (g *gateRepo) restore(t *testing.T) {
	off := gitrepo.HooksOff
	for _, d := range []string{g.w0, g.repo, g.w1} {
		for _, a := range [][]string{{"rebase", "--abort"}, {"merge", "--abort"}, {"cherry-pick", "--abort"}, {"revert", "--abort"}} {
			exec.Command("git", append(append([]string{"-C", d}, off...), a...)...).Run() // Best effort: most are not in progress.
		}
	}
	git(t, g.w0, append(off, "checkout", "-q", "-f", "wt/T-0")...)
	git(t, g.w0, append(off, "reset", "-q", "--hard", g.tip)...)
	git(t, g.w0, append(off, "clean", "-qfd")...)
	git(t, g.w0, append(off, "stash", "clear")...)
	git(t, g.repo, append(off, "checkout", "-q", "-f", "main")...)
	git(t, g.w1, append(off, "checkout", "-q", "-f", "wt/T-1")...)
}

// TestGateUnseen backs the README rows that no hook sees: with agent-A
// holding w0, another process can still delete its untracked files (git
// clean), write its files, push its branch with --no-verify and commit
// with hooks switched off. Confinement (wt-exec --confine) is what stops
// the first three where the writer is an agent wt runs.
func TestGateUnseen(t *testing.T) {
	g := newGateRepo(t)
	remote := filepath.Join(g.top, "remote.git")
	git(t, g.top, "init", "-q", "--bare", remote)
	git(t, g.repo, "remote", "add", "origin", remote)
	os.WriteFile(filepath.Join(g.w0, "untracked.txt"), []byte("agent's notes\n"), 0o644)
	sh := func(cmd string) result {
		c, out, errb := command(g.w0, "sh", "-c", cmd)
		c.Env = append(c.Env, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@wt.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@wt.invalid")
		return resultOf(c, c.Run(), out, errb)
	}
	sh("git clean -qfd").ok(t)
	if exists(filepath.Join(g.w0, "untracked.txt")) {
		t.Error("git clean did not remove the untracked file")
	}
	sh("echo overwritten > a.txt").ok(t)
	if b, _ := os.ReadFile(filepath.Join(g.w0, "a.txt")); string(b) != "overwritten\n" {
		t.Errorf("a.txt: %q", b)
	}
	if r := sh("git push -q origin wt/T-0"); r.code == 0 || !regexp.MustCompile(holderSays).MatchString(r.stderr) {
		t.Errorf("a push with the hook: exit %d\n%s", r.code, r.stderr)
	}
	sh("git push -q --no-verify origin wt/T-0").ok(t)
	if got := git(t, g.top, "--git-dir="+remote, "rev-parse", "wt/T-0"); got != g.tip {
		t.Errorf("the remote has %s, want %s", got, g.tip)
	}
	// What agent harnesses run: git 2.54 and later still run wt's gate,
	// registered in configuration; older gits run no hook.
	r := sh("git -c core.hooksPath=/dev/null commit -q --allow-empty -m 'hooks off'")
	if v, err := gittest.VersionOf("git"); err != nil {
		t.Fatal(err)
	} else if v.ConfigHooks() {
		if r.code == 0 || !regexp.MustCompile(holderSays).MatchString(r.stderr) {
			t.Errorf("git %s, core.hooksPath=/dev/null: exit %d\n%s", v, r.code, r.stderr)
		}
	} else {
		r.ok(t)
	}
	// With every hook off, any git: the commit lands (out of scope, README).
	sh("git " + shell.Words(gitrepo.HooksOff...) + " commit -q --allow-empty -m 'hooks off'").ok(t)
	if got := git(t, g.repo, "log", "-1", "--format=%s", "wt/T-0"); got != "hooks off" {
		t.Errorf("with every hook off the commit should land (out of scope, README): %q", got)
	}
}

// TestGateSymrefGit: where git reports symbolic-ref updates to
// reference-transaction (2.46 and later), switching a leased worktree to
// another branch is refused before it happens. Older git shows a switch to
// no hook that can refuse it (see the switch -c row of TestGateTable).
func TestGateSymrefGit(t *testing.T) {
	v, err := gittest.VersionOf("git")
	if err != nil {
		t.Fatal(err)
	}
	if !v.AtLeast(2, 46) {
		t.Skipf("git %s does not report symbolic-ref updates to reference-transaction (2.46 does); the post-checkout report covers it here", v)
	}
	g := newGateRepo(t)
	r := run(t, g.w0, "git", "switch", "-q", "other")
	if r.code == 0 || !strings.Contains(r.stderr, "HEAD_OFF_TASK_BRANCH") {
		t.Errorf("switch: exit %d\n%s", r.code, r.stderr)
	}
	if head := git(t, g.w0, "symbolic-ref", "HEAD"); head != "refs/heads/wt/T-0" {
		t.Errorf("HEAD moved to %s", head)
	}
	// A worktree that a killed git worktree add left half made (its admin
	// dir still locked "initializing") does not make the leased worktree's
	// own switch look like that worktree's HEAD being written.
	stale := filepath.Join(g.repo, ".git", "worktrees", "half-made")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "locked"), []byte("initializing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, g.w0, "git", "switch", "-q", "other")
	if r.code == 0 || !strings.Contains(r.stderr, "HEAD_OFF_TASK_BRANCH") {
		t.Errorf("switch beside a half-made worktree: exit %d\n%s", r.code, r.stderr)
	}
	if head := git(t, g.w0, "symbolic-ref", "HEAD"); head != "refs/heads/wt/T-0" {
		t.Errorf("beside a half-made worktree, HEAD moved to %s", head)
	}
}
