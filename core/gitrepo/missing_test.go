package gitrepo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMissingSince: the walk covers what the tips added over the bases
// (not the history before them), and reports a missing blob, a missing
// commit (which ends git's walk before 2.43) and a missing base.
func TestMissingSince(t *testing.T) {
	dir := t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main")
	var commits []string
	for i := 0; i < 4; i++ {
		f := filepath.Join(dir, "f"+string(rune('a'+i)))
		os.WriteFile(f, []byte(f), 0o644)
		gitT(t, dir, "add", ".")
		gitT(t, dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
		out, _ := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
		commits = append(commits, strings.TrimSpace(string(out)))
	}
	ctx := context.Background()
	r, err := Discover(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	obj := func(oid string) string { return filepath.Join(dir, ".git", "objects", oid[:2], oid[2:]) }
	rev := func(spec string) string {
		out, err := exec.Command("git", "-C", dir, "rev-parse", spec).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	missing, walked, err := r.MissingSince(ctx, []string{"refs/heads/main"}, []string{commits[2]})
	if err != nil || len(missing) != 0 || walked != 3 { // the last commit, its tree, its new blob
		t.Fatalf("whole: %v %d %v", missing, walked, err)
	}
	// A blob before the base is not walked; one after it is found.
	old := rev(commits[0] + ":fa")
	os.Remove(obj(old))
	newBlob := rev("HEAD:fd")
	os.Remove(obj(newBlob))
	missing, _, err = r.MissingSince(ctx, []string{"refs/heads/main"}, []string{commits[2]})
	if err != nil || len(missing) != 1 || missing[0] != "object "+newBlob {
		t.Fatalf("a missing blob: %v %v", missing, err)
	}
	// A missing commit between base and tip.
	os.Remove(obj(commits[2]))
	missing, _, err = r.MissingSince(ctx, []string{"refs/heads/main"}, []string{commits[1]})
	if err != nil || !strings.Contains(strings.Join(missing, " "), commits[2]) {
		t.Fatalf("a missing commit: %v %v", missing, err)
	}
	// A missing base bounds nothing, and is not itself reported (a base
	// no governed ref reaches may be pruned): the walk from the tip meets
	// the missing commit, which is.
	missing, _, err = r.MissingSince(ctx, []string{commits[3]}, []string{commits[2]})
	if err != nil || len(missing) == 0 || !strings.Contains(strings.Join(missing, " "), commits[2]) {
		t.Fatalf("a missing base: %v %v", missing, err)
	}
	// Unbounded, the walk from an older tip finds the old blob.
	missing, _, err = r.MissingSince(ctx, []string{commits[1]}, []string{commits[2]})
	if err != nil || len(missing) != 1 || missing[0] != "object "+old {
		t.Fatalf("a missing base the tip does not reach: %v %v", missing, err)
	}
}
