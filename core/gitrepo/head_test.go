package gitrepo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/internal/gittest"
)

// TestReadHead: a branch, a detached HEAD, and a HEAD that cannot be
// taken for either: the reftable stub where there is no table stack, a
// HEAD that is not there.
func TestReadHead(t *testing.T) {
	t.Parallel()
	r, top, base := newRepo(t)
	gittest.Git(t, r.TopLevel, "worktree", "add", "-q", "--detach", filepath.Join(top, "det"))
	gittest.Git(t, r.TopLevel, "worktree", "add", "-q", "--detach", filepath.Join(top, "new"))
	gittest.Git(t, filepath.Join(top, "new"), "checkout", "-q", "--orphan", "unborn")
	if h, err := ReadHead(r.GitDir, r.CommonDir); err != nil || h.Target != "refs/heads/main" || h.Branch() != "main" || h.OID != "" {
		t.Errorf("main: %+v %v", h, err)
	}
	det := AdminDir(r.CommonDir, "det")
	if h, err := ReadHead(det, r.CommonDir); err != nil || h.Target != "" || h.OID != base || h.Branch() != "" {
		t.Errorf("detached: %+v %v", h, err)
	}
	if c, err := HeadCommit(det, r.CommonDir); err != nil || c != base {
		t.Errorf("HeadCommit detached: %q %v", c, err)
	}
	if c, err := HeadCommit(AdminDir(r.CommonDir, "new"), r.CommonDir); err != nil || c != "" {
		t.Errorf("HeadCommit of a branch with no commit yet: %q %v", c, err)
	}
	if h := (Head{Target: "refs/remotes/origin/main"}); h.Branch() != "" {
		t.Errorf("a remote-tracking target taken for a branch: %q", h.Branch())
	}
	os.WriteFile(filepath.Join(det, "HEAD"), []byte(reftableStub+"\n"), 0o644)
	if h, err := ReadHead(det, r.CommonDir); err == nil {
		t.Errorf("the reftable stub without a stack: %+v", h)
	}
	os.Remove(filepath.Join(det, "HEAD"))
	if h, err := ReadHead(det, r.CommonDir); err == nil {
		t.Errorf("no HEAD: %+v", h)
	}
}

// TestOnBranchDuringARebase: a checkout detached by a rebase of branch f
// counts as on f (its writer may finish the rebase), and on no other
// branch; one on a branch counts as on that branch alone.
func TestOnBranchDuringARebase(t *testing.T) {
	t.Parallel()
	r, top, _ := newRepo(t)
	w := linked(t, r, top, "f")
	commitFile(t, w, "a", "theirs\n")
	commitFile(t, r.TopLevel, "a", "ours\n")
	cmd := exec.Command("git", "-C", w, "rebase", "main")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("the rebase did not stop on its conflict:\n%s", out)
	}
	c, err := Locate(w)
	if err != nil || !c.Detached {
		t.Fatalf("Locate during the rebase: %+v %v", c, err)
	}
	if got := RebaseHeadName(c.GitDir); got != "refs/heads/wt/f" {
		t.Fatalf("RebaseHeadName: %q", got)
	}
	if !OnBranch(true, "", c.GitDir, "wt/f") || OnBranch(true, "", c.GitDir, "main") {
		t.Error("a rebase of wt/f counts as on the wrong branch")
	}
	if !OnBranch(false, "main", r.GitDir, "main") || OnBranch(false, "main", r.GitDir, "wt/f") {
		t.Error("a checkout on main counts as on the wrong branch")
	}
	if RebaseHeadName(r.GitDir) != "" || OnBranch(true, "", r.GitDir, "main") {
		t.Error("a checkout with no rebase in progress has a rebase's branch")
	}
}

// TestReadRefRefusesWhatItCannotRead: a ref name outside refs/ is refused;
// a loose ref that is not a regular file is an error, never taken for a
// missing ref.
func TestReadRefRefusesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	r, _, _ := newRepo(t)
	for _, ref := range []string{"HEAD", "refs/heads/../../config", "heads/main"} {
		if _, err := ReadRef(r.CommonDir, ref); err == nil {
			t.Errorf("ReadRef(%q) accepted", ref)
		}
		if _, err := ReadReflog(r.CommonDir, ref); err == nil {
			t.Errorf("ReadReflog(%q) accepted", ref)
		}
	}
	if err := unix.Mkfifo(filepath.Join(r.CommonDir, "refs", "heads", "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v, err := ReadRef(r.CommonDir, "refs/heads/fifo"); err == nil {
		t.Errorf("a FIFO as a ref read as %q", v)
	}
	if v, err := ReadRefValues(r.CommonDir, "refs/heads/fifo"); err == nil {
		t.Errorf("a FIFO as a ref read as %+v", v)
	}
	if m := MarkReflog(r.CommonDir, "refs/heads/fifo"); m.Tip != "" {
		t.Errorf("an unreadable ref marked at %q", m.Tip)
	}
}

// TestReflogSinceAfterExpiry: entries added after a mark are read; a
// reflog that lost entries since (expired, or removed) is not ok, because
// what was added cannot be told; a ref that never had a reflog has none.
func TestReflogSinceAfterExpiry(t *testing.T) {
	t.Parallel()
	r, _, _ := newRepo(t)
	const ref = "refs/heads/main"
	commitFile(t, r.TopLevel, "a", "a")
	mark := MarkReflog(r.CommonDir, ref)
	tip := commitFile(t, r.TopLevel, "b", "b")
	// A line git would not write is passed over.
	f, _ := os.OpenFile(filepath.Join(r.CommonDir, "logs", ref), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("not a reflog line\n" + tip + " " + tip + " who <w@x> notatime +0000\tbad time\n")
	f.Close()
	since, ok, err := ReflogSince(r.CommonDir, mark)
	if err != nil || !ok || len(since) != 1 || since[0].New != tip || since[0].Msg != "commit: add b" {
		t.Fatalf("ReflogSince: %+v %v %v", since, ok, err)
	}
	gittest.Git(t, r.TopLevel, "reflog", "expire", "--expire=all", "--all")
	if since, ok, err := ReflogSince(r.CommonDir, mark); ok || err != nil || len(since) != 0 {
		t.Errorf("after expiry: %+v %v %v, want not ok", since, ok, err)
	}
	os.Remove(filepath.Join(r.CommonDir, "logs", ref))
	if since, ok, err := ReflogSince(r.CommonDir, mark); ok || err != nil || len(since) != 0 {
		t.Errorf("after removal: %+v %v %v, want not ok", since, ok, err)
	}
	if log, err := ReadReflog(r.CommonDir, "refs/tags/none"); err != nil || len(log) != 0 {
		t.Errorf("no reflog: %+v %v", log, err)
	}
	if m := MarkReflog(r.CommonDir, "refs/tags/none"); m.Tip != "" || !m.Same(MarkReflog(r.CommonDir, "refs/tags/none")) {
		t.Errorf("an absent ref's marks: %+v", m)
	}
}

// TestHeadsAndViewsOnBothBackends: a detached and an unborn HEAD, and a
// view's refs listed through a stand-in git dir, in a files and a
// reftable repository alike.
func TestHeadsAndViewsOnBothBackends(t *testing.T) {
	t.Parallel()
	for name, pick := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			git, format := pick(t)
			top, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			repo := filepath.Join(top, "repo")
			run := func(dir string, args ...string) string {
				t.Helper()
				cmd := exec.Command(git, append([]string{"-C", dir}, args...)...)
				cmd.Env = append(os.Environ(), "GIT_DEFAULT_REF_FORMAT="+format)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
				return strings.TrimSpace(string(out))
			}
			initArgs := []string{"init", "-q", "-b", "main"}
			if format == "reftable" {
				initArgs = append(initArgs, "--ref-format=reftable")
			}
			run(top, append(initArgs, repo)...)
			run(repo, "commit", "-q", "--allow-empty", "-m", "one")
			base := run(repo, "rev-parse", "HEAD")
			run(repo, "worktree", "add", "-q", "--detach", filepath.Join(top, "det"))
			common := filepath.Join(repo, ".git")
			det := AdminDir(common, "det")
			if h, err := ReadHead(det, common); err != nil || h.OID != base || h.Target != "" {
				t.Errorf("detached: %+v %v", h, err)
			}
			run(repo, "checkout", "-q", "--orphan", "unborn")
			if c, err := HeadCommit(common, common); err != nil || c != "" {
				t.Errorf("unborn: %q %v", c, err)
			}
			// A view's refs: a copy of the repository's, given a branch of
			// its own; the repository's main then moves on.
			view := filepath.Join(top, "view")
			if out, err := exec.Command("cp", "-a", common, view).CombinedOutput(); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if out, err := exec.Command(git, "--git-dir="+view, "update-ref", "refs/heads/wt/T-1", base).CombinedOutput(); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			run(repo, "checkout", "-q", "main")
			run(repo, "commit", "-q", "--allow-empty", "-m", "two")
			next := run(repo, "rev-parse", "HEAD")
			refs, err := ListRefsOf(t.Context(), common, view)
			if err != nil || len(refs) != 2 || refs["refs/heads/wt/T-1"] != base || refs["refs/heads/main"] != base {
				t.Errorf("the view's refs: %v %v", refs, err)
			}
			if own, err := ListRefsOf(t.Context(), common, common); err != nil || len(own) != 1 || own["refs/heads/main"] != next {
				t.Errorf("the repository's refs: %v %v", own, err)
			}
		})
	}
}
