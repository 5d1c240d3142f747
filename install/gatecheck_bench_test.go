package install

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/wt-tool/wt/core/gitrepo"
)

// BenchmarkGateKept measures what every wt-exec into a linked worktree
// pays to know its gate is in place when nothing changed since the last
// launch (keptAnswer: one small file read and a stat per watched file),
// against the three git processes that asking git costs.
func BenchmarkGateKept(b *testing.B) {
	top := b.TempDir()
	repo := filepath.Join(top, "repo")
	for _, a := range [][]string{{"init", "-q", "-b", "main", repo}, {"-C", repo, "commit", "-q", "--allow-empty", "-m", "x"}, {"-C", repo, "worktree", "add", "-q", "-b", "wt/T", filepath.Join(top, "w")}} {
		if out, err := exec.Command("git", a...).CombinedOutput(); err != nil {
			b.Fatal(string(out))
		}
	}
	g := &gitrepo.Repo{CommonDir: filepath.Join(repo, ".git"), GitDir: filepath.Join(repo, ".git"), TopLevel: repo}
	// Any executable file stands for wt-hook: the gate is configured,
	// never run, here.
	bin, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	if _, err = InstallGate(context.Background(), g, bin, false); err != nil {
		b.Fatal(err)
	}
	c, err := gitrepo.Locate(filepath.Join(top, "w"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := CheckWorktree(context.Background(), c, func() (string, error) { return bin, nil }); err != nil {
		b.Fatal(err)
	}
	if _, ok := keptAnswer(c); !ok {
		b.Fatal("not kept")
	}
	b.Run("kept", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, ok := keptAnswer(c); !ok {
				b.Fatal("not kept")
			}
		}
	})
	b.Run("git", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if m, _, err := probeEntries(context.Background(), c.TopLevel, c.CommonDir); err != nil || !m.Gated("reference-transaction") {
				b.Fatal(m, err)
			}
		}
	})
}
