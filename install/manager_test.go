package install

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wtfixture"
)

// TestPrepareWorktreeCopiesTheManagersDir: a worktree made after a hook
// manager generated its (ignored) hooks dir in the main checkout gets a
// copy, and wt's own dir as its core.hooksPath; a run that changes the
// copy has it put back from the main checkout, the changed copy kept
// aside in wt's store.
func TestPrepareWorktreeCopiesTheManagersDir(t *testing.T) {
	t.Parallel()
	needsHooksDir(t)
	ctx := context.Background()
	f := wtfixture.New(t, policy.Change{})
	g := f.R.Git
	os.WriteFile(filepath.Join(f.Dir, ".gitignore"), []byte(".husky/_/\n"), 0o644)
	f.Git("add", ".gitignore")
	f.Git("commit", "-q", "-m", "ignore husky's generated dir")
	manager := filepath.Join(f.Dir, ".husky", "_")
	writeExecutable(t, filepath.Join(manager, "pre-commit"), "#!/bin/sh\nexit 0\n")
	f.Git("config", "core.hooksPath", ".husky/_")
	bin, _ := hookBin(t)
	if _, err := InstallGate(ctx, g, bin, false); err != nil {
		t.Fatal(err)
	}
	a := f.Allocate("T-1", "", "w1")
	copyDir := filepath.Join(a.WorktreePath, ".husky", "_")
	if _, err := os.Stat(copyDir); !os.IsNotExist(err) {
		t.Fatalf("the new worktree has the manager's dir already: %v", err)
	}

	did, err := PrepareWorktree(ctx, g, a)
	if err != nil || len(did) != 2 || !strings.Contains(did[0], "core.hooksPath set") || !strings.Contains(did[1], "copied .husky/_") {
		t.Fatalf("PrepareWorktree: %q %v", did, err)
	}
	if b, _ := os.ReadFile(filepath.Join(copyDir, "pre-commit")); string(b) != "#!/bin/sh\nexit 0\n" {
		t.Fatalf("the copy: %q", b)
	}
	if did, err := PrepareWorktree(ctx, g, a); err != nil || len(did) != 0 {
		t.Fatalf("a second PrepareWorktree: %q %v", did, err)
	}

	c, err := gitrepo.Locate(a.WorktreePath)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, differ, err := ManagerDirDrift(c); err != nil || len(differ) != 0 {
		t.Fatalf("drift of an unchanged copy: %q %v", differ, err)
	}
	if said, err := RefreshManagerDir(c); err != nil || said != "" {
		t.Fatalf("refresh of an unchanged copy: %q %v", said, err)
	}
	evil := "#!/bin/sh\necho run by the next commit\n"
	os.WriteFile(filepath.Join(copyDir, "pre-commit"), []byte(evil), 0o755)
	writeExecutable(t, filepath.Join(copyDir, "extra"), "#!/bin/sh\n")
	said, err := RefreshManagerDir(c)
	if err != nil || !strings.Contains(said, "put back from it") {
		t.Fatalf("RefreshManagerDir: %q %v", said, err)
	}
	if after, want := snapshot(t, copyDir), snapshot(t, manager); after != want {
		t.Errorf("the copy after the refresh:\n%s\nwant:\n%s", after, want)
	}
	kept, _ := filepath.Glob(filepath.Join(store.Root(g.CommonDir), "quarantine", c.Key, "*", "worktree", ".husky", "_", "pre-commit"))
	if len(kept) != 1 {
		t.Fatalf("the changed copy is not kept: %v", kept)
	}
	if b, _ := os.ReadFile(kept[0]); string(b) != evil {
		t.Errorf("the kept copy: %q", b)
	}
	main, err := gitrepo.Locate(f.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if said, err := RefreshManagerDir(main); err != nil || said != "" {
		t.Errorf("the main checkout: %q %v", said, err)
	}
}

// TestManagerDirDriftIgnoresWhatIsNotTheRuns: no chain, an absolute
// hooks path, or one that leaves the worktree are nothing a run wrote.
func TestManagerDirDriftIgnoresWhatIsNotTheRuns(t *testing.T) {
	t.Parallel()
	for _, hp := range []string{"", "/srv/hooks", "../outside", "~/hooks"} {
		g, top := plainRepo(t)
		if hp != "" {
			gittest.Git(t, g.TopLevel, "config", "core.hooksPath", hp)
		}
		w := filepath.Join(top, "w")
		gittest.Git(t, g.TopLevel, "worktree", "add", "-q", "--detach", w)
		c, err := gitrepo.Locate(w)
		if err != nil {
			t.Fatal(err)
		}
		if src, _, _, differ, err := ManagerDirDrift(c); err != nil || src != "" || differ != nil {
			t.Errorf("core.hooksPath %q: %q %q %v", hp, src, differ, err)
		}
	}
}
