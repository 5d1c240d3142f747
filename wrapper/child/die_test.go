package child

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// dieEnv names, in the environment of this test binary run again as a
// helper, the signal the helper dies by (and ",group" for its group).
const dieEnv = "WT_CHILD_TEST_DIE_BY"

// TestMain runs this binary as the helper of TestDieBy when dieEnv is
// set, else the tests.
func TestMain(m *testing.M) {
	if spec := os.Getenv(dieEnv); spec != "" {
		dieHelper(spec)
	}
	os.Exit(m.Run())
}

// dieHelper catches the signal, as wt-exec does while its command runs,
// waits for a line on stdin, then dies by the signal (DieBy); it exits
// 3 when DieBy returns.
func dieHelper(spec string) {
	num, toGroup := strings.CutSuffix(spec, ",group")
	n, _ := strconv.Atoi(num)
	sig := unix.Signal(n)
	unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}) // SIGQUIT's default dumps core: not here
	if sig != 0 {
		signal.Notify(make(chan os.Signal, 1), sig)
	}
	bufio.NewReader(os.Stdin).ReadString('\n')
	DieBy(sig, toGroup)
	os.Exit(3)
}

// helper starts this binary as a helper that dies by spec, leading a
// process group of its own; writing a line to the returned pipe lets it.
func helper(t *testing.T, spec string) (*exec.Cmd, *os.File) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), dieEnv+"="+spec)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = r
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	t.Cleanup(func() { w.Close(); cmd.Process.Kill(); cmd.Wait() })
	return cmd, w
}

// TestDieBy: a process that caught the signal still dies by it, the
// kernel's default action restored (SIGQUIT's too, which Go's own
// default would turn into a goroutine dump and exit 2); a signal whose
// default is to be ignored, or none, returns, and the caller exits.
func TestDieBy(t *testing.T) {
	for _, tc := range []struct {
		sig  unix.Signal
		died bool
	}{
		{unix.SIGTERM, true}, {unix.SIGINT, true}, {unix.SIGQUIT, true}, {unix.SIGHUP, true},
		{unix.SIGCHLD, false}, {0, false},
	} {
		name := "none"
		if tc.sig != 0 {
			name = unix.SignalName(tc.sig)
		}
		t.Run(name, func(t *testing.T) {
			cmd, w := helper(t, strconv.Itoa(int(tc.sig)))
			w.WriteString("go\n")
			err := cmd.Wait()
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if tc.died && (!ws.Signaled() || ws.Signal() != tc.sig) {
				t.Errorf("ended %v (%v), want a death by %v", ws, err, tc.sig)
			}
			if !tc.died && (!ws.Exited() || ws.ExitStatus() != 3) {
				t.Errorf("ended %v (%v), want DieBy to return", ws, err)
			}
		})
	}
}

// TestDieByToGroup: with toGroup the signal reaches every process of the
// caller's group, as a terminal's interrupt would have; without, the
// caller alone dies.
func TestDieByToGroup(t *testing.T) {
	for _, toGroup := range []bool{true, false} {
		t.Run(strconv.FormatBool(toGroup), func(t *testing.T) {
			spec := strconv.Itoa(int(unix.SIGTERM))
			if toGroup {
				spec += ",group"
			}
			cmd, w := helper(t, spec)
			// A member of the helper's group, which exits 5 at SIGTERM.
			dir := t.TempDir()
			member := exec.Command("/bin/sh", "-c", `trap 'kill $! 2>/dev/null; exit 5' TERM; sleep 600 & : > "$1/ready"; wait`, "sh", dir)
			member.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: cmd.Process.Pid}
			if err := member.Start(); err != nil {
				t.Fatal(err)
			}
			// The member and its sleep go with the group.
			t.Cleanup(func() { unix.Kill(-cmd.Process.Pid, unix.SIGKILL); member.Wait() })
			waitFile(t, filepath.Join(dir, "ready"))
			w.WriteString("go\n")
			cmd.Wait()
			if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != unix.SIGTERM {
				t.Fatalf("the helper ended %v", ws)
			}
			if !toGroup {
				if ended(member.Process.Pid) {
					t.Error("the group was signalled")
				}
				return
			}
			err := member.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 5 {
				t.Errorf("the member ended %v, want its trap's exit 5", err)
			}
		})
	}
}
