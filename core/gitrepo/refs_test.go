package gitrepo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/internal/gittest"
)

// TestReadRefValues: loose and packed values are read apart, peeled lines
// and the header are skipped, a ref that is a prefix of another is not
// matched, and absence is not an error.
func TestReadRefValues(t *testing.T) {
	common := t.TempDir()
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	os.MkdirAll(filepath.Join(common, "refs/heads/wt"), 0o755)
	os.WriteFile(filepath.Join(common, "refs/heads/wt/T-1"), []byte(a+"\n"), 0o644)
	os.WriteFile(filepath.Join(common, "packed-refs"), []byte("# pack-refs with: peeled fully-peeled sorted \n"+
		b+" refs/heads/wt/T-1\n"+a+" refs/heads/wt/T-10\n"+b+" refs/tags/v1\n^"+a+"\n"), 0o644)
	for _, c := range []struct {
		ref           string
		loose, packed string
	}{
		{"refs/heads/wt/T-1", a, b},
		{"refs/heads/wt/T-10", "", a},
		{"refs/heads/wt", "", ""}, // a directory, not a ref
		{"refs/heads/wt/T-1/x", "", ""},
		{"refs/heads/none", "", ""},
	} {
		v, err := ReadRefValues(common, c.ref)
		if err != nil && c.ref != "refs/heads/wt" {
			t.Errorf("%s: %v", c.ref, err)
			continue
		}
		if err == nil && (v.Loose != c.loose || v.Packed != c.packed) {
			t.Errorf("%s: %+v, want loose %q packed %q", c.ref, v, c.loose, c.packed)
		}
	}
	if _, err := ReadRefValues(common, "HEAD"); err == nil {
		t.Error("HEAD read as a shared ref")
	}
}

// backends are the ref backends a test runs on: files with the git on
// PATH, reftable with a git that makes it (skipped without one).
func backends(t *testing.T) map[string]func(t *testing.T) (git, format string) {
	return map[string]func(t *testing.T) (string, string){
		"files":    func(t *testing.T) (string, string) { return "git", "files" },
		"reftable": func(t *testing.T) (string, string) { return gittest.Newer(t, 2, 45), "reftable" },
	}
}

// TestRefsOnBothBackends: what the gate and wt-exec read without git
// (Locate's branch, HeadCommit, ReadRef, the reflog and its marks) is what
// git says, in a files and a reftable repository alike.
func TestRefsOnBothBackends(t *testing.T) {
	for name, pick := range backends(t) {
		t.Run(name, func(t *testing.T) {
			git, format := pick(t)
			top := t.TempDir()
			repo := filepath.Join(top, "repo")
			run := func(dir string, args ...string) string {
				t.Helper()
				cmd := exec.Command(git, append([]string{"-C", dir}, args...)...)
				cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+top, "GIT_DEFAULT_REF_FORMAT="+format,
					"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@wt.invalid", "GIT_COMMITTER_NAME=c", "GIT_COMMITTER_EMAIL=c@wt.invalid")
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
			wt, det := filepath.Join(top, "wt"), filepath.Join(top, "det")
			run(repo, "worktree", "add", "-q", "-b", "wt/T-1", wt)
			run(repo, "worktree", "add", "-q", "--detach", det)
			common := filepath.Join(repo, ".git")
			if got := Reftable(common); got != (format == "reftable") {
				t.Fatalf("Reftable(%s) = %v", common, got)
			}

			c, err := Locate(wt)
			if err != nil || c.Branch != "wt/T-1" || c.Detached {
				t.Fatalf("Locate(wt): %+v %v", c, err)
			}
			if c, err := Locate(det); err != nil || !c.Detached || c.Branch != "" {
				t.Fatalf("Locate(det): %+v %v", c, err)
			}
			if c, err := Locate(repo); err != nil || c.Branch != "main" {
				t.Fatalf("Locate(repo): %+v %v", c, err)
			}
			mark := MarkReflog(common, "refs/heads/wt/T-1")
			run(wt, "commit", "-q", "--allow-empty", "-m", "two")
			run(wt, "commit", "-q", "--allow-empty", "-m", "three")
			tip := run(wt, "rev-parse", "HEAD")
			if got, err := HeadCommit(c.GitDir, common); err != nil || got != tip {
				t.Errorf("HeadCommit: %q %v, want %s", got, err, tip)
			}
			if got, err := ReadRef(common, "refs/heads/wt/T-1"); err != nil || got != tip {
				t.Errorf("ReadRef: %q %v, want %s", got, err, tip)
			}
			run(repo, "pack-refs", "--all")
			v, err := ReadRefValues(common, "refs/heads/wt/T-1")
			if err != nil || v.Current() != tip {
				t.Errorf("ReadRefValues after pack-refs: %+v %v", v, err)
			}
			if got, err := ReadRef(common, "refs/heads/none"); err != nil || got != "" {
				t.Errorf("absent ref: %q %v", got, err)
			}
			run(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/heads/main")
			if got, err := ReadRef(common, "refs/remotes/origin/HEAD"); err != nil || got != "ref:refs/heads/main" {
				t.Errorf("symbolic ref: %q %v", got, err)
			}

			log, err := ReadReflog(common, "refs/heads/wt/T-1")
			if err != nil || len(log) != 3 || log[2].New != tip || log[2].Msg != "commit: three" || !strings.HasPrefix(log[0].Msg, "branch: Created") {
				t.Fatalf("ReadReflog: %+v %v", log, err)
			}
			now := MarkReflog(common, "refs/heads/wt/T-1")
			if now.Same(mark) || now.Tip != tip {
				t.Errorf("marks before and after two commits: %+v %+v", mark, now)
			}
			since, ok, err := ReflogSince(common, mark)
			if err != nil || !ok || len(since) != 2 || since[0].Msg != "commit: two" || since[1].New != tip {
				t.Errorf("ReflogSince: %+v %v %v", since, ok, err)
			}
			if again := MarkReflog(common, "refs/heads/wt/T-1"); !again.Same(now) {
				t.Errorf("nothing moved, yet marks differ: %+v %+v", now, again)
			}
		})
	}
}
