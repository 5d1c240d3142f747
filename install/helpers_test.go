package install

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/internal/gittest"
)

// TestMain keeps every git away from the configuration of the user and of
// the machine (gittest.Setenv), before any test runs.
func TestMain(m *testing.M) {
	gittest.Setenv()
	os.Exit(m.Run())
}

// plainRepo is a repository on main at one commit (gittest.Repo), seen
// from its main checkout.
func plainRepo(t *testing.T) (g *gitrepo.Repo, top string) {
	t.Helper()
	top, dir, _ := gittest.Repo(t)
	return &gitrepo.Repo{CommonDir: filepath.Join(dir, ".git"), GitDir: filepath.Join(dir, ".git"), TopLevel: dir}, top
}

// hookBin is a stand-in for wt-hook that allows everything and notes each
// call ("ARGS" a line) in the log it returns.
func hookBin(t *testing.T) (bin, log string) {
	t.Helper()
	dir := t.TempDir()
	bin, log = filepath.Join(dir, "wt-hook"), filepath.Join(dir, "log")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho \"$*\" >>'"+log+"'\ncat >/dev/null\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, log
}

// writeExecutable writes an executable file, making its directory.
func writeExecutable(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// snapshot is every file under dir (path, mode and content, links by
// their target): what a refusal must leave as it was.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out = append(out, rel+" -> "+target)
		case fi.IsDir():
			out = append(out, rel+"/ "+fi.Mode().String())
		default:
			b, _ := os.ReadFile(p)
			out = append(out, rel+" "+fi.Mode().String()+" "+string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// isShim reports whether the file at p is wt's current shim for hook.
func isShim(p, hook string) bool {
	b, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	v, _, ok := Recognize(hook, b)
	return ok && v == CurrentVersion(hook)
}
