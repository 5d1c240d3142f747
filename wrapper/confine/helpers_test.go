package confine

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/gitrepo"
)

// hgit runs git in dir without the user's or the system's configuration
// and returns its trimmed output. The repositories it makes keep their refs
// in files whatever the environment asks (GIT_DEFAULT_REF_FORMAT, set by
// make test-newer-git): these tests lay out loose refs and compare plans
// made for them; the planner on reftable is the end-to-end scripts'
// (confine*.txtar under make test-newer-git).
func hgit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return hgitIn(t, dir, "", args...)
}

// hgitIn is hgit with stdin.
func hgitIn(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t",
		"GIT_DEFAULT_REF_FORMAT=files")
	cmd.Stdin = strings.NewReader(stdin)
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

// repo is a repository with two linked worktrees, w1 on branch b1 and w2
// on wt/T-2, made under a temporary directory top.
type repo struct {
	top  string
	c    gitrepo.Checkout // w1's
	main gitrepo.Checkout // the canonical checkout's
	base string           // the commit both branches start at
}

func newRepo(t *testing.T, b1 string) repo {
	t.Helper()
	top := t.TempDir()
	if p, err := filepath.EvalSymlinks(top); err == nil {
		top = p
	}
	r := filepath.Join(top, "repo")
	hgit(t, top, "init", "-q", "-b", "main", r)
	hgit(t, r, "commit", "-q", "--allow-empty", "-m", "init")
	hgit(t, r, "worktree", "add", "-q", "-b", b1, filepath.Join(top, "w1"))
	hgit(t, r, "worktree", "add", "-q", "-b", "wt/T-2", filepath.Join(top, "w2"))
	c, err := gitrepo.Locate(filepath.Join(top, "w1"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := gitrepo.Locate(r)
	if err != nil {
		t.Fatal(err)
	}
	return repo{top: top, c: c, main: m, base: hgit(t, r, "rev-parse", "HEAD")}
}

// commitIn writes a commit (file f.txt holding msg) into the repository
// at dir without touching any ref, and returns its name.
func commitIn(t *testing.T, dir, msg, parent string) string {
	t.Helper()
	blob := hgitIn(t, dir, msg+"\n", "hash-object", "-w", "--stdin")
	tree := hgitIn(t, dir, "100644 blob "+blob+"\tf.txt\n", "mktree")
	args := []string{"commit-tree", "-m", msg, tree}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	return hgit(t, dir, args...)
}

// ruleDirs are a plan's writable directories, in order.
func ruleDirs(p *Plan) []string {
	var out []string
	for _, r := range p.Rules {
		out = append(out, r.Path)
	}
	return out
}

// mkdirs makes each directory (and its parents).
func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// exists reports whether p exists (without following a last symlink).
func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// readFile returns p's content, failing the test when it cannot be read.
func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lines are those of text that hold sub.
func lines(text []string, sub string) []string {
	var out []string
	for _, l := range text {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}
