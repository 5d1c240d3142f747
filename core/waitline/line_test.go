package waitline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/internal/wttest"
)

// newLine makes a line's directory and a watched one, and returns them.
func newLine(t *testing.T) (dir, watch string) {
	t.Helper()
	root := t.TempDir()
	dir, watch = filepath.Join(root, "line"), filepath.Join(root, "watched")
	if err := os.Mkdir(watch, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, watch
}

func join(t *testing.T, dir, watch string) *Line {
	t.Helper()
	q, err := JoinAt(dir, watch)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Leave)
	return q
}

// ticket plants a ticket named for arrival ns and pid. A held one is
// locked (a live waiter: here another open file of this process) until
// release, or the test's end.
func ticket(t *testing.T, dir string, ns int64, pid int, held bool) (path string, release func()) {
	t.Helper()
	path = filepath.Join(dir, ticketName(ns, pid))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if !held {
		f.Close()
		return path, func() {}
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return path, func() { f.Close() }
}

func ticketName(ns int64, pid int) string { return fmt.Sprintf("%020d-%010d", ns, pid) }

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// TestJoinAtPutsALockedTicketInTheLine: the ticket is named by arrival and
// this process's pid, locked (another open of it cannot lock it), and
// gone after Leave, which may be called twice.
func TestJoinAtPutsALockedTicketInTheLine(t *testing.T) {
	t.Parallel()
	dir, watch := newLine(t)
	q := join(t, dir, watch)
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 || ents[0].Name() != q.name {
		t.Fatalf("the line holds %v (%v), want only %s", ents, err, q.name)
	}
	if pids := waitersPIDs(t, dir); len(pids) != 1 || pids[0] != os.Getpid() {
		t.Errorf("Waiters: %v, want this process", pids)
	}
	f, err := os.Open(filepath.Join(dir, q.name))
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
		t.Errorf("the ticket is not locked: flock says %v", err)
	}
	f.Close()
	q.Leave()
	q.Leave()
	if exists(filepath.Join(dir, q.name)) {
		t.Error("the ticket is still in the line after Leave")
	}
}

// TestJoinAtRefusals: a line that cannot be made is StoreNotWritable; a
// watched directory that does not exist is Internal, and the ticket taken
// before the watch failed is given back.
func TestJoinAtRefusals(t *testing.T) {
	t.Parallel()
	dir, watch := newLine(t)
	blocker := filepath.Join(filepath.Dir(dir), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := JoinAt(filepath.Join(blocker, "line"), watch)
	wttest.WantCode(t, err, decision.StoreNotWritable)

	_, err = JoinAt(dir, filepath.Join(watch, "missing"))
	wttest.WantCode(t, err, decision.Internal)
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("after the refused join the line holds %v (%v)", ents, err)
	}
}

// TestAheadCountsLiveTicketsAheadAndRemovesStaleOnes: tickets before this
// waiter's count if locked or unexaminable, are removed if nobody holds
// them; tickets after it, and hidden ones being made, do not count and are
// left alone.
func TestAheadCountsLiveTicketsAheadAndRemovesStaleOnes(t *testing.T) {
	t.Parallel()
	dir, watch := newLine(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	live, leave := ticket(t, dir, 1, 101, true)
	stale, _ := ticket(t, dir, 2, 102, false)
	// A symlink is never opened through (O_NOFOLLOW): it cannot be
	// examined, so it counts as a live waiter ahead, and stays.
	odd := filepath.Join(dir, ticketName(3, 103))
	if err := os.Symlink(stale, odd); err != nil {
		t.Fatal(err)
	}
	hidden := filepath.Join(dir, ".new-"+ticketName(4, 104))
	if err := os.WriteFile(hidden, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	q := join(t, dir, watch)
	// After this waiter: neither counted nor removed, live or stale.
	later, _ := ticket(t, dir, 1<<62, 105, false)

	if n := q.Ahead(); n != 2 {
		t.Errorf("Ahead: %d, want 2 (the locked ticket and the symlink)", n)
	}
	for p, want := range map[string]bool{live: true, stale: false, odd: true, hidden: true, later: true} {
		if exists(p) != want {
			t.Errorf("%s exists: %v, want %v", filepath.Base(p), !want, want)
		}
	}
	// An open and a close of the live ticket by another file drop no
	// lock: it still counts.
	if err := os.Remove(odd); err != nil {
		t.Fatal(err)
	}
	if f, err := os.Open(live); err == nil {
		f.Close()
	}
	if n := q.Ahead(); n != 1 || !exists(live) {
		t.Errorf("Ahead with the live waiter still there: %d, want 1", n)
	}
	// Its waiter leaves without a word (its lock dropped): the ticket is
	// stale, and removed at the next look.
	leave()
	if n := q.Ahead(); n != 0 || exists(live) {
		t.Errorf("Ahead after the waiter ahead died: %d (its ticket still there: %v), want 0", n, exists(live))
	}
}

// TestAheadOfAnUnreadableLineIsOne: a line that cannot be listed may
// have someone ahead.
func TestAheadOfAnUnreadableLineIsOne(t *testing.T) {
	t.Parallel()
	dir, watch := newLine(t)
	q := join(t, dir, watch)
	q.dir = filepath.Join(dir, "gone")
	if n := q.Ahead(); n != 1 {
		t.Errorf("Ahead of a missing line: %d, want 1", n)
	}
}

// TestWaitersListsLiveTicketsInArrivalOrder: live tickets, oldest first,
// with pid and arrival time from the name; a stale ticket, a hidden one
// and a name that is not a ticket's are left out, and none is removed.
func TestWaitersListsLiveTicketsInArrivalOrder(t *testing.T) {
	t.Parallel()
	dir, watch := newLine(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ticket(t, dir, 5, 205, true)
	ticket(t, dir, 3, 203, true)
	stale, _ := ticket(t, dir, 4, 204, false)
	odd := filepath.Join(dir, ticketName(6, 206))
	if err := os.Symlink("nowhere", odd); err != nil {
		t.Fatal(err)
	}
	junk := []string{".new-" + ticketName(1, 201), "notaticket", "x-1", "1-y"}
	for _, n := range junk {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	q := join(t, dir, watch)
	got, err := Waiters(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Waiter{{203, 3}, {205, 5}, {206, 6}}
	if len(got) != len(want)+1 {
		t.Fatalf("Waiters: %+v, want %+v then this process", got, want)
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("waiter %d: %+v, want %+v", i, got[i], w)
		}
	}
	if last := got[len(got)-1]; last.PID != os.Getpid() || last.Since <= 6 {
		t.Errorf("the last waiter: %+v, want this process, joined on the boot clock", last)
	}
	if !exists(stale) {
		t.Error("Waiters removed a stale ticket")
	}
	q.Leave()
	if got, _ := Waiters(dir); len(got) != len(want) {
		t.Errorf("after Leave: %+v", got)
	}
}

// TestWaitersOfNoLine: no directory is no waiters; a file where the
// directory should be is an error.
func TestWaitersOfNoLine(t *testing.T) {
	t.Parallel()
	dir, _ := newLine(t)
	if got, err := Waiters(dir); err != nil || got != nil {
		t.Errorf("Waiters of a missing line: %v, %v", got, err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Waiters(dir); err == nil {
		t.Errorf("Waiters of a file: %v, no error", got)
	}
}

func waitersPIDs(t *testing.T, dir string) []int {
	t.Helper()
	ws, err := Waiters(dir)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, w := range ws {
		pids = append(pids, w.PID)
	}
	return pids
}

// pending reports whether an inotify event waits to be read on q.
func pending(t *testing.T, q *Line) bool {
	t.Helper()
	return waitReadable(t, q.inotify, 0)
}

// waitReadable polls fd for up to ms milliseconds (-1: no limit) and
// reports whether it is readable. Poll is not restarted after a signal
// (the Go runtime sends itself some): it is called again.
func waitReadable(t *testing.T, fd, ms int) bool {
	t.Helper()
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
}

// TestSleepDrainsTheChangesThatWokeIt: a file written in the watched
// directory, and a ticket joining or leaving the line, are events that
// wake Sleep; it reads them all before it returns.
func TestSleepDrainsTheChangesThatWokeIt(t *testing.T) {
	t.Parallel()
	dir, watch := newLine(t)
	q := join(t, dir, watch)
	if err := os.WriteFile(filepath.Join(watch, "lease"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !pending(t, q) {
		t.Fatal("a file written in the watched directory made no event")
	}
	q.Sleep(context.Background(), time.Time{})
	if pending(t, q) {
		t.Error("Sleep left the events that woke it")
	}
	// A ticket leaving the line is a change too.
	other := join(t, dir, watch)
	q.Sleep(context.Background(), time.Time{}) // the join's rename woke it
	other.Leave()
	if !pending(t, q) {
		t.Error("a ticket's removal made no event")
	}
}

// TestSleepPastItsDeadlineReturnsAtOnce: with the deadline passed Sleep
// does not wait and reads nothing.
func TestSleepPastItsDeadlineReturnsAtOnce(t *testing.T) {
	t.Parallel()
	dir, watch := newLine(t)
	q := join(t, dir, watch)
	if err := os.WriteFile(filepath.Join(watch, "lease"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	q.Sleep(context.Background(), time.Now().Add(-time.Second))
	if !pending(t, q) {
		t.Error("Sleep past its deadline read the events")
	}
}

// TestSleepEndsWithItsContext: a context that ends wakes Sleep through the
// wake-up pipe, which then holds the byte the cancel wrote.
func TestSleepEndsWithItsContext(t *testing.T) {
	t.Parallel()
	dir, watch := newLine(t)
	q := join(t, dir, watch)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	q.Sleep(ctx, time.Time{})
	// The cancel's write runs on a goroutine of its own: on a loaded
	// machine Sleep may have returned on its timeout before it ran.
	waitReadable(t, q.wake[0], -1)
	buf := make([]byte, 8)
	if n, err := unix.Read(q.wake[0], buf); n != 1 || err != nil {
		t.Errorf("the wake-up pipe holds %d bytes (%v), want the cancel's 1", n, err)
	}
}
