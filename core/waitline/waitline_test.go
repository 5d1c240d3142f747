package waitline

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/wt-tool/wt/core/store"
)

// TestQueueTicketsNeverLost joins many waiters at once while each looks at
// the line: no live waiter's ticket is ever taken for a dead one's and
// removed (a ticket used to be visible, unlocked, between its creation and
// its flock), and the line holds every waiter, in arrival order.
func TestQueueTicketsNeverLost(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "leases"), 0o755)
	const n = 16
	for round := 0; round < 20; round++ {
		key := "w" + string(rune('a'+round))
		qs := make([]*Line, n)
		var wg sync.WaitGroup
		for i := range qs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				q, err := Join(root, key)
				if err != nil {
					t.Error(err)
					return
				}
				qs[i] = q
				q.Ahead() // looks at the line while others are joining
			}()
		}
		wg.Wait()
		ents, err := os.ReadDir(filepath.Join(root, "waiters", key))
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != n {
			t.Fatalf("round %d: %d tickets in the line, want %d", round, len(ents), n)
		}
		seen := map[int]bool{}
		for _, q := range qs {
			a := q.Ahead()
			if seen[a] {
				t.Fatalf("round %d: two waiters are at place %d", round, a)
			}
			seen[a] = true
		}
		for _, q := range qs {
			q.Leave()
		}
	}
}

// TestPIDs reads the waiters' pids from their tickets' names.
func TestPIDs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := store.WaitersDir(root, "w1")
	os.MkdirAll(dir, 0o755)
	for _, n := range []string{"00000000000000000001-0000000042", "00000000000000000002-0000000043", ".new-x", "junk-x"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o644)
	}
	got := PIDs(root, "w1")
	if len(got) != 2 || !got[42] || !got[43] {
		t.Errorf("PIDs: %v", got)
	}
	if got := PIDs(root, "none"); len(got) != 0 {
		t.Errorf("no line: %v", got)
	}
}
