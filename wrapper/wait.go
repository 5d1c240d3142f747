package wrapper

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// WaitRecheck bounds how long a waiting wt-exec sleeps between looks at
// the lease when nothing wakes it: a holder that dies without releasing
// (kill -9) changes no file, so a waiter also looks on its own, this often.
const WaitRecheck = time.Second

// waitQueue is a worktree's line of wt-exec --wait runs: one ticket file
// per waiter in <store>/waiters/<worktree key>/, named by arrival (boot
// clock nanoseconds, then pid), held under an exclusive flock for the
// waiter's life. A waiter tries for the lease only when no live ticket is
// ahead of its own, so waiters are served in arrival order. A waiter that
// died holds no flock: its ticket is stale, and the next waiter to look
// removes it. A ticket that cannot be examined counts as a live one ahead
// (evidence that cannot be read is never evidence that something is gone).
type waitQueue struct {
	dir, leases string
	name        string
	f           *os.File
	inotify     int
	wake        [2]int // a pipe: a signal's cancel writes to it
}

// joinQueue takes a ticket in the queue of the worktree with key under the
// store at root, and watches the queue and the leases for changes.
func joinQueue(root, key string) (*waitQueue, error) {
	q := &waitQueue{dir: store.WaitersDir(root, key), leases: store.LeasesDir(root), inotify: -1, wake: [2]int{-1, -1}}
	if err := os.MkdirAll(q.dir, 0o755); err != nil {
		return nil, decision.Wrap(decision.StoreNotWritable, err, "create the wait queue %s", q.dir)
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return nil, decision.Wrap(decision.Internal, err, "read the boot clock")
	}
	q.name = fmt.Sprintf("%020d-%010d", ts.Nano(), os.Getpid())
	// The ticket appears in the line already locked: made under a hidden
	// name, locked, then renamed. A ticket seen unlocked is a dead
	// waiter's, and whoever sees it removes it.
	hidden := filepath.Join(q.dir, ".new-"+q.name)
	f, err := os.OpenFile(hidden, os.O_CREATE|os.O_EXCL|os.O_RDWR|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, decision.Wrap(decision.StoreNotWritable, err, "take a ticket in %s", q.dir)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		os.Remove(hidden) // Best effort: never in the line.
		return nil, decision.Wrap(decision.Internal, err, "lock the ticket %s", hidden)
	}
	if err := os.Rename(hidden, filepath.Join(q.dir, q.name)); err != nil {
		f.Close()
		os.Remove(hidden) // Best effort: never in the line.
		return nil, decision.Wrap(decision.StoreNotWritable, err, "take a ticket in %s", q.dir)
	}
	q.f = f
	if q.inotify, err = unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK); err != nil {
		q.leave()
		return nil, decision.Wrap(decision.Internal, err, "watch the wait queue")
	}
	for _, d := range []string{q.dir, q.leases} {
		if _, err := unix.InotifyAddWatch(q.inotify, d, unix.IN_DELETE|unix.IN_MOVED_TO|unix.IN_MOVED_FROM|unix.IN_CLOSE_WRITE); err != nil {
			q.leave()
			return nil, decision.Wrap(decision.Internal, err, "watch %s", d)
		}
	}
	if err := unix.Pipe2(q.wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		q.leave()
		return nil, decision.Wrap(decision.Internal, err, "make the wait queue's wake-up pipe")
	}
	return q, nil
}

// ahead counts the live waiters ahead of this one, removing stale tickets.
func (q *waitQueue) ahead() int {
	ents, err := os.ReadDir(q.dir)
	if err != nil {
		return 1 // unreadable: someone may be ahead
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") { // a ticket being made
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	n := 0
	for _, name := range names {
		if name >= q.name {
			break
		}
		p := filepath.Join(q.dir, name)
		f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			n++
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			// Its waiter is gone: nobody holds its lock.
			os.Remove(p) // Best effort: another waiter may remove it first.
		} else {
			n++
		}
		f.Close()
	}
	return n
}

// sleep waits for a change in the queue or the leases, at most WaitRecheck
// and at most until deadline (zero: none); it returns early when ctx ends.
func (q *waitQueue) sleep(ctx context.Context, deadline time.Time) {
	d := WaitRecheck
	if !deadline.IsZero() {
		d = min(d, time.Until(deadline))
	}
	if d <= 0 {
		return
	}
	stop := context.AfterFunc(ctx, func() { unix.Write(q.wake[1], []byte{0}) })
	defer stop()
	fds := []unix.PollFd{{Fd: int32(q.inotify), Events: unix.POLLIN}, {Fd: int32(q.wake[0]), Events: unix.POLLIN}}
	if _, err := unix.Poll(fds, int(d.Milliseconds())+1); err != nil && !errors.Is(err, unix.EINTR) {
		return
	}
	// Drain what woke us; the caller looks again either way.
	buf := make([]byte, 4096)
	for {
		if n, err := unix.Read(q.inotify, buf); n <= 0 || err != nil {
			break
		}
	}
}

// waitingPIDs are the pids of the wt-exec --wait runs in the line of
// worktree key of the store at root (from their tickets' names): would-be
// writers, which the lease orders, not occupants.
func waitingPIDs(root, key string) map[int]bool {
	out := map[int]bool{}
	ents, err := os.ReadDir(store.WaitersDir(root, key))
	if err != nil {
		return out
	}
	for _, e := range ents {
		if _, pid, ok := strings.Cut(e.Name(), "-"); ok {
			if n, err := strconv.Atoi(pid); err == nil {
				out[n] = true
			}
		}
	}
	return out
}

// leave gives the ticket back.
func (q *waitQueue) leave() {
	if q.f != nil {
		os.Remove(filepath.Join(q.dir, q.name)) // Best effort: a ticket nobody locks is stale anyway.
		q.f.Close()
		q.f = nil
	}
	for _, fd := range []int{q.inotify, q.wake[0], q.wake[1]} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	q.inotify, q.wake = -1, [2]int{-1, -1}
}

// waitable is a refusal that --wait waits out: the lease is held by a live
// writer (here or in the fleet), reserved for another client, fenced by a
// process the last run left in the worktree, or the fleet does not answer (a cluster
// electing a new leader; nothing is granted meanwhile, and --timeout
// bounds a fleet that never comes back).
func waitable(err error) bool {
	switch decision.CodeOf(err) {
	case decision.WriterLeaseHeld, decision.FleetLeaseHeld, decision.FleetUnreachable, decision.WriterLeaseReserved, decision.RuntimeOccupied:
		return true
	}
	return false
}

// waitAndAcquire is acquire for --wait: in line behind earlier waiters,
// trying only when none is ahead, and sleeping between tries until the
// lease changes (or WaitRecheck passes), until acquire succeeds or refuses
// for another reason, the deadline passes, or a signal stops the wait.
//
// A run whose client the worktree's next grant is reserved for (a handoff)
// tries whatever its place in line: the reservation comes before the line.
func (s *supervisor) waitAndAcquire(root string, c gitrepo.Checkout, client string, acquire func() error) error {
	// Signals are caught before the run takes its place in line: one that
	// came before watchStart's goroutine had caught them (a loaded
	// machine) would kill a waiter with its default action, unreported.
	// (Outside --wait the catch stays in the background: it costs a run
	// 0.2 ms, and a signal that early kills nothing that has started.)
	s.catch()
	key := c.Key
	if key == gitrepo.MainKey {
		key = "main"
	}
	q, err := joinQueue(root, key)
	if err != nil {
		return err
	}
	defer q.leave()
	now := time.Now
	if s.now != nil {
		now = s.now
	}
	var deadline time.Time
	if s.opts.Timeout > 0 {
		deadline = now().Add(s.opts.Timeout)
	}
	told := false
	tell := func(msg string) {
		if !told && s.opts.Waiting != nil {
			s.opts.Waiting(msg)
		}
		told = true
	}
	var last error
	for {
		if n := q.ahead(); n > 0 && !lease.ReservedFor(s.repo, c, client) {
			tell(fmt.Sprintf("%d earlier wt-exec --wait run(s) wait for %s; this one is next after them", n, c.TopLevel))
		} else {
			err := acquire()
			if err == nil || !waitable(err) {
				return err
			}
			last = err
			if d, ok := decision.As(err); ok {
				tell(d.Code + ": " + d.Message)
			}
		}
		if s.startCtx.Err() != nil {
			return s.stopped()
		}
		if !deadline.IsZero() && !now().Before(deadline) {
			why := "earlier waiters were still in line"
			if last != nil {
				why = last.Error()
			}
			return decision.New(decision.WriterLeaseWaitTimeout, "waited %s for the lease of %s: %s", s.opts.Timeout, c.TopLevel, why).
				WithHint("wait longer (--timeout D, or no --timeout), or see who holds it: wt-admin lease inspect %s", shell.Word(c.TopLevel))
		}
		q.sleep(s.startCtx, deadline)
	}
}
