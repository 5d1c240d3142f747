package fleet

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/store"
)

// TestKeySpaceErrors: a missing remote is INVALID_POLICY with the remote
// add; a git that does not answer in time is GIT_FAILED saying so, never
// a missing remote (a git on PATH that hangs on get-url stands for a slow
// filesystem).
func TestKeySpaceErrors(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	g := &gitrepo.Repo{TopLevel: repo, GitDir: filepath.Join(repo, ".git"), CommonDir: filepath.Join(repo, ".git")}
	_, err := KeySpace(context.Background(), g, store.Policy{})
	if decision.CodeOf(err) != decision.InvalidPolicy {
		t.Fatalf("missing remote: %v", err)
	}
	if out, err := exec.Command("git", "-C", repo, "remote", "add", "origin", "/srv/x.git").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	slow := "#!/bin/sh\nfor a; do [ \"$a\" = get-url ] && exec sleep 60; done\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(slow), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = KeySpace(ctx, g, store.Policy{})
	if d, ok := decision.As(err); !ok || d.Code != decision.GitFailed || !strings.Contains(d.Message, "did not answer in time") {
		t.Fatalf("slow git: %v", err)
	}
}
