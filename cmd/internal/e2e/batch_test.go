package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
			t.Parallel()
			f := newLandFixture(t)
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
