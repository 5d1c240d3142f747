package gitrepo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/internal/gittest"
)

// TestResolveAndNameChecks: ResolveCommit, BranchExists, ValidBranchName,
// ValidRefName and CountOnly answer as git does, a name that is not there
// being false and never an error.
func TestResolveAndNameChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, _, base := newRepo(t)
	next := commitFile(t, r.TopLevel, "a", "a")
	gittest.Git(t, r.TopLevel, "tag", "-a", "-m", "v1", "v1", base)

	for _, tc := range []struct {
		rev, want string
		ok        bool
	}{
		{"main", next, true},
		{"v1", base, true}, // an annotated tag peels to its commit
		{next[:12], next, true},
		{"HEAD:a", "", false}, // a blob is no commit
		{"nowhere", "", false},
		{"--output=x", "", false}, // never an option
	} {
		got, ok, err := r.ResolveCommit(ctx, tc.rev)
		if err != nil || ok != tc.ok || got != tc.want {
			t.Errorf("ResolveCommit(%q) = %q %v %v, want %q %v", tc.rev, got, ok, err, tc.want, tc.ok)
		}
	}
	for name, want := range map[string]bool{"main": true, "wt/T-1": false} {
		if got, err := r.BranchExists(ctx, name); err != nil || got != want {
			t.Errorf("BranchExists(%q) = %v %v", name, got, err)
		}
	}
	for name, want := range map[string]bool{"wt/T-1": true, "": false, "-x": false, "a..b": false, "a b": false, "x.lock": false} {
		if got := r.ValidBranchName(ctx, name); got != want {
			t.Errorf("ValidBranchName(%q) = %v", name, got)
		}
	}
	for name, want := range map[string]bool{"refs/heads/wt/T-1": true, "refs/wt/archive/x": true, "refs/heads/a..b": false, "refs/heads/x~1": false} {
		if got := r.ValidRefName(ctx, name); got != want {
			t.Errorf("ValidRefName(%q) = %v", name, got)
		}
	}
	if n, err := r.CountOnly(ctx, next, base); err != nil || n != 1 {
		t.Errorf("CountOnly(next, base) = %d %v", n, err)
	}
	if n, err := r.CountOnly(ctx, base, next); err != nil || n != 0 {
		t.Errorf("CountOnly(base, next) = %d %v", n, err)
	}
	if _, err := r.CountOnly(ctx, "nowhere", base); err == nil {
		t.Error("CountOnly of a name that is not there: no error")
	}
	if Short(next) != next[:12] || Short("abc") != "abc" {
		t.Errorf("Short: %q %q", Short(next), Short("abc"))
	}
}

// TestRefsAndSymrefs: every ref with its object, and the symbolic ones
// with their target.
func TestRefsAndSymrefs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, _, base := newRepo(t)
	gittest.Git(t, r.TopLevel, "update-ref", "refs/remotes/origin/main", base)
	gittest.Git(t, r.TopLevel, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
	refs, err := r.Refs(ctx)
	if err != nil || len(refs) != 3 || refs["refs/heads/main"] != base || refs["refs/remotes/origin/HEAD"] != base {
		t.Fatalf("Refs: %v %v", refs, err)
	}
	sym, err := r.Symrefs(ctx)
	if err != nil || len(sym) != 1 || sym["refs/remotes/origin/HEAD"] != "refs/remotes/origin/main" {
		t.Fatalf("Symrefs: %v %v", sym, err)
	}
}

// TestCreateAndDeleteRefCompareFirst: CreateRef makes a ref only where
// there is none, DeleteBranchAt deletes a branch only at the commit given
// (a branch that gained work is never touched); neither runs a hook.
func TestCreateAndDeleteRefCompareFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, _, base := newRepo(t)
	next := commitFile(t, r.TopLevel, "a", "a")
	// A reference-transaction hook that would refuse every update.
	hook := filepath.Join(r.CommonDir, "hooks", "reference-transaction")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	const archive = "refs/wt/archive/T-1"
	if err := r.CreateRef(ctx, archive, base); err != nil {
		t.Fatalf("CreateRef: %v", err)
	}
	if err := r.CreateRef(ctx, archive, next); err == nil {
		t.Fatal("CreateRef over an existing ref")
	}
	if got, _ := ReadRef(r.CommonDir, archive); got != base {
		t.Fatalf("%s at %q after a refused create", archive, got)
	}
	gittest.Git(t, r.TopLevel, "-c", "core.hooksPath=/dev/null", "branch", "wt/T-1", next)
	if err := r.DeleteBranchAt(ctx, "wt/T-1", base); err == nil {
		t.Fatal("deleted a branch that is not at the commit given")
	}
	if ok, _ := r.BranchExists(ctx, "wt/T-1"); !ok {
		t.Fatal("the branch went on a refused delete")
	}
	if err := r.DeleteBranchAt(ctx, "wt/T-1", next); err != nil {
		t.Fatal(err)
	}
	if ok, _ := r.BranchExists(ctx, "wt/T-1"); ok {
		t.Fatal("the branch is still there")
	}
	// The same hook refuses what git runs with hooks on.
	if _, err := r.Git(ctx, false, "update-ref", "refs/heads/x", base); err == nil {
		t.Fatal("the refusing hook did not run for Git: the test proves nothing")
	}
}

// TestGitEnvReachesTheHooks: GitEnv's variables are in the environment of
// the hooks git runs; GitUnhooked runs none.
func TestGitEnvReachesTheHooks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, top, base := newRepo(t)
	out := filepath.Join(top, "hook-saw")
	hook := filepath.Join(r.CommonDir, "hooks", "reference-transaction")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho \"$1 $WT_MARK\" >>'"+out+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := r.GitEnv(ctx, []string{"WT_MARK=seen"}, "update-ref", "refs/heads/a", base); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	if !strings.Contains(string(b), "prepared seen") {
		t.Fatalf("the hook saw %q", b)
	}
	os.Remove(out)
	if _, err := r.GitUnhooked(ctx, "update-ref", "refs/heads/b", base); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("GitUnhooked ran the hook: %v", err)
	}
}

// TestAddWorktreeCarriesTheMarker: the marker is in git's environment (a
// post-checkout hook sees it), a branch is made without upstream, a
// detached worktree has none; a failure carries git's stderr.
func TestAddWorktreeCarriesTheMarker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, top, base := newRepo(t)
	// Without --no-track, git would record an upstream for any start.
	gittest.Git(t, r.TopLevel, "config", "branch.autoSetupMerge", "always")
	saw := filepath.Join(top, "saw")
	hook := filepath.Join(r.CommonDir, "hooks", "post-checkout")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho \"$WT_OP\" >>'"+saw+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := r.AddWorktree(ctx, filepath.Join(top, "w1"), "wt/T-1", "main", "WT_OP=alloc-1"); err != nil {
		t.Fatal(err)
	}
	if err := r.AddWorktree(ctx, filepath.Join(top, "w2"), "", base, "WT_OP=alloc-2"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(saw); string(b) != "alloc-1\nalloc-2\n" {
		t.Fatalf("post-checkout saw %q", b)
	}
	if c, err := Locate(filepath.Join(top, "w1")); err != nil || c.Branch != "wt/T-1" {
		t.Fatalf("w1: %+v %v", c, err)
	}
	if c, err := Locate(filepath.Join(top, "w2")); err != nil || !c.Detached {
		t.Fatalf("w2: %+v %v", c, err)
	}
	if b, _ := os.ReadFile(filepath.Join(r.CommonDir, "config")); strings.Contains(string(b), "[branch ") {
		t.Errorf("the new branch tracks an upstream:\n%s", b)
	}
	err := r.AddWorktree(ctx, filepath.Join(top, "w3"), "wt/T-1", "main", "WT_OP=alloc-3")
	var ge *Error
	if !errors.As(err, &ge) || ge.ExitCode == 0 || !strings.Contains(ge.Stderr, "wt/T-1") || !strings.Contains(err.Error(), "worktree add") {
		t.Fatalf("a branch that exists: %v", err)
	}
	if _, err := os.Stat(filepath.Join(top, "w3")); err == nil {
		t.Error("a refused add left a checkout")
	}
}

// linked adds a linked worktree on a new branch at top/name: its key is
// name.
func linked(t *testing.T, r *Repo, top, name string) string {
	t.Helper()
	p := filepath.Join(top, name)
	gittest.Git(t, r.TopLevel, "worktree", "add", "-q", "-b", "wt/"+name, p)
	return p
}

// TestRemoveWorktreeVerifiesFirst: a worktree whose files git would be led
// elsewhere by is refused before git runs, and stays; one with changes is
// refused by git, and stays; a clean one goes.
func TestRemoveWorktreeVerifiesFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, top, _ := newRepo(t)
	w := linked(t, r, top, "w")
	dotgit := filepath.Join(w, ".git")
	good, _ := os.ReadFile(dotgit)
	os.WriteFile(dotgit, []byte("gitdir: "+filepath.Join(top, "elsewhere")+"\n"), 0o644)
	if err := r.RemoveWorktree(ctx, "w", w); decision.CodeOf(err) != decision.GitMetadataUntrusted {
		t.Fatalf("a .git file naming elsewhere: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w, ".git")); err != nil {
		t.Fatalf("the refused worktree lost its .git: %v", err)
	}
	os.WriteFile(dotgit, good, 0o644)
	os.WriteFile(filepath.Join(w, "new"), []byte("work"), 0o644)
	var ge *Error
	if err := r.RemoveWorktree(ctx, "w", w); !errors.As(err, &ge) {
		t.Fatalf("a worktree with an untracked file: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(w, "new")); err != nil || string(b) != "work" {
		t.Fatalf("the work is gone: %q %v", b, err)
	}
	os.Remove(filepath.Join(w, "new"))
	if err := r.RemoveWorktree(ctx, "w", w); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the checkout is still there: %v", err)
	}
}

// TestChangesIncludeSubmodulesWithoutTheirFilters: Changes reports the
// worktree's own changes (a rename once, an untracked file) and those
// inside a populated submodule, and never runs a filter the submodule's
// config names (its config lives where a confined agent may write).
func TestChangesIncludeSubmodulesWithoutTheirFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, top, _ := newRepo(t)
	sub := filepath.Join(top, "sub")
	gittest.Git(t, top, "init", "-q", "-b", "main", sub)
	commitFile(t, sub, "f", "x\n")
	commitFile(t, sub, "g", "y\n")
	gittest.Git(t, r.TopLevel, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "sub")
	commitFile(t, r.TopLevel, "old", "o\n")
	w := linked(t, r, top, "w")
	if ch, err := r.Changes(ctx, "w", w); err != nil || len(ch) != 0 {
		t.Fatalf("a clean worktree, its submodule not populated: %q %v", ch, err)
	}
	gittest.Git(t, w, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init")
	if ch, err := r.Changes(ctx, "w", w); err != nil || len(ch) != 0 {
		t.Fatalf("a clean worktree: %q %v", ch, err)
	}

	gittest.Git(t, w, "mv", "old", "renamed")
	os.WriteFile(filepath.Join(w, "untracked"), nil, 0o644)
	ws := filepath.Join(w, "sub")
	marker := filepath.Join(top, "filter-ran")
	gittest.Git(t, ws, "config", "filter.evil.clean", "touch '"+marker+"'; cat")
	os.WriteFile(filepath.Join(ws, ".gitattributes"), []byte("* filter=evil\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "g"), []byte("changed\n"), 0o644)
	// A file git must hash again to know it unchanged: the filter would
	// run for it.
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(filepath.Join(ws, "f"), old, old)

	ch, err := r.Changes(ctx, "w", w)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ch)
	want := []string{" M sub/g", "?? sub/.gitattributes", "?? untracked", "R  renamed"}
	if !slices.Equal(ch, want) {
		t.Errorf("Changes: %q, want %q", ch, want)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the submodule's filter ran: %v", err)
	}
}

// TestGitInTakesTheRecords: GitIn runs git with the repository's records
// of the worktree, not what its .git file says, and only once they agree.
func TestGitInTakesTheRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, top, _ := newRepo(t)
	w := linked(t, r, top, "w")
	out, err := r.GitIn(ctx, "w", w, true, "rev-parse", "--git-dir", "--show-toplevel")
	if err != nil || strings.TrimSpace(string(out)) != AdminDir(r.CommonDir, "w")+"\n"+w {
		t.Fatalf("GitIn: %q %v", out, err)
	}
	if _, err := r.GitIn(ctx, "nokey", w, true, "status"); decision.CodeOf(err) != decision.GitMetadataUntrusted {
		t.Fatalf("a key that is not the worktree's: %v", err)
	}
}
