package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkIdentity reads one process's identity (start ticks) with a reused
// buffer: the cost on every hook call. BASELINE.md: ~8.5 µs.
func BenchmarkIdentity(b *testing.B) {
	r := NewReader()
	pid := os.Getpid()
	for i := 0; i < b.N; i++ {
		if _, err := r.Stat(pid); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIdentityFloor is the physical floor measured side by side: bare
// open+read+close of the same stat file through package syscall, nothing
// parsed. Report Identity as a ratio to it; absolute times drift ±30% here.
func BenchmarkIdentityFloor(b *testing.B) {
	buf := make([]byte, 4096)
	p := "/proc/" + strconv.Itoa(os.Getpid()) + "/stat"
	for i := 0; i < b.N; i++ {
		fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		syscall.Read(fd, buf)
		syscall.Close(fd)
	}
}

// BenchmarkAncestorWalk8 walks 8 hops up a real chain of 9 shells.
// BASELINE.md: ~170 µs done naively.
func BenchmarkAncestorWalk8(b *testing.B) {
	leaf := shellChain(b, 8)
	r := NewReader()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pid := leaf
		for hop := 0; hop < 8; hop++ {
			st, err := r.Stat(pid)
			if err != nil {
				b.Fatal(err)
			}
			pid = st.PPID
		}
	}
}

// shellChain starts depth nested shells below a top one and returns the pid
// of the innermost process (a sleep).
func shellChain(b *testing.B, depth int) int {
	dir := b.TempDir()
	script := filepath.Join(dir, "chain.sh")
	pidfile := filepath.Join(dir, "leaf")
	// Each level runs the next and then ":" so the shell cannot exec it away.
	os.WriteFile(script, []byte(`if [ "$1" -gt 0 ]; then sh "$0" $(($1 - 1)) "$2"; :; else echo $$ > "$2.tmp"; mv "$2.tmp" "$2"; exec sleep 300; fi`), 0o755)
	cmd := exec.Command("sh", script, strconv.Itoa(depth), pidfile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if data, err := os.ReadFile(pidfile); err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err == nil {
				return pid
			}
		}
	}
	b.Fatal("the chain did not start")
	return 0
}

// BenchmarkPathsInUse runs wt's scan and `fuser -m DIR` side by side over the
// same state: the machine's processes as they are (~70 here), then with 500
// extra sleep processes. BASELINE.md: fuser -m 15 -> 106 ms (whole process).
// The wt figure is in-process; "wt-whole" adds the start of a Go binary
// (~5 ms on these machines) so that the comparison is like for like.
func BenchmarkPathsInUse(b *testing.B) {
	dir := b.TempDir()
	for _, extra := range []int{0, 500} {
		var cmds []*exec.Cmd
		for i := 0; i < extra; i++ {
			c := exec.Command("sleep", "600")
			c.Dir = "/"
			if err := c.Start(); err != nil {
				b.Fatal(err)
			}
			cmds = append(cmds, c)
		}
		s, _ := NewScan()
		n := s.Len()
		b.Run(fmt.Sprintf("wt/procs=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				s, err := NewScan()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.PathsInUse(dir); err != nil {
					b.Fatal(err)
				}
			}
		})
		if fuser, err := exec.LookPath("fuser"); err == nil {
			b.Run(fmt.Sprintf("fuser-m/procs=%d", n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					// fuser exits 1 when nobody uses the path: that is not a failure here.
					exec.Command(fuser, "-m", dir).Run()
				}
			})
		}
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}
}
