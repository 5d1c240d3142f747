package confine

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
)

// git runs git in dir and returns its trimmed output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return hgit(t, dir, args...)
}

// worktrees makes a repository with two linked worktrees on wt/T-1 and
// wt/T-2 and returns the first's checkout.
func worktrees(t *testing.T) (top string, c gitrepo.Checkout) {
	t.Helper()
	top = t.TempDir()
	repo := filepath.Join(top, "repo")
	git(t, top, "init", "-q", "-b", "main", repo)
	git(t, repo, "commit", "-q", "--allow-empty", "-m", "init")
	git(t, repo, "worktree", "add", "-q", "-b", "wt/T-1", filepath.Join(top, "w1"))
	git(t, repo, "worktree", "add", "-q", "-b", "wt/T-2", filepath.Join(top, "w2"))
	c, err := gitrepo.Locate(filepath.Join(top, "w1"))
	if err != nil {
		t.Fatal(err)
	}
	return top, c
}

// pretend makes New see a machine where a view is (or is not) possible.
func pretend(t *testing.T, root, userns bool) {
	m, u := mountNSAllowed, userNSAllowed
	mountNSAllowed, userNSAllowed = func() bool { return root }, func() bool { return userns }
	t.Cleanup(func() { mountNSAllowed, userNSAllowed = m, u })
}

func TestNewRefusals(t *testing.T) {
	top, c := worktrees(t)
	pretend(t, false, false)
	main, err := gitrepo.Locate(filepath.Join(top, "repo"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		in   Input
		code string
		hint string
	}{
		{"the canonical checkout", Input{Checkout: main}, decision.ConfinementUnavailable, "wt-exec --task KEY"},
		{"a relative --allow-write", Input{Checkout: c, Allow: []string{"rel/dir"}}, decision.Usage, "absolute path"},
		{"a missing --allow-write", Input{Checkout: c, Allow: []string{filepath.Join(top, "nothere")}}, decision.ConfinementConflict, "mkdir -p " + filepath.Join(top, "nothere")},
		{"an --allow-write holding another worktree", Input{Checkout: c, Allow: []string{top}}, decision.ConfinementConflict, "holds no worktree"},
		{"an --allow-write in the git dir", Input{Checkout: c, Allow: []string{filepath.Join(top, "repo", ".git", "objects")}}, decision.ConfinementConflict, "holds no worktree"},
		{"a branch beside the publication branch, no view", Input{Checkout: c, Branch: "feature", Publication: "main"}, decision.ConfinementConflict, "--branch wt/KEY/work"},
		{"an unknown agent profile", Input{Checkout: c, Agent: "nosuch"}, decision.Usage, "pass one of"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.TempDir, tc.in.ABI, tc.in.DryRun = t.TempDir(), 6, true
			_, err := New(tc.in)
			var d *decision.Error
			if err == nil || !asDecision(err, &d) || d.Code != tc.code || !strings.Contains(d.Hint, tc.hint) {
				t.Fatalf("New: %v, want %s with a hint naming %q", err, tc.code, tc.hint)
			}
		})
	}
}

func asDecision(err error, d **decision.Error) bool {
	e, ok := err.(*decision.Error)
	*d = e
	return ok
}

func TestNewRules(t *testing.T) {
	top, c := worktrees(t)
	home := filepath.Join(top, "home")
	for _, d := range []string{".cache", ".npm"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	allowed := filepath.Join(top, "shared")
	if err := os.Mkdir(allowed, 0o755); err != nil {
		t.Fatal(err)
	}
	paths := func(p *Plan) map[string]bool {
		out := map[string]bool{}
		for _, r := range p.Rules {
			out[r.Path] = true
		}
		return out
	}
	t.Run("landlock only", func(t *testing.T) {
		pretend(t, false, false)
		p, err := New(Input{Checkout: c, Branch: "wt/T-1", Home: home, Allow: []string{allowed}, TempDir: t.TempDir(), ABI: 6, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		got := paths(p)
		for _, want := range []string{c.TopLevel, c.GitDir, filepath.Join(c.CommonDir, "objects"), filepath.Join(c.CommonDir, "refs", "heads", "wt"),
			filepath.Join(c.CommonDir, "refs", "remotes"), filepath.Join(home, ".cache"), filepath.Join(home, ".npm"), allowed} {
			if !got[want] {
				t.Errorf("%s is not writable: %v", want, p.Rules)
			}
		}
		if got[c.CommonDir] || p.View() != nil || p.Refs != GuardLandlock || !p.Signals {
			t.Errorf("without a view the common dir is not writable whole: %+v", p)
		}
		text := strings.Join(p.Explain(c.TopLevel), "\n")
		for _, want := range []string{"refs     shared: other branches in refs/heads/wt/", "the stash and ref deletions fail", "can delete or rewrite objects"} {
			if !strings.Contains(text, want) {
				t.Errorf("--explain does not say %q:\n%s", want, text)
			}
		}
	})
	for _, userns := range []bool{false, true} {
		t.Run(map[bool]string{false: "view as root", true: "view in a user namespace"}[userns], func(t *testing.T) {
			pretend(t, !userns, userns)
			p, err := New(Input{Checkout: c, Branch: "feature", Publication: "main", Home: home, TempDir: t.TempDir(), ABI: 5, DryRun: true})
			if err != nil {
				t.Fatal(err) // a view needs no directory of its own for the branch
			}
			got := paths(p)
			if !got[c.CommonDir] || got[filepath.Join(c.CommonDir, "objects")] || p.View() == nil || p.View().userNS != userns || p.Signals {
				t.Fatalf("a view makes the common dir writable as the view: %+v", p.Rules)
			}
			text := strings.Join(p.Explain(c.TopLevel), "\n")
			if !strings.Contains(text, "is an overlay") || strings.Contains(text, "made in a user namespace") != userns {
				t.Errorf("--explain:\n%s", text)
			}
			if r := p.Record(); r.View == "" || len(r.Write) != len(p.Rules) {
				t.Errorf("the lease's record: %+v", r)
			}
		})
	}
	t.Run("a default dir in the repository is dropped", func(t *testing.T) {
		pretend(t, false, false)
		cache := filepath.Join(top, "w2", "cache")
		if err := os.Mkdir(cache, 0o755); err != nil {
			t.Fatal(err)
		}
		p, err := New(Input{Checkout: c, Home: home, CacheHome: cache, TempDir: t.TempDir(), ABI: 6, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if paths(p)[cache] || len(p.Dropped) != 1 || p.Dropped[0].Path != cache || paths(p)[filepath.Join(home, ".cache")] {
			t.Errorf("XDG_CACHE_HOME in another worktree: rules %v, dropped %v", p.Rules, p.Dropped)
		}
	})
}

func TestOverlayEscape(t *testing.T) {
	if got := overlayEscape(`/a,b:c\d`); got != `/a\,b\:c\\d` {
		t.Fatalf("overlayEscape: %s", got)
	}
}

func TestPackedRefs(t *testing.T) {
	f := filepath.Join(t.TempDir(), "packed-refs")
	os.WriteFile(f, []byte("# pack-refs with: peeled fully-peeled sorted \n1111 refs/heads/a\n2222 refs/tags/v1\n^3333\n"), 0o644)
	got, err := packedRefs(f)
	if err != nil || len(got) != 2 || got["refs/heads/a"] != "1111" || got["refs/tags/v1"] != "2222" {
		t.Fatalf("packedRefs: %v %v", got, err)
	}
	if got, err := packedRefs(f + ".none"); got != nil || err != nil {
		t.Fatalf("no packed-refs: %v %v", got, err)
	}
}

// TestUpperRefs: the refs a run wrote are those of its upper layer, but
// the copies seed made and left alone; a packed-refs of its own counts
// where it differs from the real one.
func TestUpperRefs(t *testing.T) {
	common, dir := t.TempDir(), t.TempDir()
	v := &View{Common: common, Dir: dir, seeded: map[string]string{"refs/heads/wt/T-2": "2222\n", "refs/heads/wt/T-3": "3333\n"}}
	up := v.Upper()
	write := func(rel, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(up, rel)), 0o755)
		if err := os.WriteFile(filepath.Join(up, rel), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("refs/heads/wt/T-2", "2222\n")  // seeded, untouched
	write("refs/heads/wt/T-3", "9999\n")  // seeded, then moved
	write("refs/heads/feature", "4444\n") // made by the run
	write("refs/heads/wt/T-1.lock", "x")  // a lock: never a ref
	write("packed-refs", "5555 refs/tags/v1\n6666 refs/tags/v2\n")
	os.WriteFile(filepath.Join(common, "packed-refs"), []byte("5555 refs/tags/v1\n7777 refs/tags/v3\n"), 0o644)
	got, err := upperRefs(v)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"refs/heads/feature", "refs/heads/wt/T-3", "refs/tags/v2", "refs/tags/v3"}
	if len(got) != len(want) {
		t.Fatalf("upperRefs: %v, want %v", got, want)
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("upperRefs: %v lacks %s", got, w)
		}
	}
}

// TestCopyStack copies a table stack: the list and its tables.
func TestCopyStack(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(src, "a.ref"), []byte("A"), 0o444)
	os.WriteFile(filepath.Join(src, "b.ref"), []byte("B"), 0o444)
	os.WriteFile(filepath.Join(src, "tables.list"), []byte("a.ref\nb.ref\n"), 0o644)
	if err := copyStack(src, dst); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a.ref": "A", "b.ref": "B", "tables.list": "a.ref\nb.ref\n"} {
		if b, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v", name, b, err)
		}
	}
	os.WriteFile(filepath.Join(src, "tables.list"), []byte("../evil\n"), 0o644)
	if err := copyStack(src, t.TempDir()); err == nil {
		t.Error("a table named with a slash was copied")
	}
	os.WriteFile(filepath.Join(src, "tables.list"), []byte("gone.ref\n"), 0o644)
	if err := copyStack(src, t.TempDir()); err == nil || !strings.Contains(err.Error(), "changed five times") {
		t.Errorf("a list naming a missing table: %v", err)
	}
}

// TestPublisher publishes from a stand-in for a run's view (a copy of the
// repository as its upper layer, read through a descriptor as wt-exec
// reads the view): a commit, then a rewrite, each with its objects and a
// reflog message; then the real branch moves outside the run and the
// run's next tip is kept, not published over it.
func TestPublisher(t *testing.T) {
	top, c := worktrees(t)
	base := git(t, c.TopLevel, "rev-parse", "HEAD")
	dir := filepath.Join(top, "view")
	os.Mkdir(dir, 0o700)
	upper := filepath.Join(dir, "upper")
	git(t, top, "clone", "-q", "--bare", "--no-local", filepath.Join(top, "repo"), upper)
	git(t, upper, "update-ref", "refs/heads/wt/T-1", base)
	v := &View{Common: c.CommonDir, Dir: dir, fd: -1}
	fd, err := os.Open(upper)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	v.fd = int(fd.Fd())
	p := NewPublisher(v, "T-1", "wt/T-1", base, "main")
	var moves []Move
	var notes []string
	p.Published = func(m Move) { moves = append(moves, m) }
	p.Notify = func(s string) { notes = append(notes, s) }
	ctx := context.Background()
	commit := func(msg, parent string) string {
		blob := strings.TrimSpace(gitIn(t, upper, msg+"\n", "hash-object", "-w", "--stdin"))
		tree := strings.TrimSpace(gitIn(t, upper, "100644 blob "+blob+"\tf.txt\n", "mktree"))
		args := []string{"commit-tree", "-m", msg, tree}
		if parent != "" {
			args = append(args, "-p", parent)
		}
		return git(t, upper, args...)
	}
	one := commit("one", base)
	git(t, upper, "update-ref", "refs/heads/wt/T-1", one)
	if err := p.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if got := git(t, c.TopLevel, "rev-parse", "refs/heads/wt/T-1"); got != one {
		t.Fatalf("published %s, want %s", got, one)
	}
	if got := git(t, c.TopLevel, "show", "-s", "--format=%s", "wt/T-1:f.txt"); got == "" {
		t.Fatal("the published commit's tree is not readable")
	}
	rewrite := commit("two", base)
	git(t, upper, "update-ref", "refs/heads/wt/T-1", rewrite)
	if err := p.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	log := git(t, c.TopLevel, "reflog", "show", "--format=%gs", "wt/T-1")
	if !strings.Contains(log, "(rewrite)") || !strings.Contains(log, "(commit)") || len(moves) != 2 || !moves[1].Rewrite || moves[0].Rewrite {
		t.Fatalf("reflog %q, moves %+v", log, moves)
	}
	// Someone else moves the branch; the run's next tip is kept.
	git(t, c.TopLevel, "update-ref", "refs/heads/wt/T-1", base)
	three := commit("three", rewrite)
	git(t, upper, "update-ref", "refs/heads/wt/T-1", three)
	if err := p.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if got := git(t, c.TopLevel, "rev-parse", "refs/heads/wt/T-1"); got != base {
		t.Fatalf("the branch that moved outside the run was overwritten: %s", got)
	}
	if got := git(t, c.TopLevel, "rev-parse", KeptRef("T-1")); got != three {
		t.Fatalf("kept %s, want %s", got, three)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "PUBLISH_CONFLICT") {
		t.Fatalf("notices: %q", notes)
	}
	// An object the view names under a name its content does not have is
	// never published: git checks each one.
	bad := commit("four", three)
	obj := filepath.Join(upper, "objects", bad[:2], bad[2:])
	os.Chmod(obj, 0o644)
	if err := os.WriteFile(obj, []byte("not an object"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(upper, "refs", "heads", "wt", "T-1"), []byte(bad+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(ctx); err == nil || !strings.Contains(err.Error(), "PUBLISH_FAILED") {
		t.Fatalf("a corrupt object was published: %v", err)
	}
	if got := git(t, c.TopLevel, "rev-parse", KeptRef("T-1")); got != three {
		t.Fatalf("kept %s after a failed publication, want %s", got, three)
	}
}

// gitIn runs git in dir with stdin.
func gitIn(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}
