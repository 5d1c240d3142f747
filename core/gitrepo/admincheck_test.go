package gitrepo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCheckAdmin: each thing a run could leave in its admin dir that git,
// or a program after it, would trip on or run is found (and nothing is
// in a fresh one); Quarantine puts it aside and writes back what git
// needs.
func TestCheckAdmin(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (common, admin string, want AdminExpect) {
		top, _ := filepath.EvalSymlinks(t.TempDir())
		repo := filepath.Join(top, "repo")
		gitIn(t, top, "init", "-q", "-b", "main", repo)
		gitIn(t, repo, "commit", "-q", "--allow-empty", "-m", "init")
		gitIn(t, repo, "worktree", "add", "-q", "-b", "wt/T-1", "../w1")
		common = filepath.Join(repo, ".git")
		admin = AdminDir(common, "w1")
		return common, admin, AdminExpect{Path: filepath.Join(top, "w1"), Branch: "wt/T-1", HooksDir: OwnHooksDir(common)}
	}
	common, _, want := setup(t)
	if ps := CheckAdmin(common, "w1", want); len(ps) != 0 {
		t.Fatalf("a fresh admin dir: %+v", ps)
	}
	for _, tc := range []struct {
		name, rel, why string
		plant          func(admin string) error
		restored       string // what the file holds after Quarantine ("" : absent)
	}{
		{"a FIFO as HEAD", "HEAD", "not a regular file but a FIFO", func(a string) error {
			os.Remove(filepath.Join(a, "HEAD"))
			return unix.Mkfifo(filepath.Join(a, "HEAD"), 0o644)
		}, "ref: refs/heads/wt/T-1\n"},
		{"a symlink as HEAD", "HEAD", "is a symlink", func(a string) error {
			os.Remove(filepath.Join(a, "HEAD"))
			return os.Symlink("/dev/zero", filepath.Join(a, "HEAD"))
		}, "ref: refs/heads/wt/T-1\n"},
		{"a HEAD git did not write", "HEAD", "not a HEAD git wrote", func(a string) error {
			return os.WriteFile(filepath.Join(a, "HEAD"), []byte("ref: /etc/passwd\n"), 0o644)
		}, "ref: refs/heads/wt/T-1\n"},
		{"a huge gitdir", "gitdir", "holds 70000 bytes", func(a string) error {
			return os.WriteFile(filepath.Join(a, "gitdir"), make([]byte, 70000), 0o644)
		}, ""},
		{"a planted core.hooksPath", "config.worktree", "sets core.hooksPath to /tmp/evil", func(a string) error {
			return os.WriteFile(filepath.Join(a, "config.worktree"), []byte("[core]\n\thooksPath = /tmp/evil\n[user]\n\tname = agent\n"), 0o644)
		}, ""},
		{"a key wt does not allow", "config.worktree", "sets core.fsmonitor", func(a string) error {
			return os.WriteFile(filepath.Join(a, "config.worktree"), []byte("[core]\n\tfsmonitor = /tmp/evil\n"), 0o644)
		}, "\n"},
		{"an executable", "evil/pre-commit", "is an executable file", func(a string) error {
			os.Mkdir(filepath.Join(a, "evil"), 0o755)
			return os.WriteFile(filepath.Join(a, "evil", "pre-commit"), []byte("#!/bin/sh\n"), 0o755)
		}, ""},
		{"an index that is not one", "index", "not a git index", func(a string) error {
			return os.WriteFile(filepath.Join(a, "index"), []byte("garbage"), 0o644)
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			common, admin, want := setup(t)
			if err := tc.plant(admin); err != nil {
				t.Fatal(err)
			}
			ps := CheckAdmin(common, "w1", want)
			if len(ps) != 1 || ps[0].Rel != tc.rel || !strings.Contains(ps[0].Why, tc.why) {
				t.Fatalf("found %+v, want %s: %q", ps, tc.rel, tc.why)
			}
			q, err := Quarantine(filepath.Join(t.TempDir(), "q"), ps)
			if err != nil || len(q) != 1 {
				t.Fatalf("Quarantine: %+v %v", q, err)
			}
			if fi, err := os.Lstat(q[0].Kept); err != nil {
				t.Errorf("the file was not kept: %v (%v)", err, fi)
			}
			b, err := os.ReadFile(ps[0].Path)
			switch {
			case tc.restored == "" && tc.rel == "config.worktree":
				// the allowed keys kept, core.hooksPath made wt's own
				if err != nil || !strings.Contains(string(b), "hookspath = "+want.HooksDir) || !strings.Contains(string(b), "name = agent") {
					t.Errorf("config.worktree put back: %q %v", b, err)
				}
			case tc.rel == "gitdir":
				if err != nil || string(b) != filepath.Join(want.Path, ".git")+"\n" {
					t.Errorf("gitdir put back: %q %v", b, err)
				}
			case tc.restored != "" && tc.restored != "\n":
				if err != nil || string(b) != tc.restored {
					t.Errorf("%s put back: %q %v", tc.rel, b, err)
				}
			case tc.restored == "" && err == nil:
				t.Errorf("%s was written back: %q", tc.rel, b)
			}
			if tc.rel != "index" {
				if ps := CheckAdmin(common, "w1", want); len(ps) != 0 {
					t.Errorf("after Quarantine: %+v", ps)
				}
			}
		})
	}
	t.Run("a submodule's hook samples are git's", func(t *testing.T) {
		t.Parallel()
		common, admin, want := setup(t)
		os.MkdirAll(filepath.Join(admin, "modules", "sub", "hooks"), 0o755)
		os.WriteFile(filepath.Join(admin, "modules", "sub", "hooks", "pre-commit.sample"), []byte("#!/bin/sh\n"), 0o755)
		if ps := CheckAdmin(common, "w1", want); len(ps) != 0 {
			t.Errorf("a sample hook: %+v", ps)
		}
		os.WriteFile(filepath.Join(admin, "modules", "sub", "hooks", "post-checkout"), []byte("#!/bin/sh\n"), 0o755)
		if ps := CheckAdmin(common, "w1", want); len(ps) != 1 || ps[0].Rel != filepath.Join("modules", "sub", "hooks", "post-checkout") {
			t.Errorf("a submodule's hook: %+v", ps)
		}
	})
}

// TestWorktreeConfigKeys pins what a worktree's config.worktree may say:
// wt's own hook switches run nothing and pass; any other subsection, and
// a wt hook section that names a program, does not.
func TestWorktreeConfigKeys(t *testing.T) {
	cases := []struct {
		text string
		bad  bool
	}{
		{"[core]\n\thooksPath = /dev/null\n", false},
		{"[hook \"wt-reference-transaction\"]\n\tenabled = false\n", false},
		{"[hook \"wt-pre-commit\"]\n\tEnabled = false\n[hook \"wt-pre-push\"]\n\tenabled = false\n", false},
		{"[hook \"wt-pre-commit\"]\n\tcommand = /tmp/evil\n", true},
		{"[hook \"wt-pre-commit\"]\n\tevent = pre-commit\n", true},
		{"[hook \"mine\"]\n\tenabled = true\n", true},
		{"[hook \"wt-\"]\n\tenabled = false\n", true},
		{"[filter \"lfs\"]\n\tclean = /tmp/evil\n", true},
		{"[include]\n\tpath = /tmp/x\n", true},
		{"[hook \"wt-pre-commit\"]\n\tenabled = fal\\\nse\n", true},
	}
	for _, c := range cases {
		p := filepath.Join(t.TempDir(), "config.worktree")
		if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		bad, err := worktreeConfigKeys(p)
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		if (bad != "") != c.bad {
			t.Errorf("%q: got bad=%q, want bad=%v", c.text, bad, c.bad)
		}
	}
}
