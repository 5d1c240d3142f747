package wrapper

import (
	"os"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wtfixture"
)

// TestMain keeps every git away from the configuration of the user and of
// the machine (gittest.Setenv), before any test runs.
func TestMain(m *testing.M) {
	gittest.Setenv()
	os.Exit(m.Run())
}

// hgit runs git in dir and returns its trimmed output.
func hgit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return gittest.Git(t, dir, args...)
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
	w := wtfixture.New(t, policy.Change{})
	a := w.Allocate("T-1", "", "w1")
	c, err := gitrepo.Locate(w.Path("w1"))
	if err != nil {
		t.Fatal(err)
	}
	return fixture{top: w.Top, repo: w.R, c: c, a: a, base: w.Base}
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
