package gitrepo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/internal/gittest"
)

// TestGitVersionIsTheGitOnPath: the version wt reads is the one the git
// on PATH reports, and asking twice gives the same answer.
func TestGitVersionIsTheGitOnPath(t *testing.T) {
	t.Parallel()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	want, err := gittest.VersionOf(git)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		got, err := GitVersion(context.Background())
		if err != nil || got != want {
			t.Fatalf("GitVersion: %v %v, want %v", got, err, want)
		}
	}
}

// TestConfigListsEveryScopeInOrder: Config lists the repository's, the
// worktree's and the command line's settings with their scope and origin,
// in git's order (the command line last), a key without "=" as having no
// value, and a value holding a newline whole.
func TestConfigListsEveryScopeInOrder(t *testing.T) {
	t.Parallel()
	r, top, _ := newRepo(t)
	gittest.Git(t, r.TopLevel, "config", "extensions.worktreeConfig", "true")
	gittest.Git(t, r.TopLevel, "config", "--local", "wt.multi", "one\ntwo")
	gittest.Git(t, r.TopLevel, "worktree", "add", "-q", "-b", "f", filepath.Join(top, "w"))
	gittest.Git(t, filepath.Join(top, "w"), "config", "--worktree", "wt.where", "worktree")
	f, err := os.OpenFile(filepath.Join(r.CommonDir, "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("[wt]\n\tbare\n")
	f.Close()

	entries, err := Config(context.Background(), filepath.Join(top, "w"), []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=wt.where", "GIT_CONFIG_VALUE_0=command"})
	if err != nil {
		t.Fatal(err)
	}
	find := func(key string) []ConfigEntry {
		var out []ConfigEntry
		for _, e := range entries {
			if e.Key == key {
				out = append(out, e)
			}
		}
		return out
	}
	if m := find("wt.multi"); len(m) != 1 || m[0].Value != "one\ntwo" || !m[0].HasValue || m[0].Scope != "local" ||
		m[0].Origin != "file:"+filepath.Join(r.CommonDir, "config") { // from a linked worktree, git names the file whole
		t.Errorf("wt.multi: %+v", m)
	}
	if b := find("wt.bare"); len(b) != 1 || b[0].HasValue || b[0].Value != "" {
		t.Errorf("wt.bare, given without a value: %+v", b)
	}
	where := find("wt.where")
	if len(where) != 2 || where[0].Scope != "worktree" || where[0].Value != "worktree" ||
		where[1].Scope != "command" || where[1].Value != "command" {
		t.Errorf("wt.where: %+v, want the worktree's, then the command line's", where)
	}
}

// TestConfigOfADirectoryThatIsNotThere is GIT_FAILED: git cannot run there.
func TestConfigOfADirectoryThatIsNotThere(t *testing.T) {
	t.Parallel()
	_, err := Config(context.Background(), filepath.Join(t.TempDir(), "none"), nil)
	if decision.CodeOf(err) != decision.GitFailed {
		t.Fatalf("got %v, want %s", err, decision.GitFailed)
	}
}

// TestParseConfigList: entries with and without values are read; an entry
// cut short is refused rather than read as something else.
func TestParseConfigList(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		want []ConfigEntry
		bad  bool
	}{
		{"empty", "", nil, false},
		{"one with a value", "local\x00file:.git/config\x00core.bare\nfalse\x00",
			[]ConfigEntry{{Scope: "local", Origin: "file:.git/config", Key: "core.bare", Value: "false", HasValue: true}}, false},
		{"one without", "command\x00command line:\x00wt.flag\x00",
			[]ConfigEntry{{Scope: "command", Origin: "command line:", Key: "wt.flag"}}, false},
		{"an empty value", "global\x00file:/g\x00a.b\n\x00",
			[]ConfigEntry{{Scope: "global", Origin: "file:/g", Key: "a.b", Value: "", HasValue: true}}, false},
		{"cut after the origin", "local\x00file:x\x00", nil, true},
		{"cut in the key", "local\x00file:x\x00a.b", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfigList([]byte(tc.in))
			if tc.bad {
				if err == nil {
					t.Fatalf("accepted: %+v", got)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("%+v %v, want %+v", got, err, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("entry %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}
