package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wt-tool/wt/cmd/internal/execcli"
	"github.com/wt-tool/wt/core/gitrepo"
)

// readOnly runs sh -c script in a private mount namespace in which each of
// dirs is bind-mounted read-only over itself: a store that cannot be
// written, for real, even as root. It skips where mount namespaces cannot
// be made.
func readOnly(t *testing.T, dir, script string, dirs ...string) result {
	t.Helper()
	if err := exec.Command("unshare", "-m", "true").Run(); err != nil {
		t.Skipf("unshare -m is not allowed here (%v): a read-only store cannot be made", err)
	}
	var mounts []string
	for _, d := range dirs {
		mounts = append(mounts, "mount --bind -o ro '"+d+"' '"+d+"'")
	}
	return run(t, dir, "unshare", "-m", "sh", "-c", strings.Join(mounts, " && ")+" && "+script)
}

// TestFailedLeaseWriteGivesBack: the lease file cannot be written (its
// directory is read-only) after the child started. The child is stopped,
// and nothing of the grant is left: no lock naming a lease that never
// existed, no generation used up, no runtime binding.
func TestFailedLeaseWriteGivesBack(t *testing.T) {
	_, repo, wts := governed(t, 1)
	id := allocID(t, repo, "w0")
	store := filepath.Join(repo, ".git", "wt")
	r := readOnly(t, wts[0], "exec wt-exec -- true", filepath.Join(store, "leases"))
	if r.code != execcli.ExitRefused || !strings.Contains(r.stderr, "STORE_NOT_WRITABLE") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if exists(gitrepo.LockFile(filepath.Join(repo, ".git"), "w0")) {
		t.Error("git's lock is left behind, naming a lease that never existed")
	}
	b, _ := os.ReadFile(filepath.Join(store, "allocations", id+".json"))
	if !bytes.Contains(b, []byte(`"lease_generation": 0`)) || !bytes.Contains(b, []byte(`"external_bindings": []`)) {
		t.Errorf("the allocation keeps what the failed grant wrote:\n%s", b)
	}
	// The grant's runtime state went to the runtime file, and back.
	rt := filepath.Join(store, "runtime", id+".json")
	b, _ = os.ReadFile(rt)
	if !bytes.Contains(b, []byte(`"lease_generation": 0`)) || !bytes.Contains(b, []byte(`"runtime_bindings": []`)) {
		t.Errorf("the runtime file keeps what the failed grant wrote:\n%s", b)
	}
	run(t, wts[0], "wt-exec", "--", "true").ok(t)
	b, _ = os.ReadFile(rt)
	if !bytes.Contains(b, []byte(`"lease_generation": 1`)) {
		t.Errorf("the next grant is not generation 1:\n%s", b)
	}
}

// TestStoreNotWritable: a read-only store is said as such, with the path
// and a hint, by wt-exec (before its command starts) and wt-admin.
func TestStoreNotWritable(t *testing.T) {
	top, repo, wts := governed(t, 1)
	store := filepath.Join(repo, ".git", "wt")
	r := readOnly(t, wts[0], "exec wt-exec -- touch "+filepath.Join(top, "ran"), store)
	if r.code != execcli.ExitRefused || !strings.Contains(r.stderr, "refused: STORE_NOT_WRITABLE: wt's store cannot be written at "+store) ||
		!strings.Contains(r.stderr, "hint: make it writable") {
		t.Errorf("wt-exec: exit %d\n%s", r.code, r.stderr)
	}
	if exists(filepath.Join(top, "ran")) {
		t.Error("the command ran on a store that cannot record it")
	}
	r = readOnly(t, repo, "exec wt-admin allocate --task T-9 --owner a ../w9", store)
	if r.code != 1 || !strings.Contains(r.stderr, "STORE_NOT_WRITABLE") || strings.Contains(r.stderr, "INTERNAL_ERROR") {
		t.Errorf("wt-admin allocate: exit %d\n%s", r.code, r.stderr)
	}
}

// TestTornLockRecognised: a wt-exec killed inside its grant, after the
// runtime binding and before the lease, left (in older versions, which
// created git's lock and wrote its reason in two steps) an empty lock file
// that refused every later wt-exec forever. Such a lock is now recognised
// as wt's own by the unfinished grant beside it and replaced; an empty lock
// with no such evidence is a person's `git worktree lock` and is kept.
func TestTornLockRecognised(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := buildCrash(t, "wt-exec")
	_, repo, wts := governed(t, 1)
	cmd, out, errb := command(wts[0], bin, "--", "true")
	cmd.Env = append(cmd.Env, "WT_TEST_CRASH_AT=exec:binding-written")
	if r := resultOf(cmd, cmd.Run(), out, errb); r.code != -int(syscall.SIGKILL) {
		t.Fatalf("wt-exec did not die at exec:binding-written: %d %s", r.code, r.stderr)
	}
	lock := gitrepo.LockFile(filepath.Join(repo, ".git"), "w0")
	if exists(lock) {
		t.Fatal("a lock exists before the grant placed it")
	}
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, wts[0], "wt-exec", "--", "true").ok(t)
	if exists(lock) {
		t.Error("the torn lock was not replaced and lifted")
	}
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, wts[0], "wt-exec", "--", "true").refused(t, "INVALID_TARGET")
	if !strings.Contains(r.stderr, `locked by someone else (reason "")`) {
		t.Errorf("a person's empty lock: %s", r.stderr)
	}
}
