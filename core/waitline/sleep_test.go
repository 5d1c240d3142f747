package waitline

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestSleepCancelledThenLeave: Sleep with a context that has already
// ended returns at once, and Leave right after it closes the wake pipe
// only once the context's callback has written to it: the callback never
// writes to a closed (or reused) descriptor. Under -race this failed
// before Sleep waited for the callback (a write in Leave against the
// callback's read of the pipe).
func TestSleepCancelledThenLeave(t *testing.T) {
	root := t.TempDir()
	for i := range 50 {
		q, err := JoinAt(filepath.Join(root, "line"), root)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		q.Sleep(ctx, time.Time{})
		q.Leave()
		if q.wake != [2]int{-1, -1} || q.inotify != -1 {
			t.Fatalf("round %d: Leave left %v %d", i, q.wake, q.inotify)
		}
	}
}
