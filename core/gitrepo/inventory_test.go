package gitrepo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
)

func TestParsePorcelain(t *testing.T) {
	in := "worktree /r\x00HEAD aaaa\x00branch refs/heads/main\x00\x00" +
		"worktree /w 1\x00HEAD bbbb\x00detached\x00locked wt: writer lease x\x00\x00" +
		"worktree /gone\x00HEAD cccc\x00branch refs/heads/wt/T-1\x00prunable gitdir file points to non-existent location\x00\x00" +
		"worktree /l\x00HEAD dddd\x00branch refs/heads/x\x00locked\x00\x00"
	got, err := ParsePorcelain([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Worktree{
		{Path: "/r", Head: "aaaa", Branch: "main"},
		{Path: "/w 1", Head: "bbbb", Detached: true, Locked: true, LockReason: "wt: writer lease x"},
		{Path: "/gone", Head: "cccc", Branch: "wt/T-1", Prunable: true, PrunableReason: "gitdir file points to non-existent location"},
		{Path: "/l", Head: "dddd", Branch: "x", Locked: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d worktrees: %+v", len(got), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("worktree %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"HEAD aaaa\x00", "worktree /r\x00HEAD aaaa"} {
		if _, err := ParsePorcelain([]byte(bad)); err == nil {
			t.Errorf("ParsePorcelain(%q) accepted", bad)
		}
	}
}

func gitT(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func TestInventoryAndDiscover(t *testing.T) {
	ctx := context.Background()
	top := t.TempDir()
	repo := filepath.Join(top, "repo")
	gitT(t, top, "init", "-q", "-b", "main", repo)
	gitT(t, repo, "commit", "-q", "--allow-empty", "-m", "one")
	gitT(t, repo, "worktree", "add", "-q", "-b", "f", filepath.Join(top, "with space"))
	gitT(t, repo, "worktree", "add", "-q", "--detach", filepath.Join(top, "gone"))
	gitT(t, repo, "worktree", "lock", "--reason", "keep", filepath.Join(top, "with space"))
	os.RemoveAll(filepath.Join(top, "gone"))

	// A hook's environment must not redirect discovery.
	t.Setenv("GIT_DIR", filepath.Join(top, "nowhere"))
	r, err := Discover(ctx, filepath.Join(top, "with space"))
	if err != nil {
		t.Fatal(err)
	}
	os.Unsetenv("GIT_DIR") // t.Setenv restores the original at the end
	if r.CommonDir != filepath.Join(repo, ".git") || r.TopLevel != filepath.Join(top, "with space") {
		t.Fatalf("Discover: %+v", r)
	}
	inv, err := r.Inventory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]Worktree{}
	for _, w := range inv {
		byPath[filepath.Base(w.Path)] = w
	}
	sp, gone := byPath["with space"], byPath["gone"]
	// git names the admin dir after the path's base name, made safe.
	if len(inv) != 3 || inv[0].Key != MainKey || sp.Key != "with-space" || !sp.Locked || sp.LockReason != "keep" ||
		gone.Key != "gone" || !gone.Prunable || !gone.Detached {
		t.Fatalf("inventory: %+v", inv)
	}
	if key, ok := KeyOfCheckout(r.CommonDir, filepath.Join(top, "with space")); !ok || key != "with-space" {
		t.Fatalf("KeyOfCheckout: %q %v", key, ok)
	}
	if ok, err := r.IsAncestor(ctx, inv[0].Head, "f"); err != nil || !ok {
		t.Fatalf("IsAncestor(main, f) = %v %v", ok, err)
	}
	gitT(t, filepath.Join(top, "with space"), "commit", "-q", "--allow-empty", "-m", "two")
	if ok, err := r.IsAncestor(ctx, "f", inv[0].Head); err != nil || ok {
		t.Fatalf("IsAncestor(f, main) = %v %v", ok, err)
	}

	if _, err := Discover(ctx, t.TempDir()); decision.CodeOf(err) != decision.NotAGitRepository {
		t.Fatalf("plain dir: %v", err)
	}
	bare := filepath.Join(top, "bare.git")
	gitT(t, top, "init", "-q", "--bare", bare)
	if _, err := Discover(ctx, bare); decision.CodeOf(err) != decision.BareRepository {
		t.Fatalf("bare: %v", err)
	}
}

// TestInventoryCommondirNowhere: a worktree whose admin dir's commondir
// leads nowhere makes git's list fail without naming it ("fatal: Invalid
// path"); Inventory names the worktree and its repair instead.
func TestInventoryCommondirNowhere(t *testing.T) {
	ctx := context.Background()
	top, _ := filepath.EvalSymlinks(t.TempDir())
	repo := filepath.Join(top, "repo")
	gitT(t, top, "init", "-q", "-b", "main", repo)
	gitT(t, repo, "commit", "-q", "--allow-empty", "-m", "one")
	gitT(t, repo, "worktree", "add", "-q", "--detach", filepath.Join(top, "w1"))
	r, err := Discover(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	commondir := filepath.Join(AdminDir(r.CommonDir, "w1"), "commondir")
	if err := os.WriteFile(commondir, []byte("/nonexistent/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = r.Inventory(ctx)
	d, ok := decision.As(err)
	if !ok {
		t.Fatalf("Inventory: %v, want GIT_METADATA_UNTRUSTED", err)
	}
	if d.Code != decision.GitMetadataUntrusted || !strings.Contains(d.Message, filepath.Join(top, "w1")+": ") ||
		!strings.Contains(d.Hint, "printf '%s\\n' ../.. > "+commondir) {
		t.Fatalf("Inventory: %v (hint %q)", err, d.Hint)
	}
}
