package reftable

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wt-tool/wt/internal/gittest"
)

// gitRunner runs one git in one repository.
type gitRunner struct {
	tb   testing.TB
	git  string
	repo string
}

func (g gitRunner) run(stdin string, args ...string) string {
	g.tb.Helper()
	cmd := exec.Command(g.git, append([]string{"-C", g.repo}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+g.tb.TempDir(),
		"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@wt.invalid", "GIT_COMMITTER_NAME=c o", "GIT_COMMITTER_EMAIL=c@wt.invalid")
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		g.tb.Fatalf("git %v: %v\n%s", args, err, stderr.Bytes())
	}
	return string(out)
}

// newRepo makes a reftable repository with git at least 2.45, with
// settings (git config KEY VALUE pairs) applied before anything else.
func newRepo(t *testing.T, objectFormat string, settings ...string) gitRunner {
	git := gittest.Newer(t, 2, 45)
	dir := filepath.Join(t.TempDir(), "repo")
	g := gitRunner{tb: t, git: git, repo: "."}
	g.run("", "init", "-q", "--ref-format=reftable", "--object-format="+objectFormat, "-b", "main", dir)
	g.repo = dir
	for i := 0; i+1 < len(settings); i += 2 {
		g.run("", "config", settings[i], settings[i+1])
	}
	return g
}

// checkRefs compares every ref git lists (and some it has not) with what
// the stack at dir says.
func checkRefs(t *testing.T, g gitRunner, dir string) {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := g.run("", "for-each-ref", "--format=%(refname)%00%(objectname)%00%(symref)")
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "\x00")
		if len(f) != 3 {
			continue
		}
		n++
		r, ok, err := s.Ref(f[0])
		if err != nil || !ok {
			t.Fatalf("%s: ok %v, err %v", f[0], ok, err)
		}
		if f[2] != "" {
			if r.Target != f[2] || r.OID != "" {
				t.Errorf("%s: %+v, want symref to %s", f[0], r, f[2])
			}
			continue
		}
		if r.OID != f[1] || r.Target != "" {
			t.Errorf("%s: %+v, want %s", f[0], r, f[1])
		}
	}
	for _, name := range []string{"refs/heads/none", "refs/heads", "refs/heads/b", "refs/heads/b0000/x", "refs/zzz", "refs/", "A", ""} {
		if r, ok, err := s.Ref(name); ok || err != nil {
			t.Errorf("%q: %+v %v %v, want absent", name, r, ok, err)
		}
	}
	if n == 0 {
		t.Fatal("git lists no refs: nothing was compared")
	}
}

// checkLog compares ref's reflog as git shows it (newest first) with the
// stack's.
func checkLog(t *testing.T, g gitRunner, dir, ref string) int {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Log(ref)
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, e := range got {
		have = append(have, fmt.Sprintf("%s %s <%s> %d %s", e.New, e.Name, e.Email, e.Time, strings.TrimSuffix(e.Message, "\n")))
	}
	var want []string
	if strings.TrimSpace(g.run("", "for-each-ref", ref)) != "" || len(got) > 0 {
		out := g.run("", "log", "-g", "--date=unix", "--format=%H%x00%gn%x00%ge%x00%gd%x00%gs", ref, "--")
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if line == "" {
				continue
			}
			// %gd is ref@{UNIX}: keep the time.
			f := strings.Split(line, "\x00")
			at := strings.TrimSuffix(f[3][strings.LastIndex(f[3], "@{")+2:], "}")
			want = append(want, fmt.Sprintf("%s %s <%s> %s %s", f[0], f[1], f[2], at, f[4]))
		}
	}
	if !slices.Equal(have, want) {
		t.Errorf("reflog of %s:\n got  %q\n want %q", ref, have, want)
	}
	return len(want)
}

// TestRefsAgainstGit builds stacks the ways git does (one table per
// transaction, compaction, a large table with a ref index, tiny blocks
// with a multi-level index, deletions over older tables, symrefs, peeled
// tags, SHA-256) and compares every lookup with git's own answer.
func TestRefsAgainstGit(t *testing.T) {
	for _, c := range []struct {
		name, format string
		settings     []string
		refs         int
	}{
		{"small", "sha1", nil, 20},
		{"indexed", "sha1", nil, 3000},
		{"tiny-blocks", "sha1", []string{"reftable.blockSize", "256", "reftable.restartInterval", "2"}, 600},
		{"unaligned-no-compaction", "sha1", []string{"reftable.autoCompaction", "false"}, 50},
		{"sha256", "sha256", nil, 300},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newRepo(t, c.format, c.settings...)
			g.run("", "commit", "-q", "--allow-empty", "-m", "one")
			g.run("", "commit", "-q", "--allow-empty", "-m", "two")
			g.run("", "tag", "-a", "-m", "annotated", "v1")
			g.run("", "tag", "light")
			var stdin strings.Builder
			for i := 0; i < c.refs; i++ {
				fmt.Fprintf(&stdin, "create refs/heads/b%04d HEAD\n", i)
			}
			g.run(stdin.String(), "update-ref", "--stdin")
			// Transactions of their own, each a table on top.
			for i := 0; i < 8; i++ {
				g.run("", "update-ref", fmt.Sprintf("refs/heads/b%04d", i), "HEAD~1")
			}
			g.run("", "update-ref", "-d", "refs/heads/b0001")
			g.run("", "symbolic-ref", "refs/remotes/origin/HEAD", "refs/heads/b0002")
			g.run("", "branch", "-q", "wt/T-1")
			g.run("", "branch", "-q", "-D", "b0003")
			dir := filepath.Join(g.repo, ".git", "reftable")
			checkRefs(t, g, dir)
			if _, ok, _ := mustOpen(t, dir).Ref("refs/heads/b0001"); ok {
				t.Error("a deleted ref reads as present")
			}
			// One table, after compaction: the same answers.
			g.run("", "pack-refs", "--all")
			checkRefs(t, g, dir)
			if c.refs >= 600 {
				// What this case is for: lookups through a ref index (a
				// multi-level one with tiny blocks).
				st := mustOpen(t, dir)
				tb := st.tables[len(st.tables)-1]
				if tb.refIndex == 0 {
					t.Fatalf("%d refs in one table and no ref index: the indexed path is not exercised", c.refs)
				}
				root, _, err := tb.readBlock(int64(tb.refIndex), blockIndex)
				if err != nil {
					t.Fatal(err)
				}
				var first int64
				tb.records(root, func(r record, p *int) (bool, error) {
					v, err := varint(root.data, p)
					first = int64(v)
					return false, err
				})
				if b, _, _ := tb.readBlock(first, 0); c.name == "tiny-blocks" && b.typ != blockIndex {
					t.Fatalf("tiny blocks and a one-level index: the multi-level path is not exercised")
				}
			}
			tags := mustOpen(t, dir)
			if r, ok, err := tags.Ref("refs/tags/v1"); !ok || err != nil || r.OID != strings.TrimSpace(g.run("", "rev-parse", "refs/tags/v1")) {
				t.Errorf("annotated tag: %+v %v %v", r, ok, err)
			}
		})
	}
}

func mustOpen(t *testing.T, dir string) *Stack {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestHeadOfWorktrees: the main checkout's HEAD is in the shared stack, a
// linked worktree's in its own, detached or on a branch.
func TestHeadOfWorktrees(t *testing.T) {
	g := newRepo(t, "sha1")
	g.run("", "commit", "-q", "--allow-empty", "-m", "one")
	wt := filepath.Join(filepath.Dir(g.repo), "wt")
	g.run("", "worktree", "add", "-q", "-b", "wt/T-1", wt)
	det := filepath.Join(filepath.Dir(g.repo), "det")
	g.run("", "worktree", "add", "-q", "--detach", det)
	common := filepath.Join(g.repo, ".git")
	for _, c := range []struct {
		dir, target, oid string
	}{
		{filepath.Join(common, "reftable"), "refs/heads/main", ""},
		{filepath.Join(common, "worktrees", "wt", "reftable"), "refs/heads/wt/T-1", ""},
		{filepath.Join(common, "worktrees", "det", "reftable"), "", strings.TrimSpace(g.run("", "rev-parse", "HEAD"))},
	} {
		r, ok, err := mustOpen(t, c.dir).Ref("HEAD")
		if err != nil || !ok || r.Target != c.target || r.OID != c.oid {
			t.Errorf("HEAD in %s: %+v %v %v, want %q %q", c.dir, r, ok, err, c.target, c.oid)
		}
	}
	// The worktree's HEAD is not a shared ref.
	if r, ok, err := mustOpen(t, filepath.Join(common, "worktrees", "wt", "reftable")).Ref("refs/heads/main"); ok || err != nil {
		t.Errorf("shared ref in a worktree stack: %+v %v", r, err)
	}
}

// TestLogsAgainstGit: reflogs across tables, after compaction, after an
// entry is deleted, after expiry, after the branch is deleted.
func TestLogsAgainstGit(t *testing.T) {
	for _, c := range []struct {
		name     string
		settings []string
	}{
		{"default", nil},
		{"tiny-blocks", []string{"reftable.blockSize", "256", "reftable.restartInterval", "2"}},
		{"no-compaction", []string{"reftable.autoCompaction", "false"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newRepo(t, "sha1", c.settings...)
			dir := filepath.Join(g.repo, ".git", "reftable")
			for i := 0; i < 40; i++ {
				g.run("", "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("commit %d with a message long enough to fill blocks", i))
			}
			g.run("", "branch", "-q", "wt/T-1")
			for i := 0; i < 5; i++ {
				g.run("", "update-ref", "-m", fmt.Sprintf("move %d", i), "refs/heads/wt/T-1", fmt.Sprintf("HEAD~%d", i+1))
			}
			if n := checkLog(t, g, dir, "refs/heads/main"); n != 40 {
				t.Errorf("main has %d reflog entries, want 40", n)
			}
			checkLog(t, g, dir, "refs/heads/wt/T-1")
			checkLog(t, g, dir, "HEAD")
			g.run("", "pack-refs", "--all")
			checkLog(t, g, dir, "refs/heads/main")
			g.run("", "reflog", "delete", "refs/heads/wt/T-1@{2}")
			if n := checkLog(t, g, dir, "refs/heads/wt/T-1"); n != 5 {
				t.Errorf("after a reflog delete: %d entries, want 5", n)
			}
			g.run("", "reflog", "expire", "--expire=now", "--expire-unreachable=now", "refs/heads/main")
			checkLog(t, g, dir, "refs/heads/main")
			g.run("", "branch", "-q", "-D", "wt/T-1")
			if n := checkLog(t, g, dir, "refs/heads/wt/T-1"); n != 0 {
				t.Errorf("a deleted branch keeps %d reflog entries", n)
			}
			if got, err := mustOpen(t, dir).Log("refs/heads/none"); err != nil || len(got) != 0 {
				t.Errorf("a ref without a log: %v %v", got, err)
			}
		})
	}
}

// TestMalformed: a damaged table is an error, never an absent ref.
func TestMalformed(t *testing.T) {
	g := newRepo(t, "sha1")
	g.run("", "commit", "-q", "--allow-empty", "-m", "one")
	dir := filepath.Join(g.repo, ".git", "reftable")
	names := strings.Fields(readFile(t, filepath.Join(dir, "tables.list")))
	table := filepath.Join(dir, names[len(names)-1])
	orig := []byte(readFile(t, table))
	for name, damage := range map[string]func([]byte) []byte{
		"truncated":   func(b []byte) []byte { return b[:len(b)-10] },
		"bad magic":   func(b []byte) []byte { b[0] = 'X'; return b },
		"footer crc":  func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b },
		"bad version": func(b []byte) []byte { b[4] = 9; return b },
		"short":       func(b []byte) []byte { return b[:20] },
	} {
		if err := os.WriteFile(table, damage(slices.Clone(orig)), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir)
		if err == nil {
			_, _, err = s.Ref("refs/heads/main")
			s.Close()
		}
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	os.WriteFile(table, orig, 0o644)
	os.Remove(table)
	if _, err := Open(dir); err == nil {
		t.Error("a table named in tables.list and missing for good: no error")
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
