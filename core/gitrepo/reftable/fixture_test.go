package reftable

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var updateFixture = flag.Bool("update-fixture", false, "rewrite testdata/ from a newer git (WT_TEST_GIT_NEWER)")

// fixtureDir holds reftable stacks git 2.55 wrote, and what git said of
// them, so that the reader is tested on every machine: make test runs
// with Debian 12's git 2.39, which cannot make a reftable repository.
// Regenerate with
//
//	WT_TEST_GIT_NEWER=$(bash scripts/git-newer.sh) go test ./core/gitrepo/reftable/ -run TestFixture -update-fixture
const fixtureDir = "testdata"

// fixtures are the stacks: tiny blocks (a multi-level ref index, several
// log blocks with an index), and a stack of tables that were never
// compacted, with deletions over older tables.
var fixtures = []struct {
	name     string
	settings []string
}{
	{"tiny-blocks", []string{"reftable.blockSize", "256", "reftable.restartInterval", "2"}},
	{"stacked", []string{"reftable.autoCompaction", "false"}},
}

func TestFixture(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			dir := filepath.Join(fixtureDir, f.name)
			if *updateFixture {
				writeFixture(t, dir, f.settings)
			}
			want, err := os.ReadFile(filepath.Join(dir, "want.txt"))
			if err != nil {
				t.Fatal(err)
			}
			s, err := Open(filepath.Join(dir, "reftable"))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := describe(t, s, string(want)); got != string(want) {
				t.Errorf("the stack reads\n%s\ngit said\n%s", got, want)
			}
		})
	}
}

// describe answers, for each "ref NAME" and "log NAME" line of want, what
// the stack says, in the format writeFixture writes git's answers in.
func describe(t *testing.T, s *Stack, want string) string {
	var b strings.Builder
	for _, line := range strings.Split(want, "\n") {
		kind, name, _ := strings.Cut(line, " ")
		switch kind {
		case "ref":
			r, ok, err := s.Ref(name)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "ref %s\n", name)
			if ok {
				fmt.Fprintf(&b, "= %s%s\n", r.OID, r.Target)
			}
		case "log":
			es, err := s.Log(name)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "log %s\n", name)
			for _, e := range es {
				fmt.Fprintf(&b, "- %s %d %s\n", e.New, e.Time, strings.TrimSuffix(e.Message, "\n"))
			}
		}
	}
	return b.String()
}

// writeFixture makes the stack with a newer git and records git's own
// answers (for-each-ref, reflog) about it.
func writeFixture(t *testing.T, dir string, settings []string) {
	g := newRepo(t, "sha1", settings...)
	for i := 0; i < 12; i++ {
		g.run("", "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("commit %d", i))
	}
	g.run("", "tag", "-a", "-m", "annotated", "v1")
	var stdin strings.Builder
	for i := 0; i < 150; i++ {
		fmt.Fprintf(&stdin, "create refs/heads/wt/T-%d HEAD~%d\n", i, i%10)
	}
	g.run(stdin.String(), "update-ref", "--stdin")
	for i := 0; i < 6; i++ {
		g.run("", "update-ref", "-m", fmt.Sprintf("move %d", i), "refs/heads/wt/T-1", fmt.Sprintf("HEAD~%d", i+1))
	}
	g.run("", "update-ref", "-d", "refs/heads/wt/T-2")
	g.run("", "symbolic-ref", "refs/remotes/origin/HEAD", "refs/heads/main")
	g.run("", "reflog", "delete", "refs/heads/wt/T-1@{3}")
	g.run("", "reflog", "expire", "--expire=now", "--expire-unreachable=now", "refs/heads/wt/T-3")

	var want strings.Builder
	refs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(g.run("", "for-each-ref", "--format=%(refname)%00%(objectname)%00%(symref)")), "\n") {
		f := strings.Split(line, "\x00")
		refs[f[0]] = f[1]
		if f[2] != "" {
			refs[f[0]] = f[2]
		}
	}
	for _, absent := range []string{"refs/heads/wt/T-2", "refs/heads/wt/T-1000", "refs/heads/wt", "refs/heads/zz"} {
		refs[absent] = ""
	}
	var names []string
	for n := range refs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&want, "ref %s\n", n)
		if refs[n] != "" {
			fmt.Fprintf(&want, "= %s\n", refs[n])
		}
	}
	for _, ref := range []string{"refs/heads/main", "refs/heads/wt/T-1", "refs/heads/wt/T-2", "refs/heads/wt/T-3", "HEAD"} {
		fmt.Fprintf(&want, "log %s\n", ref)
		cmd := exec.Command(g.git, "-C", g.repo, "reflog", "show", "--date=unix", "--format=%H%x00%gd%x00%gs", ref, "--")
		out, _ := cmd.Output() // a ref without a reflog: nothing
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if line == "" {
				continue
			}
			f := strings.Split(line, "\x00")
			at := strings.TrimSuffix(f[1][strings.LastIndex(f[1], "@{")+2:], "}")
			fmt.Fprintf(&want, "- %s %s %s\n", f[0], at, f[2])
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", filepath.Join(g.repo, ".git", "reftable"), dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "want.txt"), []byte(want.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
