// Package waitline is the line of wt-exec --wait runs in front of a
// worktree's writer lease: one ticket per waiter, served in arrival order,
// woken by a change of the line or of the leases (docs/design.md,
// "wt-exec"). wrapper's --wait tries for the lease when no live waiter is
// ahead of it.
package waitline

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
	"github.com/wt-tool/wt/core/store"
)

// Recheck bounds how long a waiting wt-exec sleeps between looks at
// the lease when nothing wakes it: a holder that dies without releasing
// (kill -9) changes no file, so a waiter also looks on its own, this often.
const Recheck = time.Second

// Line is a worktree's line of wt-exec --wait runs: one ticket file
// per waiter in <store>/waiters/<worktree key>/, named by arrival (boot
// clock nanoseconds, then pid), held under an exclusive flock for the
// waiter's life. A waiter tries for the lease only when no live ticket is
// ahead of its own, so waiters are served in arrival order. A waiter that
// died holds no flock: its ticket is stale, and the next waiter to look
// removes it. A ticket that cannot be examined counts as a live one ahead
// (evidence that cannot be read is never evidence that something is gone).
type Line struct {
	dir, leases string
	name        string
	f           *os.File
	inotify     int
	wake        [2]int // a pipe: a signal's cancel writes to it
}

// Join takes a ticket in the line of the worktree with key under the
// store at root, and watches the line and the leases for changes.
func Join(root, key string) (*Line, error) {
	return JoinAt(store.WaitersDir(root, key), store.LeasesDir(root))
}

// JoinAt takes a ticket in the line kept in dir, and watches the line and
// the directory watch (where what is waited for is recorded) for changes:
// the landers' line in front of the publication lease
// (store.LandersDir).
func JoinAt(dir, watch string) (*Line, error) {
	q := &Line{dir: dir, leases: watch, inotify: -1, wake: [2]int{-1, -1}}
	if err := os.MkdirAll(q.dir, 0o755); err != nil {
		return nil, decision.SayWrap(decision.StoreNotWritable, err, "create-wait", q.dir)
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return nil, decision.SayWrap(decision.Internal, err, "read-boot")
	}
	q.name = fmt.Sprintf("%020d-%010d", ts.Nano(), os.Getpid())
	// The ticket appears in the line already locked: made under a hidden
	// name, locked, then renamed. A ticket seen unlocked is a dead
	// waiter's, and whoever sees it removes it.
	hidden := filepath.Join(q.dir, ".new-"+q.name)
	f, err := os.OpenFile(hidden, os.O_CREATE|os.O_EXCL|os.O_RDWR|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, decision.SayWrap(decision.StoreNotWritable, err, "take-ticket", q.dir)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		os.Remove(hidden) // Best effort: never in the line.
		return nil, decision.SayWrap(decision.Internal, err, "lock-ticket", hidden)
	}
	if err := os.Rename(hidden, filepath.Join(q.dir, q.name)); err != nil {
		f.Close()
		os.Remove(hidden) // Best effort: never in the line.
		return nil, decision.SayWrap(decision.StoreNotWritable, err, "take-ticket", q.dir)
	}
	q.f = f
	if q.inotify, err = unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK); err != nil {
		q.Leave()
		return nil, decision.SayWrap(decision.Internal, err, "watch-wait")
	}
	for _, d := range []string{q.dir, q.leases} {
		if _, err := unix.InotifyAddWatch(q.inotify, d, unix.IN_DELETE|unix.IN_MOVED_TO|unix.IN_MOVED_FROM|unix.IN_CLOSE_WRITE); err != nil {
			q.Leave()
			return nil, decision.SayWrap(decision.Internal, err, "watch", d)
		}
	}
	if err := unix.Pipe2(q.wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		q.Leave()
		return nil, decision.SayWrap(decision.Internal, err, "make-wait")
	}
	return q, nil
}

// Ahead counts the live waiters ahead of this one, removing stale tickets.
func (q *Line) Ahead() int {
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

// Sleep waits for a change in the line or the leases, at most Recheck and
// at most until deadline (zero: none); it returns early when ctx ends.
func (q *Line) Sleep(ctx context.Context, deadline time.Time) {
	d := Recheck
	if !deadline.IsZero() {
		d = min(d, time.Until(deadline))
	}
	if d <= 0 {
		return
	}
	// The callback runs in a goroutine of its own (at once when ctx has
	// ended already): Sleep returns only after it has written, so that
	// Leave never closes the pipe under it.
	wake, woke := q.wake[1], make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(woke)
		unix.Write(wake, []byte{0})
	})
	defer func() {
		if !stop() {
			<-woke
		}
	}()
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

// PIDs are the pids of the wt-exec --wait runs in the line of
// worktree key of the store at root (from their tickets' names): would-be
// writers, which the lease orders, not occupants.
func PIDs(root, key string) map[int]bool {
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

// Waiter is one live ticket of a line: its waiter's pid and when it
// joined (the boot clock's nanoseconds, as the ticket's name has it).
type Waiter struct {
	PID   int
	Since time.Duration
}

// Waiters are the live tickets of the line kept in dir, in arrival
// order. A ticket whose waiter is gone (nobody holds its lock) is left
// out; one that cannot be examined is listed.
func Waiters(dir string) ([]Waiter, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Waiter
	for _, e := range ents {
		boot, pid, ok := strings.Cut(e.Name(), "-")
		if !ok || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		n, err1 := strconv.Atoi(pid)
		ns, err2 := strconv.ParseInt(boot, 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if f, err := os.OpenFile(filepath.Join(dir, e.Name()), os.O_RDONLY|unix.O_NOFOLLOW, 0); err == nil {
			free := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil
			f.Close() // closing drops the lock taken just now, if any
			if free {
				continue
			}
		} else if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		out = append(out, Waiter{PID: n, Since: time.Duration(ns)})
	}
	return out, nil // os.ReadDir sorts by name: arrival order
}

// Leave gives the ticket back.
func (q *Line) Leave() {
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
