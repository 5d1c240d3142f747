package child

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/proc"
)

// These tests are not parallel: Supervise reaps any child of this
// process, and some make it a subreaper for a while or send it signals.

// said collects notices from whichever goroutine supervises.
type said struct {
	mu   sync.Mutex
	msgs []string
	// then, when set, runs after each notice (on the supervising
	// goroutine).
	then func(string)
}

func (s *said) notify(m string) {
	s.mu.Lock()
	s.msgs = append(s.msgs, m)
	s.mu.Unlock()
	if s.then != nil {
		s.then(m)
	}
}

func (s *said) holding(sub string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.msgs {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}

func (s *said) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.msgs...)
}

// spawn starts /bin/sh -c script as a Proc with cfg (its streams
// /dev/null, no pty, its notices in cfg.Notify), the scratch directory
// dir as $1, this process's environment and env, its signals caught
// until the test ends.
func spawn(t *testing.T, cfg Config, dir, script string, env ...string) *Proc {
	t.Helper()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { null.Close() })
	cfg.Stdin, cfg.Stdout, cfg.Stderr, cfg.PTY = null, null, null, PTYOff
	if cfg.Notify == nil {
		cfg.Notify = func(m string) { t.Errorf("notice: %s", m) }
	}
	p := New(cfg)
	p.Catch()
	t.Cleanup(func() { signal.Stop(p.sigs); signal.Stop(p.stops) })
	if err := p.Start("/bin/sh", []string{"sh", "-c", script, "sh", dir}, append(os.Environ(), env...), nil); err != nil {
		t.Fatal(err)
	}
	return p
}

// supervise runs p.Supervise on a goroutine of its own; the channel
// gives its status.
func supervise(p *Proc) <-chan int {
	out := make(chan int, 1)
	go func() { out <- p.Supervise() }()
	return out
}

// subreaper makes this process the subreaper of what it starts until the
// test ends, as wt-exec is: what the command leaves is reparented here.
func subreaper(t *testing.T) {
	t.Helper()
	if err := BecomeSubreaper(); err != nil {
		t.Skip("cannot become a subreaper:", err)
	}
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
}

// waitFile waits for path to appear (a command's sign that it is ready),
// failing the test at its deadline: a wait for an event, not a measure
// of time.
func waitFile(t *testing.T, path string) {
	t.Helper()
	// A wait for the event, bounded only by the test's own deadline.
	deadline := time.Now().Add(10 * time.Minute)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-time.Second)
	}
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readPID reads a pid a command wrote.
func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// ended reports whether pid no longer runs (gone, or a zombie nobody
// reaped yet).
func ended(pid int) bool {
	st, err := proc.ReadStat(pid)
	return err != nil || !st.Running()
}

// stopLater kills pid, a child of this process, and reaps it when the
// test ends.
func stopLater(t *testing.T, pid int) {
	t.Cleanup(func() {
		unix.Kill(pid, unix.SIGKILL)
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, 0, nil)
	})
}

// next is the next signal caught in sigs but SIGCHLD (which the end of
// any child of this process sends).
func next(t *testing.T, sigs chan os.Signal) os.Signal {
	t.Helper()
	for {
		select {
		case sig := <-sigs:
			if sig != unix.SIGCHLD {
				return sig
			}
		case <-time.After(time.Minute):
			t.Fatal("no signal caught")
		}
	}
}

// TestStartPutsTheCommandInAGroupOfItsOwn: the command leads a new
// process group, runs in Config.Dir with the environment given, and
// (stdin not being a terminal) is handed no terminal.
func TestStartPutsTheCommandInAGroupOfItsOwn(t *testing.T) {
	dir := t.TempDir()
	work := t.TempDir()
	p := spawn(t, Config{Dir: work}, dir, `pwd -P > "$1/cwd"; printf %s "$WT_TEST_MARK" > "$1/mark"`, "WT_TEST_MARK=given")
	// Until it is reaped its /proc entry stays: its group can be read.
	st, err := proc.ReadStat(p.Pid())
	if err != nil {
		t.Fatal(err)
	}
	if st.PGRP != p.Pid() || st.PGRP == unix.Getpgrp() {
		t.Errorf("the command's group %d, its pid %d, this process's group %d", st.PGRP, p.Pid(), unix.Getpgrp())
	}
	if p.fgTTY != -1 {
		t.Errorf("handed the terminal %d", p.fgTTY)
	}
	if status := p.Supervise(); status != 0 || p.Died() != 0 {
		t.Errorf("status %d, died %v", status, p.Died())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "cwd")); strings.TrimSpace(string(b)) != work {
		t.Errorf("ran in %q, not %s", b, work)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "mark")); string(b) != "given" {
		t.Errorf("the environment given: %q", b)
	}
	if IsTerminal(p.cfg.Stdin) || IsForeground(int(p.cfg.Stdin.Fd())) {
		t.Error("/dev/null taken for a terminal")
	}
}

// TestSuperviseForwardsSignalsToTheGroup: each signal wt-exec forwards,
// sent to this (the supervising) process, reaches the command, whose trap
// then decides its exit status.
func TestSuperviseForwardsSignalsToTheGroup(t *testing.T) {
	for _, sig := range forwarded {
		name := strings.TrimPrefix(unix.SignalName(sig.(unix.Signal)), "SIG")
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			// The trap is set before the command says it is ready; wait
			// returns at a trapped signal.
			p := spawn(t, Config{Notify: func(string) {}}, dir,
				`trap 'echo `+name+` > "$1/got"; kill $! 2>/dev/null; exit 7' `+name+`; sleep 600 & : > "$1/ready"; wait`)
			done := supervise(p)
			waitFile(t, filepath.Join(dir, "ready"))
			if err := unix.Kill(os.Getpid(), sig.(unix.Signal)); err != nil {
				t.Fatal(err)
			}
			if status := <-done; status != 7 {
				t.Errorf("status %d", status)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "got")); strings.TrimSpace(string(b)) != name {
				t.Errorf("the command's trap got %q", b)
			}
		})
	}
}

// TestSuperviseSignalsTheWholeGroup: a forwarded signal reaches every
// process of the command's group, not the leader alone.
func TestSuperviseSignalsTheWholeGroup(t *testing.T) {
	subreaper(t) // the member outlives the leader: its end is waited for
	dir := t.TempDir()
	p := spawn(t, Config{Notify: func(string) {}, Grace: time.Hour}, dir,
		`sh -c 'trap "echo TERM > \"\$1/member\"; exit 0" TERM; : > "$1/ready"; while :; do sleep 1; done' sh "$1" & wait`)
	done := supervise(p)
	waitFile(t, filepath.Join(dir, "ready"))
	unix.Kill(os.Getpid(), unix.SIGTERM)
	status := <-done
	if b, _ := os.ReadFile(filepath.Join(dir, "member")); strings.TrimSpace(string(b)) != "TERM" {
		t.Errorf("the group's member got %q", b)
	}
	if status != 128+int(unix.SIGTERM) || p.Died() != unix.SIGTERM {
		t.Errorf("status %d, died %v", status, p.Died())
	}
}

// TestSuperviseStopsWhatTheCommandLeft: once the command exited, what it
// left is stopped with SIGTERM and reaped; one that ignores SIGTERM is
// killed after the grace period, at once when wt-exec gets a second
// SIGTERM; one in a session of its own is found as a descendant.
func TestSuperviseStopsWhatTheCommandLeft(t *testing.T) {
	subreaper(t)
	for _, tc := range []struct {
		name, script string
		grace        time.Duration
		// hurry sends wt-exec SIGTERM when it says it stops leftovers.
		hurry bool
		said  []string
	}{
		{name: "in its group", script: `sleep 600 & echo $! > "$1/pid"`, grace: time.Hour,
			said: []string{"stopping 1 leftover process(es), SIGKILL in 1h0m0s"}},
		{name: "in a session of its own", script: `mkfifo "$1/p"; setsid sh -c 'echo $$ > "$1/pid"; echo > "$1/p"; exec sleep 600' sh "$1" & read x < "$1/p"`,
			grace: time.Hour, said: []string{"stopping 1 leftover process(es)"}},
		{name: "ignoring SIGTERM", script: `mkfifo "$1/p"; (trap '' TERM; sh -c 'echo $PPID' > "$1/pid"; echo > "$1/p"; exec sleep 600) & read x < "$1/p"`,
			grace: time.Millisecond, said: []string{"stopping 1 leftover", "killed 1 leftover process(es) after the grace period"}},
		{name: "ignoring SIGTERM, a second SIGTERM", script: `mkfifo "$1/p"; (trap '' TERM; sh -c 'echo $PPID' > "$1/pid"; echo > "$1/p"; exec sleep 600) & read x < "$1/p"`,
			grace: time.Hour, hurry: true, said: []string{"killed 1 leftover process(es) after the grace period"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			n := &said{}
			if tc.hurry {
				n.then = func(m string) {
					if strings.HasPrefix(m, "the command exited; stopping") {
						unix.Kill(os.Getpid(), unix.SIGTERM)
					}
				}
			}
			p := spawn(t, Config{Grace: tc.grace, Notify: n.notify}, dir, tc.script)
			if status := p.Supervise(); status != 0 {
				t.Errorf("status %d", status)
			}
			pid := readPID(t, filepath.Join(dir, "pid"))
			if !errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
				t.Errorf("the leftover %d is still there", pid)
			}
			for _, s := range tc.said {
				if !n.holding(s) {
					t.Errorf("notices %q, want %q", n.all(), s)
				}
			}
		})
	}
}

// TestSuperviseSparesTheFleetHelper: the fleet helper is wt-exec's child
// but not the command's: it is neither waited for nor stopped, alone or
// beside a leftover of the command.
func TestSuperviseSparesTheFleetHelper(t *testing.T) {
	subreaper(t)
	for _, tc := range []struct{ name, script, said string }{
		{"alone", `exit 0`, ""},
		{"beside a leftover", `sleep 600 & echo $! > "$1/pid"`, "stopping 1 leftover process(es)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			helper := exec.Command("sleep", "600")
			if err := helper.Start(); err != nil {
				t.Fatal(err)
			}
			stopLater(t, helper.Process.Pid)
			dir := t.TempDir()
			n := &said{}
			p := spawn(t, Config{Grace: time.Hour, Notify: n.notify}, dir, tc.script)
			p.Spare(helper.Process.Pid)
			if status := p.Supervise(); status != 0 {
				t.Errorf("status %d", status)
			}
			if ended(helper.Process.Pid) {
				t.Error("the fleet helper was stopped")
			}
			if tc.said == "" && len(n.all()) != 0 || tc.said != "" && !n.holding(tc.said) {
				t.Errorf("notices %q, want %q", n.all(), tc.said)
			}
			if tc.said != "" {
				if pid := readPID(t, filepath.Join(dir, "pid")); !ended(pid) {
					t.Errorf("the leftover %d is still there", pid)
				}
			}
		})
	}
}

// TestSuperviseLeavesWhatTheLeaseWentTo: when the lease was transferred
// to a process the command left, what the command left runs on, and
// wt-exec says so.
func TestSuperviseLeavesWhatTheLeaseWentTo(t *testing.T) {
	subreaper(t)
	dir := t.TempDir()
	n := &said{}
	asked := 0
	p := spawn(t, Config{Grace: time.Hour, Notify: n.notify, Transferred: func() int { asked++; return 4242 }}, dir,
		`sleep 600 & echo $! > "$1/pid"`)
	status := p.Supervise()
	pid := readPID(t, filepath.Join(dir, "pid"))
	stopLater(t, pid)
	if status != 0 || asked != 1 {
		t.Errorf("status %d, asked %d times", status, asked)
	}
	if ended(pid) {
		t.Error("what the lease went to was stopped")
	}
	if !n.holding("the lease was transferred to pid 4242") {
		t.Errorf("notices %q", n.all())
	}
}

// TestSuperviseRenewsWhileTheCommandRuns: the renewal Config.Renewal
// gives runs while the command runs; none runs without one.
func TestSuperviseRenewsWhileTheCommandRuns(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "go")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	renewals := 0
	renewal := func() (time.Duration, func()) {
		return time.Millisecond, func() {
			renewals++
			if renewals == 1 {
				// The command ends once it was renewed.
				os.WriteFile(fifo, []byte("\n"), 0)
			}
		}
	}
	p := spawn(t, Config{Renewal: renewal}, dir, `read x < "$1/go"; exit 2`)
	if status := p.Supervise(); status != 2 || renewals < 1 {
		t.Errorf("status %d, renewals %d", status, renewals)
	}
	// A renewal that says there is nothing to renew.
	p = spawn(t, Config{Renewal: func() (time.Duration, func()) { return 0, nil }}, dir, `exit 0`)
	if status := p.Supervise(); status != 0 {
		t.Errorf("status %d", status)
	}
}

// TestAbort: a child whose lease could not be written is killed and
// reaped.
func TestAbort(t *testing.T) {
	dir := t.TempDir()
	p := spawn(t, Config{Grace: time.Hour}, dir, `exec sleep 600`)
	pid := p.Pid()
	p.Abort()
	if p.status != 128+int(unix.SIGKILL) || p.Died() != unix.SIGKILL || !errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
		t.Errorf("status %d, died %v", p.status, p.Died())
	}
}

// TestWithoutReaping: while a publication's git runs, reaping waits (its
// exit is its own caller's to collect), and is done once it is over.
func TestWithoutReaping(t *testing.T) {
	dir := t.TempDir()
	p := spawn(t, Config{}, dir, `exit 4`)
	// Wait for the command's exit without collecting it.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, p.Pid(), &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	var gitErr error
	p.WithoutReaping(func() {
		if p.reap() || p.status != -1 {
			t.Errorf("reaped while a git ran: status %d", p.status)
		}
		// The git runs and is waited for by its own caller.
		gitErr = exec.Command("sh", "-c", "exit 9").Run()
	})
	var ee *exec.ExitError
	if !errors.As(gitErr, &ee) || ee.ExitCode() != 9 {
		t.Errorf("the git's own exit: %v", gitErr)
	}
	if p.reapLater.Load() {
		t.Error("the reaping put off is still pending")
	}
	if status := p.Supervise(); status != 4 {
		t.Errorf("status %d", status)
	}
}

// TestWatchStart: a stop signal before the command starts ends the
// start's context, and the refusal names it.
func TestWatchStart(t *testing.T) {
	p := New(Config{})
	p.Catch() // caught before it is sent: the signal must not end this process
	defer p.StopCatching()
	ctx, end := p.WatchStart()
	defer end()
	if err := unix.Kill(os.Getpid(), unix.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("the start's context did not end")
	}
	if d := p.Stopped().Error(); !strings.Contains(d, "SIGHUP") {
		t.Errorf("refusal %q", d)
	}
	// The signal is also kept for the supervision.
	if sig := next(t, p.sigs); sig != unix.SIGHUP {
		t.Errorf("kept %v", sig)
	}
}

// TestEarly: the catching begun as wt-exec starts goes to the first run
// that takes it, and catches from then on; later runs catch on their
// own.
func TestEarly(t *testing.T) {
	Early()
	Early() // once
	first, second := New(Config{}), New(Config{})
	first.Catch()
	defer first.StopCatching()
	second.Catch()
	defer second.StopCatching()
	if first.sigs == nil || second.sigs == nil || first.sigs == second.sigs {
		t.Fatalf("channels %p %p", first.sigs, second.sigs)
	}
	if s, _ := early.take(); s != nil {
		t.Error("taken twice")
	}
	if err := unix.Kill(os.Getpid(), unix.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	if sig := next(t, first.sigs); sig != unix.SIGUSR2 {
		t.Errorf("caught %v", sig)
	}
}

// TestCgroup: where wt-exec may make a cgroup the command starts in it,
// and a process that left the command's tree (a daemon orphaned past
// wt-exec) is stopped through it; the cgroup goes at the end. Where it
// may not, wt-exec does without, and says why only with --verbose.
func TestCgroup(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		for _, verbose := range []bool{false, true} {
			n := &said{}
			p := New(Config{Verbose: verbose, Notify: n.notify})
			p.MakeCgroup("no-such-parent/wt-test")
			if p.CgroupPath() != "" {
				t.Fatalf("made %s", p.CgroupPath())
			}
			if got := n.holding("no cgroup for the command"); got != verbose {
				t.Errorf("verbose %v: notices %q", verbose, n.all())
			}
			p.DropCgroup() // none to drop
		}
	})
	t.Run("made", func(t *testing.T) {
		dir := t.TempDir()
		n := &said{}
		// A bounded grace: a cgroup that does not empty fails the test with
		// a notice rather than holding it.
		p := New(Config{Notify: n.notify, Grace: 2 * time.Minute})
		p.MakeCgroup("wt-test-" + strconv.Itoa(os.Getpid()) + "-" + filepath.Base(dir))
		cg := p.CgroupPath()
		if cg == "" {
			t.Skip("no cgroup may be made here")
		}
		t.Cleanup(p.DropCgroup)
		p.MakeCgroup("another") // one per command
		if p.CgroupPath() != cg {
			t.Fatalf("made a second one: %s", p.CgroupPath())
		}
		null, _ := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		defer null.Close()
		p.cfg.Stdin, p.cfg.Stdout, p.cfg.Stderr, p.cfg.PTY = null, null, null, PTYOff
		p.Catch()
		defer func() { signal.Stop(p.sigs); signal.Stop(p.stops) }()
		// Not a subreaper: the daemon, in a session of its own, is
		// orphaned past this process, out of its tree and group.
		script := `cat /proc/$$/cgroup > "$1/cgroup"; mkfifo "$1/p"; setsid sh -c 'echo $$ > "$1/pid"; echo > "$1/p"; exec sleep 600' sh "$1" & read x < "$1/p"`
		if err := p.Start("/bin/sh", []string{"sh", "-c", script, "sh", dir}, os.Environ(), nil); err != nil {
			t.Fatal(err)
		}
		if status := p.Supervise(); status != 0 {
			t.Errorf("status %d", status)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "cgroup")); !strings.HasSuffix(strings.TrimSpace(string(b)), "/"+filepath.Base(cg)) {
			t.Errorf("the command ran in cgroup %q, not %s", b, cg)
		}
		if pid := readPID(t, filepath.Join(dir, "pid")); !ended(pid) {
			unix.Kill(pid, unix.SIGKILL)
			t.Errorf("the daemon %d runs on", pid)
		}
		if !n.holding("stopping 1 process(es) left in the command's cgroup") || n.holding("after SIGKILL") {
			t.Errorf("notices %q", n.all())
		}
		p.DropCgroup()
		if _, err := os.Stat(cg); !errors.Is(err, os.ErrNotExist) || p.CgroupPath() != "" {
			t.Errorf("the cgroup is left: %v", err)
		}
	})
}
