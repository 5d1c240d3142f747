package store

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/safefile"
)

// DefaultLockWait bounds how long a command waits for the store's lock.
// Sections hold it for microseconds to milliseconds: no section runs git
// or starts a process under the exclusive lock (allocate asks git before
// it, prune and finish run git between their sections, wt-exec starts its
// child between the grant's two; git-under-lock.txtar checks it), but for
// one rare case: an allocate that finds another's crashed half-done
// allocation undoes it (git worktree remove) inside its first section. So
// a long wait means that, a stuck or stopped process, or a reader's git
// under the shared lock; $WT_LOCK_WAIT (a Go duration) overrides it. A waiter sleeps
// in flock(2) (flockWait).
const DefaultLockWait = 10 * time.Second

func lockWait() time.Duration {
	if v := os.Getenv("WT_LOCK_WAIT"); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d >= 0 {
			return d
		}
	}
	return DefaultLockWait
}

// lock takes the store's flock(2) on fd (the lock file at path), shared or
// exclusive (flockWait), until ctx ends (INTERRUPTED: a signal told the
// command to stop) or the bound passes (STORE_BUSY, naming the process
// that holds the lock, from /proc/locks).
func lock(ctx context.Context, fd int, path string, exclusive bool, bound time.Duration) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	if bound <= 0 {
		bound = lockWait()
	}
	ok, err := flockWait(ctx, fd, how, bound)
	switch {
	case err != nil:
		return invalid(path, fmt.Errorf("lock: %w", err))
	case ok:
		return nil
	case ctx.Err() != nil:
		return decision.Say(decision.Interrupted, "stopped-while", path, lockHolder(path)).
			WithHint("nothing was changed; run the command again")
	}
	return decision.Say(decision.StoreBusy, "wt-store", path, bound, lockHolder(path)).
		WithHint("see what that process does: ps -o pid,stat,args -p PID; if it is stopped (T), continue or end it, then run the command again")
}

// flockWait takes flock(2) how (LOCK_SH or LOCK_EX) on fd: at once if it
// is free (true), else by a blocking flock(2) on a thread of its own,
// which costs no CPU while it waits and which the kernel serves as holders
// let go, until it gets it (true), ctx ends or, for a bound of zero or
// more, the bound passes (false, nil). It works on the bare descriptor, as
// gofrs/flock's try-lock does on an os.File, which would ask the
// descriptor's flags and offer it to the runtime's poller; and no timer or
// thread exists until the first try fails, since the lock is free in
// nearly every store section of a wt-exec run or a commit gate.
//
// A wait that gives up leaves its flock(2) blocked: the caller closes fd,
// and whenever that flock returns it holds the lock only on the open file
// the caller has let go of, which the kernel then releases (a flock lock
// belongs to the open file, and goes with its last reference).
func flockWait(ctx context.Context, fd, how int, bound time.Duration) (bool, error) {
	for {
		switch err := unix.Flock(fd, how|unix.LOCK_NB); err {
		case nil:
			return true, nil
		case unix.EINTR:
			continue
		case unix.EWOULDBLOCK:
		default:
			return false, err
		}
		break
	}
	if bound >= 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	got := make(chan error, 1)
	go func() {
		for {
			if err := unix.Flock(fd, how); err != unix.EINTR {
				got <- err
				return
			}
		}
	}()
	select {
	case err := <-got:
		return err == nil, err
	case <-ctx.Done():
		return false, nil
	}
}

// lockHolder names the processes that hold a lock on the file at path, from
// /proc/locks ("N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF").
func lockHolder(path string) string {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return "a process wt cannot name"
	}
	f, _, err := safefile.Open("/proc/locks", safefile.Follows)
	if err != nil {
		return "a process wt cannot name"
	}
	defer f.Close() // Best effort: read only.
	var who []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) < 6 || fl[1] != "FLOCK" {
			continue
		}
		dev := strings.Split(fl[5], ":")
		if len(dev) != 3 {
			continue
		}
		if ino, err := strconv.ParseUint(dev[2], 10, 64); err != nil || ino != st.Ino {
			continue
		}
		pid, _ := strconv.Atoi(fl[4])
		who = append(who, fmt.Sprintf("pid %d (%s, %s)", pid, processName(pid), strings.ToLower(fl[3])))
	}
	if len(who) == 0 {
		return "a process wt cannot name"
	}
	return strings.Join(who, ", ")
}

// processName is a process's command line, short, or "?" when unreadable.
func processName(pid int) string {
	b, err := safefile.Read("/proc/"+strconv.Itoa(pid)+"/cmdline", 1<<16, safefile.Follows)
	if err != nil || len(b) == 0 {
		return "?"
	}
	s := strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " ")
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return strconv.Quote(s)
}

// WithGitAdmin runs fn while holding the lock of git's worktree
// administration: an exclusive flock(2) on the store's directory itself
// (no file of its own). git does not guard `git worktree add` against
// another one in the same repository: a second add lists the worktrees
// and reads the first one's admin dir while git is still writing it, and
// fails ("failed to read .git/worktrees/<name>/commondir"). wt's adds
// therefore take turns. The store's own lock is not held, so gates and
// other commands go on meanwhile; the wait is bounded by ctx only (a
// signal), since another add may be checking out a large tree. prune's
// and finish's applies hold the turn from their plan to their receipt, and
// take the store's lock only for their short sections.
func (s *Store) WithGitAdmin(ctx context.Context, fn func() error) error {
	fd, err := unix.Open(s.root, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return invalid(s.root, fmt.Errorf("lock: %w", &fs.PathError{Op: "open", Path: s.root, Err: err}))
	}
	defer unix.Close(fd) // Best effort: closing the fd drops the lock.
	if ctx == nil {
		ctx = context.Background()
	}
	ok, err := flockWait(ctx, fd, unix.LOCK_EX, -1)
	if !ok {
		if ctx.Err() != nil {
			return decision.Say(decision.Interrupted, "stopped-while-waiting", lockHolder(s.root)).
				WithHint("nothing was changed; run the command again")
		}
		return invalid(s.root, fmt.Errorf("lock: %w", err))
	}
	return fn()
}
