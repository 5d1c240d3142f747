package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/fleet/etcdtest"
)

// TestFleetContention runs agents on several clones of one remote (each
// its own "machine": its own common dir and store) against a real
// 3-member etcd cluster, all of them `wt-exec --wait` on one task, and
// kills the cluster's leader once, while the first agent runs. Every agent
// runs once and ends 0, and no two of their runs overlap: one writer per
// task across the fleet, through the leader's death.
//
// The suite runs 3 clones × 2 agents; WT_TEST_FLEET_CLONES and
// WT_TEST_FLEET_AGENTS scale it (the full-size run is 10 × 5) and it logs
// its figures: grants, overlaps, the gap in grants after the leader's
// death, and the p50/p99 of the time from launch to the child's start.
func TestFleetContention(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an etcd cluster")
	}
	clones, agents := envInt("WT_TEST_FLEET_CLONES", 3), envInt("WT_TEST_FLEET_AGENTS", 2)
	members := etcdtest.Cluster(t, 3)
	t.Parallel()
	var endpoints []string
	for _, m := range members {
		endpoints = append(endpoints, m.Endpoint)
	}
	top := t.TempDir()
	remote := filepath.Join(top, "remote.git")
	git(t, top, "init", "-q", "--bare", "-b", "main", remote)
	seed := filepath.Join(top, "seed")
	git(t, top, "init", "-q", "-b", "main", seed)
	git(t, seed, "commit", "-q", "--allow-empty", "-m", "init")
	git(t, seed, "push", "-q", remote, "main")
	var wts []string
	for i := 0; i < clones; i++ {
		c := filepath.Join(top, fmt.Sprintf("clone%d", i))
		git(t, top, "clone", "-q", remote, c)
		run(t, c, "wt-admin", "init").ok(t)
		run(t, c, "wt-admin", "policy", "--coordinator", "etcd", "--etcd-endpoints", strings.Join(endpoints, ","), "--fleet-ttl", "5s").ok(t)
		w := filepath.Join(top, fmt.Sprintf("w%d", i))
		run(t, c, "wt-admin", "allocate", "--task", "T-1", "--owner", "alice", w).ok(t)
		run(t, c, "wt-hook", "install").ok(t)
		wts = append(wts, w)
	}
	runs := filepath.Join(top, "runs")
	if err := os.Mkdir(runs, 0o755); err != nil {
		t.Fatal(err)
	}
	// Each child writes its start, then its end, each a line of its own
	// file: wall-clock nanoseconds, one machine.
	child := `f=$1/$2; date +%s%N > $f.start; sleep 0.1; date +%s%N > $f.end`
	type outcome struct {
		name     string
		launched int64
		res      result
	}
	var (
		mu  sync.Mutex
		out []outcome
		wg  sync.WaitGroup
	)
	for i, w := range wts {
		for a := 0; a < agents; a++ {
			name := fmt.Sprintf("c%d-a%d", i, a)
			wg.Add(1)
			go func() {
				defer wg.Done()
				launched := time.Now().UnixNano()
				cmd, o, e := command(w, "wt-exec", "--wait", "--client-id", name, "--", "sh", "-c", child, "sh", runs, name)
				r := resultOf(cmd, cmd.Run(), o, e)
				mu.Lock()
				out = append(out, outcome{name, launched, r})
				mu.Unlock()
			}()
		}
	}
	// The leader dies while the first agent runs.
	waitFor(t, "the first agent to start", func() bool {
		ents, _ := os.ReadDir(runs)
		return len(ents) > 0
	})
	leader := etcdtest.Leader(t, members)
	killed := time.Now().UnixNano()
	leader.Kill()
	wg.Wait()

	type span struct {
		name       string
		start, end int64
	}
	var spans []span
	var waits []time.Duration
	for _, o := range out {
		if o.res.code != 0 {
			t.Errorf("agent %s: exit %d\n%s", o.name, o.res.code, o.res.stderr)
			continue
		}
		s, e := readNanos(t, filepath.Join(runs, o.name+".start")), readNanos(t, filepath.Join(runs, o.name+".end"))
		spans = append(spans, span{o.name, s, e})
		waits = append(waits, time.Duration(s-o.launched))
	}
	slices.SortFunc(spans, func(a, b span) int { return int(a.start - b.start) })
	overlaps := 0
	for i := 1; i < len(spans); i++ {
		if spans[i].start < spans[i-1].end {
			overlaps++
			t.Errorf("%s started %s before %s ended: two writers of T-1 at once", spans[i].name,
				time.Duration(spans[i-1].end-spans[i].start), spans[i-1].name)
		}
	}
	gap := time.Duration(0)
	for i := 1; i < len(spans); i++ {
		if spans[i].start > killed && spans[i-1].end <= killed+int64(time.Minute) {
			gap = time.Duration(spans[i].start - max(spans[i-1].end, killed))
			break
		}
	}
	slices.Sort(waits)
	pct := func(p float64) time.Duration {
		if len(waits) == 0 {
			return 0
		}
		return waits[min(len(waits)-1, int(p*float64(len(waits))))]
	}
	t.Logf("%d clones × %d agents: %d grants, %d overlaps, leader %s killed; first grant after it %s after the previous run or the kill; launch to start p50 %s, p99 %s",
		clones, agents, len(spans), overlaps, leader.Name, gap.Round(time.Millisecond), pct(0.5).Round(time.Millisecond), pct(0.99).Round(time.Millisecond))
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func readNanos(t *testing.T, p string) int64 {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %q", p, b)
	}
	return n
}
