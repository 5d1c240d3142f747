package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildCrashAdmin builds wt-admin with the wt_crashpoints tag: a binary that
// kills itself with SIGKILL at the journal point named by WT_TEST_CRASH_AT.
// The shipped binary has no such switch (core/crashpoint).
func buildCrashAdmin(t *testing.T) string { return buildCrash(t, "wt-admin") }

// buildCrash builds the named binary with the wt_crashpoints tag.
func buildCrash(t *testing.T, name string) string { return buildTagged(t, name, "wt_crashpoints") }

// buildTagged builds the named binary with build tags (test seams that the
// shipped binaries do not have).
func buildTagged(t *testing.T, name, tags string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name+"-"+strings.ReplaceAll(tags, ",", "-"))
	out, err := exec.Command("go", "build", "-tags", tags, "-o", bin, "github.com/wt-tool/wt/cmd/"+name).CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@wt.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@wt.invalid")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func admin(t *testing.T, bin, repo, crashAt string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--repo", repo}, args...)...)
	cmd.Env = append(os.Environ(), "WT_TEST_CRASH_AT="+crashAt)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
			return string(out), -int(ws.Signal())
		}
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// state is what a finished allocate leaves: records by kind, worktrees,
// branches and journal entries. Volatile fields (ids, times) are dropped.
func state(t *testing.T, repo string) string {
	top := filepath.Dir(repo)
	t.Helper()
	lines := records(repo, []string{"allocations", "bindings", "registrations", "journal"}, "record_version")
	wts := git(t, repo, "worktree", "list", "--porcelain")
	for _, l := range strings.Split(wts, "\n") {
		if strings.HasPrefix(l, "worktree ") || strings.HasPrefix(l, "branch ") || l == "detached" {
			lines = append(lines, "git: "+l)
		}
	}
	lines = append(lines, "branches: "+git(t, repo, "branch", "--format=%(refname)"))
	if _, err := os.Stat(filepath.Join(repo, ".git", "worktrees", "w1", "wt-registration")); err == nil {
		lines = append(lines, "marker: present")
	}
	return normalized(lines, top)
}

// records lists the store's records in dirs, one line each, as JSON without
// the fields that differ from run to run (ids, times, actors, payloads)
// and without drop.
func records(repo string, dirs []string, drop ...string) []string {
	var lines []string
	root := filepath.Join(repo, ".git", "wt")
	for _, dir := range dirs {
		ents, _ := os.ReadDir(filepath.Join(root, dir))
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			b, _ := os.ReadFile(filepath.Join(root, dir, e.Name()))
			var m map[string]any
			json.Unmarshal(b, &m)
			for _, k := range append([]string{"allocation_id", "registration_id", "created_at", "updated_at", "transaction_id", "actor", "payload", "finished_at"}, drop...) {
				delete(m, k)
			}
			j, _ := json.Marshal(m)
			lines = append(lines, dir+": "+string(j))
		}
	}
	return lines
}

// normalized sorts lines and writes top as $TOP and commit ids as <commit>.
func normalized(lines []string, top string) string {
	sort.Strings(lines)
	out := strings.ReplaceAll(strings.Join(lines, "\n"), top, "$TOP")
	return regexp.MustCompile(`[0-9a-f]{40}`).ReplaceAllString(out, "<commit>")
}

func newRepo(t *testing.T, bin string) (string, string) {
	t.Helper()
	top := t.TempDir()
	repo := filepath.Join(top, "repo")
	git(t, top, "init", "-q", "-b", "main", repo)
	git(t, repo, "commit", "-q", "--allow-empty", "-m", "init")
	if out, code := admin(t, bin, repo, "", "init"); code != 0 {
		t.Fatalf("init: %d %s", code, out)
	}
	return top, repo
}

// TestAllocateCrashRecovery kills allocate at each journal point and shows
// that the next allocate finishes or undoes it, leaving the same state as an
// uninterrupted run (finished) or as no run at all (rolled back).
func TestAllocateCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := buildCrashAdmin(t)

	// The reference: an uninterrupted allocate of T-1, then T-2.
	top, repo := newRepo(t, bin)
	for _, task := range []string{"T-1", "T-2"} {
		if out, code := admin(t, bin, repo, "", "allocate", "--task", task, "--owner", "alice", filepath.Join(top, strings.Replace(task, "T-", "w", 1))); code != 0 {
			t.Fatalf("reference allocate: %d %s", code, out)
		}
	}
	want := state(t, repo)
	top0, repo0 := newRepo(t, bin)
	if out, code := admin(t, bin, repo0, "", "allocate", "--task", "T-2", "--owner", "alice", filepath.Join(top0, "w2")); code != 0 {
		t.Fatalf("reference allocate: %d %s", code, out)
	}
	wantRolledBack := state(t, repo0)

	for _, tc := range []struct {
		point   string
		outcome string
	}{
		{"allocate:prepared", "rolled_back"},
		{"allocate:worktree-added", "finished"},
		{"allocate:record-written", "finished"},
	} {
		t.Run(tc.point, func(t *testing.T) {
			top, repo := newRepo(t, bin)
			out, code := admin(t, bin, repo, tc.point, "allocate", "--task", "T-1", "--owner", "alice", filepath.Join(top, "w1"))
			if code != -int(syscall.SIGKILL) {
				t.Fatalf("allocate did not die at %s: %d %s", tc.point, code, out)
			}
			ents, _ := os.ReadDir(filepath.Join(repo, ".git", "wt", "journal"))
			if len(ents) != 1 {
				t.Fatalf("journal after the crash: %v", ents)
			}
			// Status names the interrupted operation.
			if out, _ := admin(t, bin, repo, "", "status"); !strings.Contains(out, "pending: allocate interrupted") {
				t.Fatalf("status does not show the interrupted allocate:\n%s", out)
			}
			// While the journal is unresolved, its task key is taken.
			out, code = admin(t, bin, repo, "", "allocate", "--task", "T-2", "--owner", "alice", filepath.Join(top, "w2"))
			if code != 0 || !strings.Contains(out, "interrupted allocate of "+filepath.Join(top, "w1")+" (task T-1): "+tc.outcome) {
				t.Fatalf("next allocate: %d\n%s", code, out)
			}
			got := state(t, repo)
			expect := want
			if tc.outcome == "rolled_back" {
				expect = wantRolledBack
			}
			if got != expect {
				t.Fatalf("state after recovery:\n%s\n\nwant (uninterrupted):\n%s", got, expect)
			}
			if n, _ := os.ReadDir(filepath.Join(repo, ".git", "wt", "receipts")); len(n) != 2 {
				t.Fatalf("receipts: %v", n)
			}
		})
	}
}

// TestAllocateCrashLeftovers covers what git itself can leave behind when
// allocate dies inside `git worktree add`: a directory that git does not list
// (recovery refuses to guess and keeps the plan), and a branch created at the
// base commit with no worktree (it holds no work; recovery deletes it with a
// compare-and-delete).
func TestAllocateCrashLeftovers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := buildCrashAdmin(t)
	top, repo := newRepo(t, bin)
	w1 := filepath.Join(top, "w1")
	if _, code := admin(t, bin, repo, "allocate:prepared", "allocate", "--task", "T-1", "--owner", "alice", w1); code != -int(syscall.SIGKILL) {
		t.Fatalf("allocate did not die: %d", code)
	}
	git(t, repo, "branch", "wt/T-1", "main")
	os.Mkdir(w1, 0o755)
	os.WriteFile(filepath.Join(w1, "notes.txt"), []byte("someone's file"), 0o644)

	out, code := admin(t, bin, repo, "", "allocate", "--task", "T-1", "--owner", "alice", filepath.Join(top, "w9"))
	if code != 1 || !strings.Contains(out, "(task T-1): blocked") || !strings.Contains(out, "TASK_KEY_IN_USE") {
		t.Fatalf("a blocked plan must keep its task key: %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(w1, "notes.txt")); string(b) != "someone's file" {
		t.Fatal("the unknown directory was touched")
	}

	os.RemoveAll(w1) // the person checked it and moved it away
	out, code = admin(t, bin, repo, "", "allocate", "--task", "T-1", "--owner", "alice", w1)
	if code != 0 || !strings.Contains(out, "rolled_back") || !strings.Contains(out, "branch wt/T-1 it had created at the base commit is deleted") {
		t.Fatalf("rollback then allocate: %d\n%s", code, out)
	}
	if got := git(t, w1, "symbolic-ref", "--short", "HEAD"); got != "wt/T-1" {
		t.Fatalf("new worktree on %q", got)
	}
}

// TestAllocateRace starts eight allocates of one task at once: exactly one
// wins, the others are refused with TASK_KEY_IN_USE, and exactly one
// worktree exists afterwards.
func TestAllocateRace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := buildCrashAdmin(t)
	top, repo := newRepo(t, bin)
	const n = 8
	type result struct {
		out  string
		code int
	}
	results := make(chan result, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			cmd := exec.Command(bin, "--repo", repo, "allocate", "--task", "T-1", "--owner", "alice", filepath.Join(top, "w"+string(rune('a'+i))))
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			results <- result{string(out), code}
		}(i)
	}
	won := 0
	for i := 0; i < n; i++ {
		r := <-results
		switch {
		case r.code == 0:
			won++
		case r.code == 1 && strings.Contains(r.out, "TASK_KEY_IN_USE"):
		default:
			t.Errorf("unexpected: %d %s", r.code, r.out)
		}
	}
	if won != 1 {
		t.Fatalf("%d allocates won", won)
	}
	if wts := git(t, repo, "worktree", "list", "--porcelain"); strings.Count(wts, "worktree ") != 2 {
		t.Fatalf("worktrees:\n%s", wts)
	}
}

// TestRegistrationTornByCrash: a registration is two files (the document
// in the store, the marker in git's admin dir). Killed between them, a
// backfill must leave a worktree that reads as not yet registered (doctor:
// run backfill again), never as a worktree git re-created under a reused
// name, which doctor would end with finish.
func TestRegistrationTornByCrash(t *testing.T) {
	bin := buildCrashAdmin(t)
	_, repo, wts := governed(t, 1)
	key := filepath.Base(wts[0])
	os.Remove(filepath.Join(repo, ".git", "wt", "registrations", key+".json"))
	os.Remove(filepath.Join(repo, ".git", "worktrees", key, "wt-registration"))
	out, code := admin(t, bin, repo, "", "backfill", "--json")
	var env struct {
		Decision struct {
			PlanID string `json:"plan_id"`
		} `json:"decision"`
	}
	if err := json.Unmarshal([]byte(out), &env); err != nil || code != 0 || env.Decision.PlanID == "" {
		t.Fatalf("backfill dry run: %d %v\n%s", code, err, out)
	}
	if out, code := admin(t, bin, repo, "registration:first-written", "backfill", "--apply", env.Decision.PlanID); code != -int(syscall.SIGKILL) {
		t.Fatalf("the crash point was not reached: %d\n%s", code, out)
	}
	r := run(t, repo, "wt-admin", "doctor")
	if strings.Contains(r.stdout, "finish") || strings.Contains(r.stdout, "worktree remove") || !strings.Contains(r.stdout, "backfill") {
		t.Fatalf("doctor after a torn registration must point at backfill, not finish or removal:\n%s", r.stdout)
	}
	followDoctor(t, repo)
	run(t, wts[0], "wt-exec", "--", "true").ok(t)
}

// TestRecoveryHostileLock: an allocate killed after its journal, and a FIFO
// planted at another worktree's git lock file (worktrees/W/locked): the
// next allocate's recovery reads every admin dir's lock and must not block
// on it while it holds the store's lock. It refuses, naming the file, and
// the FIFO is left as it is.
func TestRecoveryHostileLock(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := buildCrashAdmin(t)
	top, repo := newRepo(t, bin)
	if out, code := admin(t, bin, repo, "", "allocate", "--task", "T-0", "--owner", "alice", filepath.Join(top, "w0")); code != 0 {
		t.Fatalf("allocate: %d\n%s", code, out)
	}
	if _, code := admin(t, bin, repo, "allocate:prepared", "allocate", "--task", "T-1", "--owner", "alice", filepath.Join(top, "w1")); code != -int(syscall.SIGKILL) {
		t.Fatalf("allocate did not die: %d", code)
	}
	fifo := filepath.Join(repo, ".git", "worktrees", "w0", "locked")
	os.Remove(fifo)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--repo", repo, "recover")
	done := make(chan string, 1)
	go func() { out, _ := cmd.CombinedOutput(); done <- string(out) }()
	select {
	case out := <-done:
		// Refused like every hostile admin file: the plan is kept, not
		// guessed at, and the file is named.
		if !strings.Contains(out, "INVALID_METADATA") || !strings.Contains(out, "worktrees/w0/locked is not a regular file") {
			t.Fatalf("recover:\n%s", out)
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("recovery blocked on the FIFO at worktrees/w0/locked")
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was touched: %v %v", fi, err)
	}
}
