package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ident is a committer for the processes a land test starts.
var ident = []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@wt.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@wt.invalid"}

// runIdent is run with a committer.
func runIdent(t *testing.T, dir, name string, args ...string) result {
	t.Helper()
	cmd, out, errb := command(dir, name, args...)
	cmd.Env = append(cmd.Env, ident...)
	return resultOf(cmd, cmd.Run(), out, errb)
}

// landFixture is a governed repository whose main has a check (check.sh:
// every task file says "ok", and shared.txt's first line is one word)
// that land's --test runs, saying each commit it passed in its log.
type landFixture struct {
	top, repo string
}

func newLandFixture(t *testing.T) landFixture {
	t.Helper()
	top, repo, _ := governed(t, 0)
	f := landFixture{top: top, repo: repo}
	os.WriteFile(filepath.Join(repo, "check.sh"), []byte("for f in t*.txt; do [ -e \"$f\" ] || continue; [ \"$(cat \"$f\")\" = ok ] || exit 1; done\n[ \"$(head -1 shared.txt | wc -w)\" = 1 ]\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "shared.txt"), []byte("base\nsecond\n"), 0o644)
	git(t, repo, "add", "check.sh", "shared.txt")
	git(t, repo, "commit", "-q", "-m", "the check")
	return f
}

// test is land's --test: the check, and the commit it passed said in
// its output (the test runs in a sandbox: its log is what it leaves).
func (f landFixture) test() string {
	return "sh check.sh && echo tested=$WT_LAND_RESULT"
}

// passed are the commits the check passed, from the tests' logs.
func (f landFixture) passed() []string {
	var out []string
	filepath.WalkDir(filepath.Join(f.repo, ".git", "wt", "land-logs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".log") {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, line := range strings.Split(string(b), "\n") {
			if c, ok := strings.CutPrefix(line, "tested="); ok {
				out = append(out, c)
			}
		}
		return nil
	})
	return out
}

// subjects counts main's commits by subject.
func subjects(t *testing.T, repo string) map[string]int {
	n := map[string]int{}
	for _, s := range strings.Split(git(t, repo, "log", "--format=%s", "main"), "\n") {
		n[s]++
	}
	return n
}

// TestLandTenAgents: ten agents under wt-exec, each committing its own
// file, two of them rewriting shared.txt's first line, which main's own
// fix rewrote after they began. Each marks its task ready from inside its
// run. Two landers at once land the queue: the eight land, each exactly
// once; the two conflicting ones come back with shared.txt; main passed
// the check at every tip it had. An outsider's update-ref of main with
// the policy on is refused.
func TestLandTenAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ten agents and two landers")
	}
	f := newLandFixture(t)
	t.Parallel()
	// wt-admin as built without the race detector (the crash points'
	// build, none named): the test is about what it does, not about
	// paying a race-instrumented start at each of its commands.
	admin := buildCrashAdmin(t)
	run(t, f.repo, admin, "policy", "--publication-lease", "on").ok(t)
	var paths []string
	for i := 0; i < 10; i++ {
		p := filepath.Join(f.top, fmt.Sprintf("a%d", i))
		run(t, f.repo, admin, "allocate", "--task", fmt.Sprintf("T-%d", i), "--owner", "alice", p).ok(t)
		paths = append(paths, p)
	}
	// Main moves under the agents: a fix of shared.txt's first line, made
	// through the lander (the policy refuses anyone else).
	run(t, f.repo, admin, "allocate", "--task", "FIX", "--owner", "alice", filepath.Join(f.top, "fix")).ok(t)
	runIdent(t, filepath.Join(f.top, "fix"), "wt-exec", "--", "sh", "-c", "echo fixed > shared.txt.new && sed 1d shared.txt >> shared.txt.new && mv shared.txt.new shared.txt && git commit -qam 'fix shared'").ok(t)
	run(t, f.repo, admin, "land", "--task", "FIX", "--test", f.test()).ok(t)
	base := git(t, f.repo, "rev-parse", "main")

	var wg sync.WaitGroup
	errs := make([]result, 10)
	for i, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work := fmt.Sprintf("echo ok > t%d.txt && git add t%d.txt && git commit -qm 'task T-%d'", i, i, i)
			if i >= 8 {
				work = fmt.Sprintf("echo agent%d > shared.txt.new && sed 1d shared.txt >> shared.txt.new && mv shared.txt.new shared.txt && git commit -qam 'task T-%d'", i, i)
			}
			cmd, out, errb := command(p, "wt-exec", "--client-id", fmt.Sprintf("agent-%d", i), "--", "sh", "-c", work+" && wt-admin ready T-"+strconv.Itoa(i))
			cmd.Env = append(cmd.Env, ident...)
			errs[i] = resultOf(cmd, cmd.Run(), out, errb)
		}()
	}
	wg.Wait()
	for i, r := range errs {
		if r.code != 0 {
			t.Fatalf("agent %d: exit %d\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
	}

	// Two landers at once.
	landers := make([]result, 2)
	for i := range landers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			landers[i] = runIdent(t, f.repo, admin, "--json", "land", "--ready", "--wait", "--test", f.test())
		}()
	}
	wg.Wait()
	codes := map[string][]string{}
	for _, r := range landers {
		type task struct{ Task, Code string }
		var out struct {
			OK       bool
			Decision struct{ Tasks []task }
			Error    struct{ Tasks []task }
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("land: %v\n%s\n%s", err, r.stdout, r.stderr)
		}
		tasks := append(out.Decision.Tasks, out.Error.Tasks...)
		for _, tr := range tasks {
			codes[tr.Task] = append(codes[tr.Task], tr.Code)
		}
	}
	for i := 0; i < 10; i++ {
		task := fmt.Sprintf("T-%d", i)
		want := "LANDED"
		if i >= 8 {
			want = "LAND_CONFLICT"
		}
		if !slices.Equal(codes[task], []string{want}) {
			t.Errorf("%s: the landers said %v, want [%s] (once, by one lander)", task, codes[task], want)
		}
	}
	n := subjects(t, f.repo)
	for i := 0; i < 10; i++ {
		want := 1
		if i >= 8 {
			want = 0
		}
		if got := n[fmt.Sprintf("task T-%d", i)]; got != want {
			t.Errorf("main holds task T-%d's commit %d times, want %d", i, got, want)
		}
	}
	tips := mainTips(t, f.repo, base)
	if len(tips) == 0 || len(tips) > 8 {
		t.Errorf("main moved %d times after the fix, want 1 to 8 (a batch each)", len(tips))
	}
	for _, tip := range tips {
		if !slices.Contains(f.passed(), tip) {
			t.Errorf("main was at %s, which the check never passed", tip)
		}
	}
	st := run(t, f.repo, admin, "status").ok(t).stdout
	for i := 8; i < 10; i++ {
		if !strings.Contains(st, fmt.Sprintf("wt-admin land handed task T-%d back to its owner: conflicts in shared.txt", i)) {
			t.Errorf("status does not show T-%d handed back with shared.txt:\n%s", i, st)
		}
	}
	if strings.Count(st, " LANDED ") != 9 { // the eight and the fix
		t.Errorf("status shows %d LANDED rows, want 9:\n%s", strings.Count(st, " LANDED "), st)
	}
	// An outsider's move, hooks on: refused; main stays.
	tip := git(t, f.repo, "rev-parse", "main")
	if r := run(t, f.repo, "git", "update-ref", "refs/heads/main", "main~1"); r.code == 0 || !strings.Contains(r.stderr, "PUBLICATION_LEASE_REQUIRED") {
		t.Errorf("an outsider's update-ref of main: exit %d\n%s", r.code, r.stderr)
	}
	if got := git(t, f.repo, "rev-parse", "main"); got != tip {
		t.Errorf("main moved from %s to %s", tip, got)
	}
}

// TestLandKilledAnywhere kills wt-admin land at each of its crash
// points and at random moments (during the integration, the test, the
// push, the ref move; alone or with its process group), landing with
// --push to a bare remote. After each kill the publication branch, here
// and on the remote, is its old tip or one the check passed; land
// --recover takes the dead lander's lease over (with its proof) and
// concludes its landing; doctor then finds nothing about the publication
// lease or a landing; and landing the task again lands it exactly once.
func TestLandKilledAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("kills many real processes")
	}
	f := newLandFixture(t)
	t.Parallel()
	crashAdmin := buildCrashAdmin(t)
	admin := crashAdmin // built without the race detector, as above
	remote := filepath.Join(f.top, "remote.git")
	git(t, f.top, "init", "-q", "--bare", "-b", "main", remote)
	git(t, f.repo, "remote", "add", "origin", remote)
	git(t, f.repo, "push", "-q", "origin", "main")
	points := []string{"land:acquired", "land:integrated", "land:tested", "land:intent", "land:pushed", "land:moved", "land:recorded"}
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	random := 2 // make test's share; WT_TEST_KILLS=30 for a longer hunt
	if n, err := strconv.Atoi(os.Getenv("WT_TEST_KILLS")); err == nil && n > 0 {
		random = n
	}
	kills := len(points) + random
	// Every task begins at the first main: each landing rebases.
	for i := 0; i < kills; i++ {
		p := filepath.Join(f.top, fmt.Sprintf("k%d", i))
		run(t, f.repo, admin, "allocate", "--task", fmt.Sprintf("K-%d", i), "--owner", "alice", p).ok(t)
		runIdent(t, p, "wt-exec", "--", "sh", "-c", fmt.Sprintf("echo ok > t%d.txt && git add t%d.txt && git commit -qm 'task K-%d'", i, i, i)).ok(t)
	}
	test := "sleep 0.05; " + f.test()
	outcomes := map[string]int{}
	for i := 0; i < kills; i++ {
		task := fmt.Sprintf("K-%d", i)
		before := git(t, f.repo, "rev-parse", "main")
		args := []string{"--repo", f.repo, "land", "--task", task, "--push", "origin", "--test", test}
		cmd, _, errb := command(f.repo, crashAdmin, args...)
		cmd.Env = append(cmd.Env, ident...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		how := ""
		if i < len(points) {
			how = points[i]
			cmd.Env = append(cmd.Env, "WT_TEST_CRASH_AT="+how)
			if err := cmd.Run(); err == nil {
				t.Fatalf("%s: land was not killed at %s:\n%s", task, how, errb)
			}
		} else {
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Duration(rng.Intn(400)) * time.Millisecond)
			how = "random"
			if i%2 == 1 {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				how += ", with its group"
			} else {
				cmd.Process.Kill()
			}
			cmd.Wait()
		}
		// The publication branch, here and there: the old tip or a checked one.
		for _, where := range []string{f.repo, remote} {
			now := git(t, where, "rev-parse", "main")
			if now != before && !slices.Contains(f.passed(), now) {
				t.Fatalf("%s (killed %s): main in %s is at %s, neither its old tip %s nor a tip the check passed", task, how, where, now, before)
			}
		}
		settleKilledLander(t, f, admin, remote, cmd.Process.Pid)
		rec := run(t, f.repo, admin, "land", "--recover").ok(t)
		if !strings.Contains(rec.stdout, "LAND_RECOVERED") {
			t.Fatalf("%s: land --recover:\n%s", task, rec.stdout)
		}
		doc := run(t, f.repo, admin, "--json", "doctor").stdout
		if strings.Contains(doc, `"check": "publication"`) || strings.Contains(doc, `"operation": "land"`) || strings.Contains(doc, "land --recover") {
			t.Fatalf("%s (killed %s): doctor after land --recover:\n%s", task, how, doc)
		}
		again := runIdent(t, f.repo, admin, "land", "--task", task, "--push", "origin", "--test", f.test())
		if again.code != 0 {
			t.Fatalf("%s (killed %s): landing it again: exit %d\n%s\n%s", task, how, again.code, again.stdout, again.stderr)
		}
		code := strings.Fields(strings.SplitN(again.stdout, "\n", 3)[1])[1]
		outcomes[how+": "+code]++
		for _, where := range []string{f.repo, remote} {
			if n := subjects(t, where)["task "+task]; n != 1 {
				t.Fatalf("%s (killed %s): main in %s holds the task's commit %d times", task, how, where, n)
			}
		}
	}
	t.Logf("%d kills: %v", kills, outcomes)
}

// settleKilledLander waits for what a killed lander (process group pid)
// left to settle, and clears it as its owners would: its own children
// (git, the test under wt-exec) end by themselves, and are waited for
// before the next lander resets the integration worktree under them; a
// git killed in the compare-and-swap leaves main's lock (and the
// canonical checkout's HEAD's; a killed fetch, its remote-tracking
// ref's), which doctor names once they have settled and its fix removes.
// Over a local path the remote's receive-pack is the lander's child,
// killed with its group: its locks are the server's to clear, as a
// server's administrator would (a real server's git is not the client's
// to kill).
func settleKilledLander(t *testing.T, f landFixture, admin, remote string, pid int) {
	t.Helper()
	waitFor(t, "the killed lander's children to end", func() bool { return syscall.Kill(-pid, 0) != nil })
	waitFor(t, "doctor to remove the stale ref locks", func() bool {
		left := false
		filepath.WalkDir(filepath.Join(f.repo, ".git"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(p, ".lock") && !strings.Contains(p, "-wt-land") {
				left = true // the integration worktrees' are the next lander's to clear
			}
			return nil
		})
		if !left {
			return true
		}
		for _, line := range strings.Split(run(t, f.repo, admin, "doctor").stdout, "\n") {
			if fix, ok := strings.CutPrefix(line, "   fix: "); ok && strings.Contains(fix, ".lock") {
				run(t, f.repo, "sh", "-c", fix)
			}
		}
		return false
	})
	os.Remove(filepath.Join(remote, "refs", "heads", "main.lock"))
	os.Remove(filepath.Join(remote, "refs", "notes", "wt.lock"))
}

// landBench is what the landing benchmarks share: the shipped binaries
// on PATH, a committer, and twin repositories of n tasks.
type landBench struct {
	b          *testing.B
	dir, admin string
	n          int
}

func newLandBench(b *testing.B, n int) landBench {
	dir := b.TempDir()
	for _, name := range []string{"wt-admin", "wt-exec", "wt-hook", "wt-gate"} {
		shippedInto(b, dir, name, "github.com/wt-tool/wt/cmd/"+name)
	}
	b.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	for _, kv := range ident {
		k, v, _ := strings.Cut(kv, "=")
		b.Setenv(k, v)
	}
	return landBench{b: b, dir: dir, admin: filepath.Join(dir, "wt-admin"), n: n}
}

// repo makes a repository with n task branches off main, each adding its
// own file t<i> saying "ok" (task bad says "bad"; -1: none); governed,
// they are allocated worktrees committed to by their writers, else plain
// worktrees and a detached one (integ) for the loop. main moves once
// after the tasks began: every landing rebases.
func (lb landBench) repo(governed bool, bad int) string {
	b := lb.b
	top := b.TempDir()
	repo := filepath.Join(top, "repo")
	git(b, top, "init", "-q", "-b", "main", repo)
	git(b, repo, "commit", "-q", "--allow-empty", "-m", "init")
	if governed {
		runOnce(b, lb.admin, "--repo", repo, "init")
		runOnce(b, filepath.Join(lb.dir, "wt-hook"), "-C", repo, "install")
	}
	for i := 0; i < lb.n; i++ {
		w := filepath.Join(top, fmt.Sprintf("w%d", i))
		if governed {
			runOnce(b, lb.admin, "--repo", repo, "allocate", "--task", fmt.Sprintf("T-%d", i), "--owner", "bench", w)
		} else {
			git(b, repo, "worktree", "add", "-q", "-b", fmt.Sprintf("wt/T-%d", i), w)
		}
		says := "ok\n"
		if i == bad {
			says = "bad\n"
		}
		os.WriteFile(filepath.Join(w, fmt.Sprintf("t%d", i)), []byte(says), 0o644)
		git(b, w, "add", ".")
		if governed {
			// As its writer, through the gate: what land lands is what
			// wt's ledger approved.
			runOnce(b, filepath.Join(lb.dir, "wt-exec"), "-C", w, "--", "git", "commit", "-q", "-m", fmt.Sprintf("task T-%d", i))
		} else {
			git(b, w, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", fmt.Sprintf("task T-%d", i))
		}
	}
	git(b, repo, "-c", "core.hooksPath=/dev/null", "commit", "-q", "--allow-empty", "-m", "main moves")
	if !governed {
		git(b, repo, "worktree", "add", "-q", "--detach", filepath.Join(top, "integ"))
	}
	return repo
}

// BenchmarkLand lands ten tasks that do not conflict, each tested by a
// 0.5 s test, with wt-admin land --batch 1 (the shipped binaries: the publication
// lease, the integration worktree, the intent, the test under wt-exec,
// the compare-and-swap, the records), against a shell loop doing the
// same work in turn in a worktree of its own (git rebase onto main, the
// test, git update-ref with the old value), on a twin repository, in the
// same run; and wt-admin land --test-unconfined on a third, for what the
// test's sandbox (a private view, no authority) costs. ms/task-* is each
// one's time per landed task; overhead-ms/task is wt's added time per
// task, wt/loop their ratio; sandbox-ms/task is the sandbox's share.
func BenchmarkLand(b *testing.B) {
	const tasks, test = 10, "sleep 0.5"
	lb := newLandBench(b, tasks)
	admin := lb.admin
	setup := func(governed bool) string { return lb.repo(governed, -1) }
	loop := `cd "$1/../integ" || exit 1
for i in 0 1 2 3 4 5 6 7 8 9; do
	old=$(git rev-parse refs/heads/main) &&
	git checkout -q --detach wt/T-$i && git rebase -q "$old" &&
	sh -c "$2" &&
	git update-ref refs/heads/main "$(git rev-parse HEAD)" "$old" || exit 1
done`
	var wtNS, loopNS, unconfinedNS time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		gov, plain, gov2 := setup(true), setup(false), setup(true)
		// One at a time (--batch 1): what each landing costs over the
		// loop's; BenchmarkLandBatch measures batches.
		args := []string{"--repo", gov, "land", "--batch", "1", "--test", test}
		args2 := []string{"--repo", gov2, "land", "--batch", "1", "--test-unconfined", "--test", test}
		for t := 0; t < tasks; t++ {
			args = append(args, "--task", fmt.Sprintf("T-%d", t))
			args2 = append(args2, "--task", fmt.Sprintf("T-%d", t))
		}
		settle()
		b.StartTimer()
		timed := func(name string, args ...string) time.Duration {
			t0 := time.Now()
			runOnce(b, name, args...)
			return time.Since(t0)
		}
		// The order turns each iteration: none of the three always goes
		// first on a machine warming up.
		runs := []func(){
			func() { wtNS += timed(admin, args...) },
			func() { loopNS += timed("sh", "-c", loop, "sh", plain, test) },
			func() { unconfinedNS += timed(admin, args2...) },
		}
		for k := range runs {
			runs[(i+k)%len(runs)]()
		}
		b.StopTimer()
		for _, r := range []string{gov, gov2} {
			if n := len(strings.Fields(git(b, r, "rev-list", "main"))); n != tasks+2 {
				b.Fatalf("wt-admin land left main with %d commits, want %d", n, tasks+2)
			}
		}
		if n := len(strings.Fields(git(b, plain, "rev-list", "main"))); n != tasks+2 {
			b.Fatalf("the loop left main with %d commits, want %d", n, tasks+2)
		}
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) / tasks / 1e6 }
	b.ReportMetric(per(wtNS), "ms/task-wt")
	b.ReportMetric(per(loopNS), "ms/task-loop")
	b.ReportMetric(per(wtNS)-per(loopNS), "overhead-ms/task")
	b.ReportMetric(float64(wtNS)/float64(loopNS), "wt/loop")
	b.ReportMetric(per(wtNS)-per(unconfinedNS), "sandbox-ms/task")
	b.ReportMetric(float64(unconfinedNS)/float64(loopNS), "wt-unconfined/loop")
}

// BenchmarkLandBatch lands ten tasks, each adding its own file, tested by
// a 1 s test with a real check (every task file says "ok"), with
// wt-admin land as shipped (batches of the whole queue, tests at once as
// the machine allows), against the serial shell loop of BenchmarkLand
// (which skips a task whose test fails), on twin repositories in the same
// run: all passing, and one task (the fifth) failing. wt/loop-* are the
// ratios of their times; runs-* count wt's test runs (the loop runs ten).
func BenchmarkLandBatch(b *testing.B) {
	const tasks = 10
	test := `sleep 1; for f in t*; do [ "$(cat "$f")" = ok ] || exit 1; done`
	lb := newLandBench(b, tasks)
	admin := lb.admin
	setup := lb.repo
	loop := `cd "$1/../integ" || exit 1
for i in 0 1 2 3 4 5 6 7 8 9; do
	old=$(git rev-parse refs/heads/main) &&
	git checkout -q --detach wt/T-$i && git rebase -q "$old" || exit 1
	if sh -c "$2"; then git update-ref refs/heads/main "$(git rev-parse HEAD)" "$old" || exit 1; fi
done`
	var wtPass, loopPass, wtFail, loopFail time.Duration
	var runsPass, runsFail int
	land := func(repo string) (time.Duration, int) {
		args := []string{"--repo", repo, "--json", "land", "--test", test}
		for t := 0; t < tasks; t++ {
			args = append(args, "--task", fmt.Sprintf("T-%d", t))
		}
		t0 := time.Now()
		cmd := exec.Command(admin, args...)
		out, _ := cmd.Output()
		d := time.Since(t0)
		var v struct {
			Decision struct {
				TestRuns int `json:"test_runs"`
			}
			Error struct {
				TestRuns int `json:"test_runs"`
			}
		}
		if err := json.Unmarshal(out, &v); err != nil {
			b.Fatalf("land: %v\n%s", err, out)
		}
		return d, v.Decision.TestRuns + v.Error.TestRuns
	}
	timedLoop := func(repo string) time.Duration {
		t0 := time.Now()
		runOnce(b, "sh", "-c", loop, "sh", repo, test)
		return time.Since(t0)
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		gp, pp, gf, pf := setup(true, -1), setup(false, -1), setup(true, 4), setup(false, 4)
		settle()
		b.StartTimer()
		runs := []func(){
			func() { d, n := land(gp); wtPass += d; runsPass += n },
			func() { loopPass += timedLoop(pp) },
			func() { d, n := land(gf); wtFail += d; runsFail += n },
			func() { loopFail += timedLoop(pf) },
		}
		for k := range runs {
			runs[(i+k)%len(runs)]()
		}
		b.StopTimer()
		for _, c := range []struct {
			repo string
			want int
		}{{gp, tasks + 2}, {pp, tasks + 2}, {gf, tasks + 1}, {pf, tasks + 1}} {
			if n := len(strings.Fields(git(b, c.repo, "rev-list", "main"))); n != c.want {
				b.Fatalf("%s: main has %d commits, want %d", c.repo, n, c.want)
			}
		}
	}
	b.ReportMetric(float64(wtPass)/float64(loopPass), "wt/loop-pass")
	b.ReportMetric(float64(wtFail)/float64(loopFail), "wt/loop-onefail")
	b.ReportMetric(float64(runsPass)/float64(b.N), "runs-pass")
	b.ReportMetric(float64(runsFail)/float64(b.N), "runs-onefail")
	b.ReportMetric(float64(wtPass.Milliseconds())/float64(b.N), "ms-wt-pass")
	b.ReportMetric(float64(loopPass.Milliseconds())/float64(b.N), "ms-loop-pass")
	b.ReportMetric(float64(wtFail.Milliseconds())/float64(b.N), "ms-wt-onefail")
	b.ReportMetric(float64(loopFail.Milliseconds())/float64(b.N), "ms-loop-onefail")
}
