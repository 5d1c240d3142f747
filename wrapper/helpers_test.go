package wrapper

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/store"
)

// hgit runs git in dir without the user's or the system's configuration
// and returns its trimmed output.
func hgit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("git %v: %v\n%s", args, err, ee.Stderr)
		}
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// fixture is a repository set up for wt with one allocation: task T-1 on
// branch wt/T-1 in the linked worktree w1.
type fixture struct {
	top  string
	repo *alloc.Repo
	c    gitrepo.Checkout // w1's
	a    store.Allocation
	base string // where wt/T-1 starts
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	top := t.TempDir()
	if p, err := filepath.EvalSymlinks(top); err == nil {
		top = p
	}
	r := filepath.Join(top, "repo")
	hgit(t, top, "init", "-q", "-b", "main", r)
	hgit(t, r, "commit", "-q", "--allow-empty", "-m", "init")
	ctx := context.Background()
	main := "main"
	if _, err := policy.Init(ctx, r, policy.Change{PublicationBranch: &main}); err != nil {
		t.Fatal(err)
	}
	repo, err := alloc.Open(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	res, err := repo.Allocate(ctx, alloc.Request{TaskKey: "T-1", Owner: "alice", Path: filepath.Join(top, "w1")})
	if err != nil {
		t.Fatal(err)
	}
	c, err := gitrepo.Locate(filepath.Join(top, "w1"))
	if err != nil {
		t.Fatal(err)
	}
	return fixture{top: top, repo: repo, c: c, a: res.Allocation, base: hgit(t, r, "rev-parse", "HEAD")}
}

// wantCode fails unless err is a decision with code.
func wantCode(t *testing.T, err error, code string) *decision.Error {
	t.Helper()
	d, ok := decision.As(err)
	if !ok || d.Code != code {
		t.Fatalf("got %v, want %s", err, code)
	}
	return d
}

// notes collects what a supervisor says through Notify.
type notes struct{ said []string }

func (n *notes) notify(s string) { n.said = append(n.said, s) }

// holding reports whether one notice holds sub.
func (n *notes) holding(sub string) bool {
	for _, s := range n.said {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
