package gitrepo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/internal/gittest"
)

// BenchmarkReadBranch measures what the commit gate asks of the refs on
// every commit (docs/design.md, "Reading refs"): the branch a linked
// worktree has checked out (Locate: its HEAD) and that branch's tip, read
// by wt's readers of the files backend and of reftable, against asking git
// the first half of it with one process (git rev-parse
// --symbolic-full-name HEAD: less than a git process costs for the whole),
// in repositories of each backend with 3,000 other branches. Each op is
// one whole answer.
func BenchmarkReadBranch(b *testing.B) {
	newer := gittest.Newer(b, 2, 45)
	for _, format := range []string{"files", "reftable"} {
		top := b.TempDir()
		repo := filepath.Join(top, "repo")
		run := func(dir string, stdin string, args ...string) string {
			cmd := exec.Command(newer, append([]string{"-C", dir}, args...)...)
			cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+top, "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@wt.invalid",
				"GIT_COMMITTER_NAME=c", "GIT_COMMITTER_EMAIL=c@wt.invalid")
			cmd.Stdin = strings.NewReader(stdin)
			out, err := cmd.CombinedOutput()
			if err != nil {
				b.Fatalf("git %v: %v\n%s", args, err, out)
			}
			return strings.TrimSpace(string(out))
		}
		run(top, "", "init", "-q", "--ref-format="+format, "-b", "main", repo)
		run(repo, "", "commit", "-q", "--allow-empty", "-m", "one")
		var stdin strings.Builder
		for i := 0; i < 3000; i++ {
			fmt.Fprintf(&stdin, "create refs/heads/b%04d HEAD\n", i)
		}
		run(repo, stdin.String(), "update-ref", "--stdin")
		run(repo, "", "pack-refs", "--all")
		wt := filepath.Join(top, "wt")
		run(repo, "", "worktree", "add", "-q", "-b", "wt/T-1", wt)
		run(wt, "", "commit", "-q", "--allow-empty", "-m", "two")
		want := run(wt, "", "rev-parse", "HEAD")
		b.Run(format+"/wt", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				c, err := Locate(wt)
				if err != nil || c.Branch != "wt/T-1" {
					b.Fatalf("%+v %v", c, err)
				}
				if tip, err := ReadRef(c.CommonDir, "refs/heads/"+c.Branch); err != nil || tip != want {
					b.Fatalf("%q %v", tip, err)
				}
			}
		})
		b.Run(format+"/git", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				out, err := exec.Command(newer, "-C", wt, "rev-parse", "--symbolic-full-name", "HEAD").Output()
				if err != nil || string(out) != "refs/heads/wt/T-1\n" {
					b.Fatalf("%q %v", out, err)
				}
			}
		})
	}
}
