package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// landOut is wt-admin --json land's answer: its tasks and its count of
// test runs, whether it succeeded or refused.
type landOut struct {
	Tasks []struct {
		Task, Code, Result, Batch string
		TestLog                   string `json:"test_log"`
		Paths                     []string
	}
	TestRuns int `json:"test_runs"`
}

func parseLand(t *testing.T, r result) landOut {
	t.Helper()
	var out struct {
		OK       bool
		Decision landOut
		Error    landOut
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("land: %v\n%s\n%s", err, r.stdout, r.stderr)
	}
	if out.OK {
		return out.Decision
	}
	return out.Error
}

// TestLandBatch lands ten tasks (each adding its own file; a task whose
// file says "bad" fails main's check, and two tasks that rewrite
// shared.txt's first line conflict with each other) by batches, and
// checks what landed, in what order, how often main moved, that main was
// only ever at a commit the check passed, and how many tests ran.
func TestLandBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("lands ten tasks in each of several ways")
	}
	t.Parallel()
	admin := buildCrashAdmin(t)
	cases := []struct {
		name string
		args []string
		// bad fail the check; conflict rewrite shared.txt's first line
		// (the second of them conflicts with the first).
		bad, conflict []int
		runs          int // test runs, exactly
		moves         int // moves of main
	}{
		{name: "all-pass", args: []string{"--jobs", "1"}, runs: 1, moves: 1},
		// 10 fails, 5 fails, 3 passes (lands 0-2), 4 passes (lands 3),
		// 4 alone fails (handed back), 5-9 pass.
		{name: "one-fails", args: []string{"--jobs", "1"}, bad: []int{4}, runs: 5, moves: 3},
		{name: "two-fail", args: []string{"--jobs", "1"}, bad: []int{2, 7}, runs: 9, moves: 3},
		{name: "conflict", args: []string{"--jobs", "1"}, conflict: []int{3, 6}, runs: 1, moves: 1},
		// Batches of three, two tested at once (main+0-2, main+0-5); the
		// first fails, so the second is dropped and the first bisected.
		{name: "speculate", args: []string{"--jobs", "2", "--batch", "3"}, bad: []int{1}, runs: 8, moves: 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newLandFixture(t)
			t.Parallel() // after the fixture: it runs wt-admin in this process
			run(t, f.repo, admin, "policy", "--publication-lease", "on").ok(t)
			args := []string{"--json", "land", "--test", f.test()}
			for i := 0; i < 10; i++ {
				task := fmt.Sprintf("T-%d", i)
				p := filepath.Join(f.top, fmt.Sprintf("w%d", i))
				run(t, f.repo, admin, "allocate", "--task", task, "--owner", "alice", p).ok(t)
				work := fmt.Sprintf("echo ok > t%d.txt && git add t%d.txt", i, i)
				if slices.Contains(c.bad, i) {
					work = fmt.Sprintf("echo bad > t%d.txt && git add t%d.txt", i, i)
				}
				if slices.Contains(c.conflict, i) {
					work = fmt.Sprintf("echo agent%d > shared.txt.new && sed 1d shared.txt >> shared.txt.new && mv shared.txt.new shared.txt", i)
				}
				runIdent(t, p, "wt-exec", "--", "sh", "-c", work+" && git commit -qam 'task "+task+"'").ok(t)
				args = append(args, "--task", task)
			}
			base := git(t, f.repo, "rev-parse", "main")
			args = append(args, c.args...)
			out := parseLand(t, runIdent(t, f.repo, admin, args...))

			var landed []string
			for i, tr := range out.Tasks {
				want := "LANDED"
				switch {
				case slices.Contains(c.bad, i):
					want = "LAND_TEST_FAILED"
				case len(c.conflict) > 1 && i == c.conflict[1]:
					want = "LAND_CONFLICT"
				default:
					landed = append(landed, tr.Task)
				}
				if tr.Task != fmt.Sprintf("T-%d", i) || tr.Code != want {
					t.Errorf("result %d: %s %s, want T-%d %s", i, tr.Task, tr.Code, i, want)
				}
				if want == "LAND_TEST_FAILED" {
					if _, err := os.Stat(tr.TestLog); err != nil || !strings.Contains(tr.TestLog, "/land-logs/"+tr.Task+"/") {
						t.Errorf("%s: its test log %q: %v", tr.Task, tr.TestLog, err)
					}
				}
				if want == "LAND_CONFLICT" && !slices.Equal(tr.Paths, []string{"shared.txt"}) {
					t.Errorf("%s: conflicting paths %v, want [shared.txt]", tr.Task, tr.Paths)
				}
			}
			if len(out.Tasks) != 10 {
				t.Fatalf("land reported %d tasks, want 10: %+v", len(out.Tasks), out.Tasks)
			}
			// Each landed task once, in queue order.
			var order []string
			for _, s := range strings.Split(git(t, f.repo, "log", "--reverse", "--format=%s", base+"..main"), "\n") {
				if task, ok := strings.CutPrefix(s, "task "); ok {
					order = append(order, task)
				}
			}
			if !slices.Equal(order, landed) {
				t.Errorf("main holds %v, want %v in this order, each once", order, landed)
			}
			tips := mainTips(t, f.repo, base)
			if c.moves > 0 && len(tips) != c.moves {
				t.Errorf("main moved %d times, want %d", len(tips), c.moves)
			}
			for _, tip := range tips {
				if !slices.Contains(f.passed(), tip) {
					t.Errorf("main was at %s, which the check never passed", tip)
				}
			}
			logs, _ := filepath.Glob(filepath.Join(f.repo, ".git", "wt", "land-logs", "batches", "*", "*.log"))
			if out.TestRuns != len(logs) {
				t.Errorf("land says %d test runs; %d candidate logs", out.TestRuns, len(logs))
			}
			if c.runs > 0 && out.TestRuns != c.runs {
				t.Errorf("%d test runs, want %d", out.TestRuns, c.runs)
			}
			if c.runs < 0 && out.TestRuns >= 10 {
				t.Errorf("%d test runs: no fewer than one a task", out.TestRuns)
			}
			t.Logf("%s: %d test runs, main moved %d times", c.name, out.TestRuns, len(tips))
		})
	}
}

// mainTips are the commits main was moved to after base, newest first
// (its reflog): where it was, not every commit it holds.
func mainTips(t *testing.T, repo, base string) []string {
	t.Helper()
	var out []string
	for _, h := range strings.Fields(git(t, repo, "reflog", "show", "--format=%H", "refs/heads/main")) {
		if h == base {
			break
		}
		out = append(out, h)
	}
	return out
}

// TestLandBatchKilledAnywhere kills wt-admin land in batches (three
// tasks, --batch 2 --jobs 2: two tests at once, two moves of main, with
// --push to a bare remote) at its crash points and at random moments.
// After each kill main, here and on the remote, is its old tip or a
// commit the check passed; land --recover concludes what the dead lander
// began; and landing the three again lands each exactly once.
func TestLandBatchKilledAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real processes")
	}
	f := newLandFixture(t)
	t.Parallel()
	admin := buildCrashAdmin(t)
	remote := filepath.Join(f.top, "remote.git")
	git(t, f.top, "init", "-q", "--bare", "-b", "main", remote)
	git(t, f.repo, "remote", "add", "origin", remote)
	git(t, f.repo, "push", "-q", "origin", "main")
	points := []string{"land:integrated", "land:tested", "land:intent", "land:pushed", "land:moved", "land:recorded"}
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	// make test's share: three of the crash points (the seed picks them;
	// each run of the suite another three) and one random moment;
	// WT_TEST_KILLS=N: every crash point and N random moments.
	random := 1
	if n, err := strconv.Atoi(os.Getenv("WT_TEST_KILLS")); err == nil && n > 0 {
		random = n
	} else {
		rng.Shuffle(len(points), func(i, j int) { points[i], points[j] = points[j], points[i] })
		points = points[:3]
	}
	t.Logf("seed %d: crash points %v and %d random moment(s)", seed, points, random)
	kills := len(points) + random
	test := "sleep 0.05; " + f.test()
	for i := 0; i < kills; i++ {
		var tasks []string
		args := []string{"--repo", f.repo, "land", "--batch", "2", "--jobs", "2", "--push", "origin", "--test", test}
		for k := 0; k < 3; k++ {
			task := fmt.Sprintf("K-%d-%d", i, k)
			p := filepath.Join(f.top, fmt.Sprintf("k%d-%d", i, k))
			run(t, f.repo, admin, "allocate", "--task", task, "--owner", "alice", p).ok(t)
			runIdent(t, p, "wt-exec", "--", "sh", "-c", fmt.Sprintf("echo ok > t%d-%d.txt && git add t%d-%d.txt && git commit -qm 'task %s'", i, k, i, k, task)).ok(t)
			tasks = append(tasks, task)
			args = append(args, "--task", task)
		}
		before := git(t, f.repo, "rev-parse", "main")
		cmd, _, errb := command(f.repo, admin, args...)
		cmd.Env = append(cmd.Env, ident...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		how := "random"
		if i < len(points) {
			how = points[i]
			cmd.Env = append(cmd.Env, "WT_TEST_CRASH_AT="+how)
			if err := cmd.Run(); err == nil {
				t.Fatalf("land was not killed at %s:\n%s", how, errb)
			}
		} else {
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Duration(200+rng.Intn(1200)) * time.Millisecond)
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		}
		for _, where := range []string{f.repo, remote} {
			if now := git(t, where, "rev-parse", "main"); now != before && !slices.Contains(f.passed(), now) {
				t.Fatalf("killed %s: main in %s is at %s, neither its old tip %s nor a tip the check passed", how, where, now, before)
			}
		}
		settleKilledLander(t, f, admin, remote, cmd.Process.Pid)
		if rec := run(t, f.repo, admin, "land", "--recover").ok(t); !strings.Contains(rec.stdout, "LAND_RECOVERED") {
			t.Fatalf("killed %s: land --recover:\n%s", how, rec.stdout)
		}
		again := runIdent(t, f.repo, admin, append([]string{"--json"}, args[2:]...)...)
		out := parseLand(t, again)
		if again.code != 0 {
			t.Fatalf("killed %s: landing again: exit %d\n%s\n%s", how, again.code, again.stdout, again.stderr)
		}
		for _, tr := range out.Tasks {
			if tr.Code != "LANDED" && tr.Code != "ALREADY_LANDED" {
				t.Fatalf("killed %s: landing again: %s %s", how, tr.Task, tr.Code)
			}
		}
		for _, where := range []string{f.repo, remote} {
			n := subjects(t, where)
			for _, task := range tasks {
				if n["task "+task] != 1 {
					t.Fatalf("killed %s: main in %s holds task %s's commit %d times", how, where, task, n["task "+task])
				}
			}
		}
	}
}
