package e2e

// End-to-end tests of wt-exec with real processes, real signals and real
// ptys. The binaries are the ones testscript.Main puts on PATH (copies of
// this test binary); nothing about /proc is faked.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wt-tool/wt/cmd/internal/cli"

	"github.com/creack/pty"

	"github.com/wt-tool/wt/cmd/internal/execcli"
	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/install"
)

// governed makes a repository with n feature worktrees w0..w(n-1).
func governed(t *testing.T, n int) (top, repo string, wts []string) {
	t.Helper()
	top = t.TempDir()
	if p, err := filepath.EvalSymlinks(top); err == nil {
		top = p
	}
	repo = filepath.Join(top, "repo")
	git(t, top, "init", "-q", "-b", "main", repo)
	git(t, repo, "commit", "-q", "--allow-empty", "-m", "init")
	// wt-admin runs in this process: setting up is not what these tests
	// show, and a race-instrumented process start costs about a second.
	admin := func(args ...string) {
		var out bytes.Buffer
		if code := cli.Admin(append([]string{"--repo", repo}, args...), &out, &out); code != 0 {
			t.Fatalf("wt-admin %v: %d\n%s", args, code, out.String())
		}
	}
	admin("init")
	for i := 0; i < n; i++ {
		w := filepath.Join(top, fmt.Sprintf("w%d", i))
		admin("allocate", "--task", fmt.Sprintf("T-%d", i), "--owner", "alice", w)
		wts = append(wts, w)
	}
	installGate(t, repo)
	return top, repo, wts
}

// installGate installs wt's gate in repo as wt-hook install does, with
// the wt-hook testscript put on PATH (in this process: init here runs in
// the test binary, beside which no wt-hook lies): wt-exec refuses to
// start where commits meet no gate.
func installGate(t testing.TB, repo string) {
	t.Helper()
	bin, err := exec.LookPath("wt-hook")
	if err != nil {
		t.Fatal(err)
	}
	g, err := gitrepo.Discover(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := install.InstallGate(context.Background(), g, bin, false); err != nil {
		t.Fatal(err)
	}
}

type result struct {
	stdout, stderr string
	code           int // -N when killed by signal N
}

func (r result) ok(t *testing.T) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	return r
}

func (r result) refused(t *testing.T, code string) result {
	t.Helper()
	if r.code != execcli.ExitRefused || !strings.Contains(r.stderr, "refused: "+code) {
		t.Fatalf("want exit 125 with %s, got %d\nstderr: %s", code, r.code, r.stderr)
	}
	return r
}

func resultOf(cmd *exec.Cmd, err error, stdout, stderr *bytes.Buffer) result {
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
			r.code = -int(ws.Signal())
		} else {
			r.code = ee.ExitCode()
		}
	} else if err != nil {
		r.code = -1000
		r.stderr += err.Error()
	}
	return r
}

func command(dir, name string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "WT_CLIENT_ID=", "WT_HOLDER_PID=", "WT_LEASE_ID=")
	// A killed wt-exec leaves its child holding the output pipes: do not
	// wait for them past the process's end.
	cmd.WaitDelay = time.Second
	return cmd, &out, &errb
}

func run(t *testing.T, dir, name string, args ...string) result {
	t.Helper()
	cmd, out, errb := command(dir, name, args...)
	return resultOf(cmd, cmd.Run(), out, errb)
}

// waitFor polls cond until it holds; it fails the test after a minute, which
// only a broken build reaches (no timing is asserted).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func readPID(t *testing.T, p string) int {
	t.Helper()
	waitFor(t, p, func() bool { b, _ := os.ReadFile(p); return bytes.HasSuffix(b, []byte("\n")) })
	b, _ := os.ReadFile(p)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %q", p, b)
	}
	return pid
}

// gone reports whether pid has exited (a zombie counts as exited).
func gone(pid int) bool {
	st, err := proc.ReadStat(pid)
	return err != nil || !st.Running()
}

func allocID(t *testing.T, repo, key string) string {
	t.Helper()
	var b struct {
		AllocationID string `json:"allocation_id"`
	}
	data, err := os.ReadFile(filepath.Join(repo, ".git", "wt", "bindings", key+".json"))
	if err != nil || json.Unmarshal(data, &b) != nil {
		t.Fatalf("binding %s: %v", key, err)
	}
	return b.AllocationID
}

// readLease reads the lease of the worktree at w through the store, under
// its shared lock, as wt does.
func readLease(t testing.TB, w string) (store.Lease, bool) {
	t.Helper()
	c, err := gitrepo.Locate(w)
	if err != nil {
		t.Fatal(err)
	}
	r, err := alloc.OpenCheckout(c)
	if err != nil {
		t.Fatal(err)
	}
	var l store.Lease
	var ok bool
	err = r.Store.Read(func(tx *store.Tx) error {
		tg, err := r.ResolveCheckout(tx, c)
		if err != nil {
			return err
		}
		l, ok, err = tx.Lease(tg.Allocation.AllocationID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return l, ok
}

func storeLock(repo string) string { return filepath.Join(repo, ".git", "wt", "lock") }

func leaseFile(repo, id string) string {
	return filepath.Join(repo, ".git", "wt", "leases", id+".json")
}

// storeValid shows the store reads back cleanly and holds no lease or
// runtime binding of the allocation.
func storeValid(t *testing.T, repo, id string) {
	t.Helper()
	run(t, "", "wt-admin", "--repo", repo, "status", "--json").ok(t)
	if exists(leaseFile(repo, id)) {
		t.Fatal("a lease is left behind")
	}
	b, _ := os.ReadFile(filepath.Join(repo, ".git", "wt", "allocations", id+".json"))
	if !bytes.Contains(b, []byte(`"external_bindings": []`)) {
		t.Fatalf("runtime bindings left behind:\n%s", b)
	}
}

// waitLoop is a child that records itself and waits for a file.
const waitLoop = `echo $$ >> "$1"; while [ ! -e "$2" ]; do sleep 0.02; done`

// TestExecOneWriter starts 32 wt-exec at once on one worktree: one child
// runs, and the 31 others are refused with WRITER_LEASE_HELD while it does.
func TestExecOneWriter(t *testing.T) {
	top, repo, wts := governed(t, 1)
	rec, release := filepath.Join(top, "children"), filepath.Join(top, "go")
	const n = 32
	results := make(chan result, n)
	var ready sync.WaitGroup
	startGun := make(chan struct{})
	for i := 0; i < n; i++ {
		ready.Add(1)
		go func() {
			cmd, out, errb := command("", "wt-exec", "-C", wts[0], "--", "sh", "-c", waitLoop, "sh", rec, release)
			ready.Done()
			<-startGun
			results <- resultOf(cmd, cmd.Run(), out, errb)
		}()
	}
	ready.Wait()
	close(startGun)
	for i := 0; i < n-1; i++ {
		(<-results).refused(t, "WRITER_LEASE_HELD")
	}
	os.WriteFile(release, nil, 0o644)
	(<-results).ok(t)
	if b, _ := os.ReadFile(rec); strings.Count(string(b), "\n") != 1 {
		t.Fatalf("children that ran:\n%s", b)
	}
	storeValid(t, repo, allocID(t, repo, "w0"))
}

// TestExecManyWorktrees starts 32 wt-exec at once on 32 worktrees: all run.
func TestExecManyWorktrees(t *testing.T) {
	top, repo, wts := governed(t, 32)
	rec := filepath.Join(top, "children")
	results := make(chan result, len(wts))
	for _, w := range wts {
		go func() { results <- run(t, "", "wt-exec", "-C", w, "--", "sh", "-c", `echo $$ >> "$1"`, "sh", rec) }()
	}
	for range wts {
		(<-results).ok(t)
	}
	if b, _ := os.ReadFile(rec); strings.Count(string(b), "\n") != len(wts) {
		t.Fatalf("children that ran:\n%s", b)
	}
	storeValid(t, repo, allocID(t, repo, "w7"))
}

// orphan runs wt-exec on worktree w with a child that leaves the worktree
// (so only its process group and environment are evidence) and waits, then
// kills wt-exec with SIGKILL: the child lives on, holding the lease. end
// lets the child finish and waits until it is gone, leaving a dead lease.
func orphan(t *testing.T, top, w string) (end func()) {
	t.Helper()
	pidFile, release := filepath.Join(top, "orphan.pid"), filepath.Join(top, "orphan.go")
	cmd, _, _ := command("", "wt-exec", "-C", w, "--", "sh", "-c", `cd /; `+waitLoop, "sh", pidFile, release)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child := readPID(t, pidFile)
	// Kill it once the lease names the child's group: the moment before is
	// TestExecCrashBeforeChildRecorded's.
	waitFor(t, "the lease to name the child", func() bool { l, ok := readLease(t, w); return ok && l.Child != nil })
	cmd.Process.Kill()
	cmd.Wait()
	return func() {
		os.WriteFile(release, nil, 0o644)
		waitFor(t, "the orphaned child to end", func() bool { return gone(child) })
	}
}

// TestExecKilledWrapper kills wt-exec with SIGKILL while its child runs: the
// child's group keeps the lease; once the child ends, a new wt-exec takes it
// over with a new generation.
func TestExecKilledWrapper(t *testing.T) {
	top, repo, wts := governed(t, 1)
	end := orphan(t, top, wts[0])
	r := run(t, "", "wt-exec", "-C", wts[0], "--", "true").refused(t, "WRITER_LEASE_HELD")
	if !strings.Contains(r.stderr, "remain in its child's process group") {
		t.Fatalf("the refusal does not name the child's group:\n%s", r.stderr)
	}
	// The dead lease's lock in git's admin dir is still there.
	locked := filepath.Join(repo, ".git", "worktrees", "w0", "locked")
	if b, _ := os.ReadFile(locked); !bytes.HasPrefix(b, []byte("wt: writer lease ")) {
		t.Fatalf("git's lock of the dead lease: %q", b)
	}
	end()

	// The new writer sees git's lock replaced by its own lease's.
	r = run(t, "", "wt-exec", "-C", wts[0], "--", "sh", "-c", `cat "$1"; echo " $WT_LEASE_ID"`, "sh", locked).ok(t)
	if !strings.Contains(r.stderr, "WRITER_LEASE_TAKEN_OVER: lease") || !strings.Contains(r.stderr, "(generation 1) of dead holder") {
		t.Fatalf("no takeover reported:\n%s", r.stderr)
	}
	if f := strings.Fields(r.stdout); len(f) < 5 || f[3] != f[len(f)-1] {
		t.Fatalf("git's lock does not name the new lease: %q", r.stdout)
	}
	if exists(locked) {
		t.Fatal("git's lock outlived the lease")
	}
	ev, _ := os.ReadFile(filepath.Join(repo, ".git", "wt", "events.jsonl"))
	if !bytes.Contains(ev, []byte(`"event":"writer_lease_taken_over"`)) || !bytes.Contains(ev, []byte(`"previous_generation":1`)) {
		t.Fatalf("no takeover event:\n%s", ev)
	}
	storeValid(t, repo, allocID(t, repo, "w0"))
}

// TestExecCrashBeforeChildRecorded kills wt-exec (SIGKILL, from a build with
// crash points) right after its child started and before the child's group
// was written. The child carries WT_LEASE_ID in its environment from its
// first instruction: that fences the worktree until it ends.
func TestExecCrashBeforeChildRecorded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "wt-exec")
	if out, err := exec.Command("go", "build", "-tags", "wt_crashpoints", "-o", bin, "github.com/wt-tool/wt/cmd/wt-exec").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	top, repo, wts := governed(t, 1)
	pidFile, release := filepath.Join(top, "pid"), filepath.Join(top, "go")
	cmd, out, errb := command("", bin, "-C", wts[0], "--", "sh", "-c", `cd /; `+waitLoop, "sh", pidFile, release)
	cmd.Env = append(cmd.Env, "WT_TEST_CRASH_AT=exec:child-started")
	if r := resultOf(cmd, cmd.Run(), out, errb); r.code != -int(syscall.SIGKILL) {
		t.Fatalf("wt-exec did not die at the crash point: %d %s", r.code, r.stderr)
	}
	child := readPID(t, pidFile)
	// The lease was written before the child started (its first commit
	// finds it), without the child's group, which was never added.
	raw, err := os.ReadFile(leaseFile(repo, allocID(t, repo, "w0")))
	if err != nil || bytes.Contains(raw, []byte(`"child":{`)) {
		t.Fatalf("after the crash the lease is %s (%v), want one without a child group", raw, err)
	}
	// What is left is the lease and runtime binding of a dead wt-exec,
	// whose child lives on: the worktree is held (so that --wait waits
	// for it).
	r := run(t, "", "wt-exec", "-C", wts[0], "--", "true").refused(t, "WRITER_LEASE_HELD")
	if !strings.Contains(r.stderr, "carry the lease in their environment") {
		t.Fatalf("the refusal does not name the environment evidence:\n%s", r.stderr)
	}
	os.WriteFile(release, nil, 0o644)
	waitFor(t, "the orphaned child to end", func() bool { return gone(child) })
	// Once it ended, the stale binding is cleared (and logged) by the next
	// acquisition.
	run(t, "", "wt-exec", "-C", wts[0], "--", "true").ok(t)
	ev, _ := os.ReadFile(filepath.Join(repo, ".git", "wt", "events.jsonl"))
	if !bytes.Contains(ev, []byte(`"event":"runtime_binding_cleared"`)) {
		t.Fatalf("no cleared binding in the events:\n%s", ev)
	}
	storeValid(t, repo, allocID(t, repo, "w0"))
}

// TestExecPIDReuse plants leases whose holder is a live process but not the
// recorded one (other start ticks, or another boot): they are dead and taken
// over. The exact identity of the same live process holds the lease.
func TestExecPIDReuse(t *testing.T) {
	top, repo, wts := governed(t, 1)
	id := allocID(t, repo, "w0")
	saved := filepath.Join(top, "saved.json")
	// Store readers take the store's lock (shared), as flock -s does: the
	// lease is written once the child runs, inside wt-exec's section.
	run(t, "", "wt-exec", "-C", wts[0], "--", "flock", "-s", storeLock(repo), "cp", leaseFile(repo, id), saved).ok(t)

	// A live process outside the worktree, leading its own group.
	sleeper := exec.Command("sleep", "600")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	self, err := proc.Describe(sleeper.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	plant := func(pid int, ticks uint64, boot string) {
		var l map[string]any
		b, _ := os.ReadFile(saved)
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatal(err)
		}
		h := l["holder"].(map[string]any)
		h["pid"], h["start_ticks"], h["boot_id"] = pid, ticks, boot
		l["child"] = nil
		out, _ := json.Marshal(l)
		if err := os.WriteFile(leaseFile(repo, id), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		ticks uint64
		boot  string
	}{
		{"other start ticks", self.StartTicks + 7, self.BootID},
		{"another boot", self.StartTicks, "00000000-0000-4000-8000-000000000000"},
	} {
		plant(self.PID, tc.ticks, tc.boot)
		r := run(t, "", "wt-exec", "-C", wts[0], "--", "true").ok(t)
		if !strings.Contains(r.stderr, "WRITER_LEASE_TAKEN_OVER") || !strings.Contains(r.stderr, fmt.Sprintf("pid %d", self.PID)) {
			t.Fatalf("%s: not taken over:\n%s", tc.name, r.stderr)
		}
	}
	// The positive control: the exact triple of the live process holds.
	plant(self.PID, self.StartTicks, self.BootID)
	run(t, "", "wt-exec", "-C", wts[0], "--", "true").refused(t, "WRITER_LEASE_HELD")
}

// TestExecDaemon: a child that double-forks a daemon (setsid) and exits.
// The lease is released only after the daemon is gone: on SIGTERM when it
// obeys, on SIGKILL after --grace when it ignores SIGTERM.
func TestExecDaemon(t *testing.T) {
	_, repo, wts := governed(t, 1)
	id := allocID(t, repo, "w0")
	for _, tc := range []struct {
		name, trap string
	}{
		{"obeys SIGTERM", `trap 'flock -s "$LOCK" test -e "$LEASE" && echo held-at-term >> "$OUT"; exit 0' TERM`},
		{"ignores SIGTERM", `trap '' TERM`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, dpid := filepath.Join(t.TempDir(), "out"), filepath.Join(t.TempDir(), "daemon")
			daemon := tc.trap + `; echo $$ > "$DPID"; while :; do flock -s "$LOCK" test -e "$LEASE" || echo lease-gone-while-alive >> "$OUT"; sleep 0.02; done`
			cmd, stdout, stderr := command("", "wt-exec", "-C", wts[0], "--grace", "1s", "--",
				"sh", "-c", `setsid sh -c "$1" & while [ ! -s "$DPID" ]; do sleep 0.01; done`, "sh", daemon)
			cmd.Env = append(cmd.Env, "LEASE="+leaseFile(repo, id), "LOCK="+storeLock(repo), "OUT="+out, "DPID="+dpid)
			r := resultOf(cmd, cmd.Run(), stdout, stderr).ok(t)
			d := readPID(t, dpid)
			if !gone(d) {
				t.Fatalf("daemon %d outlived wt-exec", d)
			}
			b, _ := os.ReadFile(out)
			if bytes.Contains(b, []byte("lease-gone-while-alive")) {
				t.Fatal("the lease was released while the daemon lived")
			}
			if tc.trap != `trap '' TERM` && !bytes.Contains(b, []byte("held-at-term")) {
				t.Fatalf("the daemon did not see the lease held at SIGTERM: %q", b)
			}
			if tc.trap == `trap '' TERM` && !strings.Contains(r.stderr, "after the grace period") {
				t.Fatalf("no SIGKILL after grace reported:\n%s", r.stderr)
			}
			storeValid(t, repo, id)
		})
	}
}

// TestExecSignals: SIGINT and SIGTERM sent to wt-exec reach the child; a
// child killed by them makes wt-exec die by the same signal (a shell shows
// 130 and 143), and one that traps them exits with its own status.
func TestExecSignals(t *testing.T) {
	top, repo, wts := governed(t, 1)
	for _, tc := range []struct {
		sig    syscall.Signal
		script string
		want   int
	}{
		{syscall.SIGINT, `echo ready > "$1"; exec sleep 600`, -int(syscall.SIGINT)},
		{syscall.SIGTERM, `echo ready > "$1"; exec sleep 600`, -int(syscall.SIGTERM)},
		{syscall.SIGTERM, `trap 'exit 7' TERM; echo ready > "$1"; while :; do sleep 0.02; done`, 7},
		{syscall.SIGUSR1, `trap 'exit 11' USR1; echo ready > "$1"; while :; do sleep 0.02; done`, 11},
		{syscall.SIGHUP, `trap 'exit 12' HUP; echo ready > "$1"; while :; do sleep 0.02; done`, 12},
	} {
		ready := filepath.Join(top, "ready-"+tc.sig.String()+strconv.Itoa(tc.want))
		cmd, out, errb := command("", "wt-exec", "-C", wts[0], "--", "sh", "-c", tc.script, "sh", ready)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the child", func() bool { return exists(ready) })
		cmd.Process.Signal(tc.sig)
		if r := resultOf(cmd, cmd.Wait(), out, errb); r.code != tc.want {
			t.Fatalf("%v: exit %d, want %d\n%s", tc.sig, r.code, tc.want, r.stderr)
		}
	}
	storeValid(t, repo, allocID(t, repo, "w0"))
}

// TestExecSignalDuringRelease: a SIGTERM that reaches wt-exec after its
// command ended, while it waits for the store's lock to release the lease,
// neither kills it half way nor is forwarded anywhere: the lease is
// released and wt-exec exits as its command did.
func TestExecSignalDuringRelease(t *testing.T) {
	// The wt-exec binary itself: this test binary, which testscript runs
	// as wt-exec, links packages that catch SIGTERM for their own ends,
	// and there the old behaviour (a kill half way) did not show.
	bin := buildCrash(t, "wt-exec")
	top, repo, wts := governed(t, 1)
	pidFile, done := filepath.Join(top, "pid"), filepath.Join(top, "done")
	cmd, out, errb := command("", bin, "-C", wts[0], "--", "sh", "-c", waitLoop, "sh", pidFile, done)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child := readPID(t, pidFile)
	// The grant is whole (its second section recorded the child's group):
	// a lock taken before that would keep wt-exec from finishing it, not
	// from releasing.
	lf := leaseFile(repo, allocID(t, repo, "w0"))
	waitFor(t, "the grant's second section", func() bool {
		b, _ := os.ReadFile(lf)
		return regexp.MustCompile(`"child": *\{`).Match(b)
	})
	// Hold the store's lock, as another wt command would, then end the
	// command: wt-exec reaps it and waits for the lock to release.
	lock, err := os.Open(storeLock(repo))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(done, nil, 0o644)
	waitFor(t, "wt-exec to reap its command", func() bool { return !exists(fmt.Sprintf("/proc/%d", child)) })
	cmd.Process.Signal(syscall.SIGTERM)
	syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if r := resultOf(cmd, cmd.Wait(), out, errb); r.code != 0 {
		t.Fatalf("exit %d, want the command's 0\n%s", r.code, r.stderr)
	}
	storeValid(t, repo, allocID(t, repo, "w0"))
}

// TestExecAncestorHolder binds the lease to a named ancestor; nested
// wt-exec under the same holder (named again, or inherited through
// WT_HOLDER_PID) renew the lease and leave it to the outer one, and a nested
// one for another client is refused.
func TestExecAncestorHolder(t *testing.T) {
	top, repo, wts := governed(t, 1)
	id := allocID(t, repo, "w0")
	script := `
echo "$WT_HOLDER_PID" > "$TOP/holder"
wt-exec --holder ancestor:agentsh --verbose -- true 2> "$TOP/inner1" || echo failed >> "$TOP/inner1"
flock -s "$LOCK" test -e "$LEASE" && echo held > "$TOP/after1"
wt-exec --verbose -- true 2> "$TOP/inner2" || echo failed >> "$TOP/inner2"
flock -s "$LOCK" test -e "$LEASE" && echo held > "$TOP/after2"
wt-exec --client-id someone-else -- true 2> "$TOP/inner3"; echo $? >> "$TOP/inner3"
`
	cmd, out, errb := command("", "agentsh", "wt-exec", "--holder", "ancestor:agentsh", "-C", wts[0], "--", "sh", "-c", script)
	cmd.Env = append(cmd.Env, "TOP="+top, "LEASE="+leaseFile(repo, id), "LOCK="+storeLock(repo))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	agent := cmd.Process.Pid
	resultOf(cmd, cmd.Wait(), out, errb).ok(t)
	if got := readPID(t, filepath.Join(top, "holder")); got != agent {
		t.Fatalf("holder pid %d, want agentsh %d", got, agent)
	}
	for _, f := range []string{"inner1", "inner2"} {
		if b, _ := os.ReadFile(filepath.Join(top, f)); !bytes.Contains(b, []byte("WRITER_LEASE_RENEWED")) || bytes.Contains(b, []byte("failed")) {
			t.Fatalf("%s: %s", f, b)
		}
	}
	for _, f := range []string{"after1", "after2"} {
		if b, _ := os.ReadFile(filepath.Join(top, f)); string(b) != "held\n" {
			t.Fatalf("a nested wt-exec released the outer lease (%s)", f)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(top, "inner3")); !bytes.Contains(b, []byte("WRITER_LEASE_HELD")) || !bytes.HasSuffix(b, []byte("125\n")) {
		t.Fatalf("another client nested: %s", b)
	}
	storeValid(t, repo, id)
}

// terminal is a command started on a new pty, as on a login terminal, with
// everything it writes collected.
type terminal struct {
	cmd  *exec.Cmd
	ptmx *os.File
	// output is what the command wrote so far; done is closed once the
	// pty's other side is closed by everyone.
	output func() string
	done   chan struct{}
}

// onTerminal starts name on a new pty (of size ws, if given) that becomes
// its controlling terminal, and collects its output.
func onTerminal(t *testing.T, ws *pty.Winsize, name string, args ...string) terminal {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if ws != nil {
		pty.Setsize(ptmx, ws)
	}
	cmd := exec.Command(name, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var mu sync.Mutex
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := ptmx.Read(b)
			mu.Lock()
			buf.Write(b[:n])
			mu.Unlock()
			if err != nil {
				close(done)
				return
			}
		}
	}()
	return terminal{cmd: cmd, ptmx: ptmx, done: done,
		output: func() string { mu.Lock(); defer mu.Unlock(); return buf.String() }}
}

// TestExecPTY runs wt-exec on a real terminal: the child gets its own pty
// (a terminal, the outer window size, then the new size after a resize),
// and its output arrives intact.
func TestExecPTY(t *testing.T) {
	top, repo, wts := governed(t, 1)
	release := filepath.Join(top, "go")
	script := `test -t 0 && test -t 1 && echo TTY-YES; stty size; echo READY
while [ ! -e "$1" ]; do sleep 0.02; done
i=0; while [ "$(stty size)" != "40 100" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i+1)); done
stty size; seq 1 5000; echo END`
	term := onTerminal(t, &pty.Winsize{Rows: 33, Cols: 111}, "wt-exec", "-C", wts[0], "--", "sh", "-c", script, "sh", release)
	cmd, ptmx, output, done := term.cmd, term.ptmx, term.output, term.done
	waitFor(t, "the child on its pty", func() bool { return strings.Contains(output(), "READY") })
	pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 100}) // SIGWINCH to wt-exec
	os.WriteFile(release, nil, 0o644)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("wt-exec: %v\n%s", err, output())
	}
	<-done
	got := strings.ReplaceAll(output(), "\r", "")
	for _, want := range []string{"TTY-YES\n", "33 111\n", "40 100\n", "END\n"} {
		if !strings.Contains(got, want) {
			t.Fatalf("output lacks %q:\n%s", want, got)
		}
	}
	var seq strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&seq, "%d\n", i)
	}
	if !strings.Contains(got, seq.String()) {
		t.Fatal("the output of seq 1 5000 did not arrive intact")
	}
	storeValid(t, repo, allocID(t, repo, "w0"))
}

// TestExecPathUsers: a process sitting in the worktree (its cwd) blocks the
// takeover of a dead holder's lease; the asking process's own ancestors do
// not.
func TestExecPathUsers(t *testing.T) {
	top, repo, wts := governed(t, 1)
	orphan(t, top, wts[0])()
	// The lease is dead now, but someone sits in the worktree.
	sitter := exec.Command("sleep", "600")
	sitter.Dir = wts[0]
	if err := sitter.Start(); err != nil {
		t.Fatal(err)
	}
	r := run(t, "", "wt-exec", "-C", wts[0], "--", "true").refused(t, "WRITER_LEASE_HELD")
	if !strings.Contains(r.stderr, fmt.Sprintf("pid %d (sleep 600) uses the worktree (cwd", sitter.Process.Pid)) {
		t.Fatalf("the refusal does not name the sitter:\n%s", r.stderr)
	}
	sitter.Process.Kill()
	sitter.Wait()
	// The shell that asks sits in the worktree itself: not evidence.
	r = run(t, wts[0], "sh", "-c", `wt-exec -- true; echo status=$?`)
	if !strings.Contains(r.stdout, "status=0") || !strings.Contains(r.stderr, "WRITER_LEASE_TAKEN_OVER") {
		t.Fatalf("an ancestor in the worktree blocked the takeover:\n%s\n%s", r.stdout, r.stderr)
	}
	storeValid(t, repo, allocID(t, repo, "w0"))
}

// TestExecNoPTY runs wt-exec --no-pty on a real terminal: the child's group
// becomes the terminal's foreground group, so it can read the keyboard
// without being stopped, and the terminal is wt-exec's again afterwards.
func TestExecNoPTY(t *testing.T) {
	_, repo, wts := governed(t, 1)
	// Fields 5 and 8 of /proc/<pid>/stat are the process group and the
	// terminal's foreground group (the command name "sh" has no space).
	script := `read line; echo "got:$line"; set -- $(cat /proc/$$/stat); echo "groups:$5:$8"`
	term := onTerminal(t, nil, "wt-exec", "--no-pty", "-C", wts[0], "--", "sh", "-c", script)
	cmd, ptmx := term.cmd, term.ptmx
	ptmx.Write([]byte("hello\n"))
	// A child left in the background would be stopped by SIGTTIN at its
	// read and never end: fail instead of hanging.
	stuck := time.AfterFunc(time.Minute, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer stuck.Stop()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("wt-exec: %v", err)
	}
	<-term.done
	out := strings.ReplaceAll(term.output(), "\r", "")
	if !strings.Contains(out, "got:hello\n") {
		t.Fatalf("the child could not read the terminal:\n%s", out)
	}
	var pgid, tpgid int
	if i := strings.Index(out, "groups:"); i < 0 {
		t.Fatalf("no groups line:\n%s", out)
	} else if _, err := fmt.Sscanf(strings.ReplaceAll(out[i+len("groups:"):], ":", " "), "%d %d", &pgid, &tpgid); err != nil {
		t.Fatalf("groups line: %v\n%s", err, out)
	}
	if pgid != tpgid || pgid == cmd.Process.Pid {
		t.Fatalf("child group %d, terminal foreground %d, wt-exec %d", pgid, tpgid, cmd.Process.Pid)
	}
	storeValid(t, repo, allocID(t, repo, "w0"))
}

// TestExecTTLRenewal runs a child under --ttl: wt-exec renews the lease
// every ttl/3 while it runs, each renewal an event, and the lease never
// reads expired to the child's own check.
func TestExecTTLRenewal(t *testing.T) {
	_, repo, wts := governed(t, 1)
	events := filepath.Join(repo, ".git", "wt", "events.jsonl")
	// The child waits (at most a minute) for two periodic renewals.
	script := `i=0; while [ "$(grep -c '"periodic":true' "$1")" -lt 2 ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i+1)); done
wt-exec --verbose -- true`
	r := run(t, "", "wt-exec", "-C", wts[0], "--ttl", "300ms", "--", "sh", "-c", script, "sh", events).ok(t)
	if !strings.Contains(r.stderr, "WRITER_LEASE_RENEWED") {
		t.Fatalf("the nested check found the lease expired or taken:\n%s", r.stderr)
	}
	b, _ := os.ReadFile(events)
	if n := bytes.Count(b, []byte(`"event":"writer_lease_renewed","`)); n < 2 {
		t.Fatalf("%d renewals logged:\n%s", n, b)
	}
	storeValid(t, repo, allocID(t, repo, "w0"))
}

// TestExecCtrlCLoop: in a terminal, one Ctrl-C stops a shell loop of
// wt-exec runs, as it stops a loop of plain commands. wt-exec exited 130
// when its command died of SIGINT, so the shell took the interrupt as
// handled and went on with the loop; it now dies by SIGINT itself.
func TestExecCtrlCLoop(t *testing.T) {
	top, _, wts := governed(t, 1)
	ready := filepath.Join(top, "sleeping")
	loop := `for i in 1 2 3; do wt-exec -C "$1" -- sh -c 'touch "$0"; exec sleep 600' "$2"; echo "next $i"; done; echo loop-ended`
	term := onTerminal(t, nil, "bash", "-c", loop, "bash", wts[0], ready)
	waitFor(t, "the first command", func() bool { return exists(ready) })
	waitFor(t, "the lease naming the command", func() bool { l, ok := readLease(t, wts[0]); return ok && l.Child != nil })
	t.Cleanup(func() { term.cmd.Process.Kill() })
	term.ptmx.Write([]byte{3}) // Ctrl-C: SIGINT to the terminal's foreground group
	waitFor(t, "the loop to end", func() bool {
		select {
		case <-term.done:
			return true
		default:
			return strings.Contains(term.output(), "next 1")
		}
	})
	if out := term.output(); strings.Contains(out, "next 1") || strings.Contains(out, "loop-ended") {
		t.Fatalf("the loop went on after one Ctrl-C:\n%s", out)
	}
}

// TestExecPTYStderrAndNotices: in pty mode, the command's stderr goes
// straight to a stderr that is not a terminal (2>err.log kept it empty
// before, showing ERR on the screen), and wt-exec's own notices about
// leftovers come after the terminal is restored, each on a line of its own
// (they were printed raw, as a staircase).
func TestExecPTYStderrAndNotices(t *testing.T) {
	top, _, wts := governed(t, 1)
	errLog := filepath.Join(top, "err.log")
	// The command: print to both streams, leave a process behind that
	// ignores the hangup its session gets when the command exits, and
	// exit once it has started.
	cmdFile := filepath.Join(top, "cmd.sh")
	os.WriteFile(cmdFile, []byte(`echo OUT; echo ERR >&2
nohup sh -c 'touch "$0"; exec sleep 600' "$1" >/dev/null 2>&1 &
while [ ! -e "$1" ]; do sleep 0.01; done
`), 0o755)
	script := `wt-exec -C "$1" --grace 100ms -- sh "$2" "$3" 2>"$4"; echo; echo exited`
	term := onTerminal(t, nil, "bash", "-c", script, "bash", wts[0], cmdFile, filepath.Join(top, "left1"), errLog)
	t.Cleanup(func() { term.cmd.Process.Kill() })
	waitFor(t, "the run to end", func() bool { return strings.Contains(term.output(), "exited") })
	out := term.output()
	b, _ := os.ReadFile(errLog)
	if !strings.Contains(string(b), "ERR") || strings.Contains(out, "ERR") {
		t.Errorf("stderr: err.log %q, screen %q", b, out)
	}
	// One leftover: the sleep, or, caught an instant earlier on a loaded
	// machine, its shell and the touch still exiting.
	if !regexp.MustCompile(`wt-exec: warning: the command exited; stopping [12] leftover process\(es\)`).Match(b) {
		t.Errorf("the leftover notice is missing from stderr: %q", b)
	}
	// Again with stderr on the terminal, to see the notices' line ends.
	script = `wt-exec -C "$1" --grace 100ms -- sh "$2" "$3"; echo exited`
	term = onTerminal(t, nil, "bash", "-c", script, "bash", wts[0], cmdFile, filepath.Join(top, "left2"))
	t.Cleanup(func() { term.cmd.Process.Kill() })
	waitFor(t, "the second run to end", func() bool { return strings.Contains(term.output(), "exited") })
	out = term.output()
	i := strings.Index(out, "wt-exec: warning")
	if i < 0 {
		t.Fatalf("no notice on the terminal: %q", out)
	}
	for j := i; j < len(out); j++ {
		if out[j] == '\n' && out[j-1] != '\r' {
			t.Fatalf("a notice printed while the terminal was raw (no carriage return): %q", out[i:])
		}
	}
}

// agentDo has the agentloop serving dir run argv and returns how it ended
// (see the agent command of the scripts).
func agentDo(t *testing.T, dir string, argv ...string) result {
	t.Helper()
	os.Remove(filepath.Join(dir, "rc"))
	os.WriteFile(filepath.Join(dir, "cmd"), []byte(strings.Join(argv, "\x00")), 0o644)
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	waitFor(t, "the agent", func() bool { return exists(filepath.Join(dir, "rc")) })
	rc, _ := os.ReadFile(filepath.Join(dir, "rc"))
	out, _ := os.ReadFile(filepath.Join(dir, "stdout"))
	errOut, _ := os.ReadFile(filepath.Join(dir, "stderr"))
	code, _ := strconv.Atoi(string(rc))
	return result{stdout: string(out), stderr: string(errOut), code: code}
}

// TestOrphanAdopt: an agent whose wt-exec was killed goes on running. Its
// lease reads orphaned (not stale_dead_process), the refusals point at
// wt-admin ps and adopt, adopting it with --holder naming the agent (a
// survivor of the lease's own groups) is allowed, and the agent's commits
// pass afterwards; a stranger's are still refused.
func TestOrphanAdopt(t *testing.T) {
	top, repo, wts := governed(t, 1)
	run(t, repo, "wt-hook", "install").ok(t)
	dir := filepath.Join(top, "agent")
	os.Mkdir(dir, 0o755)
	// No pipes: the agent outlives its wt-exec and must not hold ours.
	cmd := exec.Command("wt-exec", "-C", wts[0], "--client-id", "agent-7", "--", "agentloop", dir)
	cmd.Env = append(os.Environ(), "WT_CLIENT_ID=", "WT_HOLDER_PID=", "WT_LEASE_ID=")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The agent outlives wt-exec: stop it, and wait until it is gone,
	// before the test's directories are removed (it would poll forever).
	t.Cleanup(func() {
		os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644)
		b, _ := os.ReadFile(filepath.Join(dir, "pid"))
		if pid, err := strconv.Atoi(string(b)); err == nil && pid > 1 {
			waitFor(t, "the agent to stop", func() bool { return syscall.Kill(pid, 0) != nil })
		}
	})
	waitFor(t, "the agent's lease", func() bool { l, ok := readLease(t, wts[0]); return ok && l.Child != nil })
	agentDo(t, dir, "git", "commit", "-q", "--allow-empty", "-m", "before").ok(t)
	cmd.Process.Kill()
	cmd.Wait()
	if r := run(t, repo, "wt-admin", "lease", "list").ok(t); !strings.Contains(r.stdout, "orphaned") {
		t.Errorf("lease list: %s", r.stdout)
	}
	r := agentDo(t, dir, "git", "commit", "-q", "--allow-empty", "-m", "refused")
	if r.code == 0 || !strings.Contains(r.stderr, "lease adopt") {
		t.Errorf("the orphaned agent's commit: %d %s", r.code, r.stderr)
	}
	if r := run(t, wts[0], "wt-exec", "--", "true"); r.code != execcli.ExitRefused || !strings.Contains(r.stderr, "lease adopt") {
		t.Errorf("wt-exec on the orphaned lease: %d %s", r.code, r.stderr)
	}
	pid, _ := os.ReadFile(filepath.Join(dir, "pid"))
	if r := run(t, repo, "wt-admin", "lease", "adopt", wts[0], "--client-id", "agent-7", "--holder", string(pid)); r.code != 0 {
		t.Fatalf("adopt by the agent: %d %s", r.code, r.stderr)
	}
	agentDo(t, dir, "git", "commit", "-q", "--allow-empty", "-m", "after").ok(t)
	if r := run(t, wts[0], "git", "commit", "-q", "--allow-empty", "-m", "rogue"); r.code == 0 {
		t.Error("a stranger's commit passed after the adoption")
	}
}

// TestExecHold: with --hold on a terminal, wt-exec's refusal stays on
// screen until Enter, and is written only once the terminal has answered
// its cursor-position question, as a launcher's pane that attaches late
// (ccmanager) answers only once attached; without a terminal --hold
// changes nothing.
func TestExecHold(t *testing.T) {
	top, repo, _ := governed(t, 0)
	w := filepath.Join(top, "made-by-hand")
	git(t, repo, "worktree", "add", "-q", "-b", "by-hand", w)

	term := onTerminal(t, nil, "wt-exec", "--hold", "-C", w, "--", "true")
	exited := make(chan error, 1)
	go func() { exited <- term.cmd.Wait() }()
	waitFor(t, "the cursor-position question", func() bool { return strings.Contains(term.output(), "\x1b[6n") })
	if strings.Contains(term.output(), "UNREGISTERED_WORKTREE") {
		t.Fatalf("the refusal was written before the terminal answered:\n%q", term.output())
	}
	term.ptmx.WriteString("\x1b[7;1R")
	waitFor(t, "the refusal and the prompt", func() bool { return strings.Contains(term.output(), "press Enter to close") })
	out := term.output()
	for _, want := range []string{"UNREGISTERED_WORKTREE", "adopt"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the held refusal lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "UNREGISTERED_WORKTREE") != 1 {
		t.Fatalf("the refusal was written more than once:\n%s", out)
	}
	select {
	case err := <-exited:
		t.Fatalf("wt-exec ended before Enter: %v\n%s", err, out)
	default:
	}
	term.ptmx.WriteString("\r")
	err := <-exited
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 125 {
		t.Fatalf("wt-exec --hold: %v, want exit 125\n%s", err, term.output())
	}

	// Without a terminal: the refusal at once, no question asked.
	r := run(t, w, "wt-exec", "--hold", "--", "true").refused(t, "UNREGISTERED_WORKTREE")
	if strings.Contains(r.stderr, "\x1b[6n") || strings.Contains(r.stderr, "press Enter") {
		t.Fatalf("--hold off a terminal held:\n%s", r.stderr)
	}
}
