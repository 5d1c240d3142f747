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

	"github.com/wt-tool/wt/core/decision"
)

// start runs a real process and stops it at the end of the test.
func start(t *testing.T, dir string, setpgid bool, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: setpgid}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill() // Best effort: it may have ended.
		cmd.Wait()
	})
	return cmd
}

func TestLivenessAndPIDReuse(t *testing.T) {
	cmd := start(t, "", false, "sleep", "60")
	id, err := Describe(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader()
	if live, err := IsLive(r, id); err != nil || !live {
		t.Fatalf("running process reads as live=%v err=%v", live, err)
	}
	// The same pid with other start ticks is another process: a reused pid.
	reused := id
	reused.StartTicks++
	if live, _ := IsLive(r, reused); live {
		t.Fatal("a pid with different start ticks reads as live")
	}
	// Another boot id: the pid was recorded before a reboot.
	other := id
	other.BootID = "00000000-0000-4000-8000-000000000000"
	if live, _ := IsLive(r, other); live {
		t.Fatal("a holder from another boot reads as live")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if live, _ := IsLive(r, id); live {
		t.Fatal("a reaped process reads as live")
	}
	if _, err := Describe(cmd.Process.Pid); decision.CodeOf(err) != decision.InvalidHolder {
		t.Fatalf("Describe(dead) err = %v, want INVALID_HOLDER", err)
	}
}

func TestGroupMembers(t *testing.T) {
	// A group leader that starts a member, then exits: the group stays alive
	// through the member alone.
	leader := start(t, "", true, "sh", "-c", "sleep 60 & echo $! ; wait")
	id, err := Describe(leader.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, err := NewScan()
		if err != nil {
			t.Fatal(err)
		}
		if len(s.GroupMembers(id.PID, id.StartTicks)) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("group of sh and sleep never showed two members")
		}
		time.Sleep(10 * time.Millisecond)
	}
	s, _ := NewScan()
	if m := s.GroupMembers(id.PID, id.StartTicks+1); len(m) != 0 {
		t.Fatalf("a live leader with other start ticks (reused pid) still counts members %v", m)
	}
	syscall.Kill(-id.PID, syscall.SIGKILL)
	leader.Wait()
	deadline = time.Now().Add(5 * time.Second)
	for {
		s, _ := NewScan()
		if len(s.GroupMembers(id.PID, id.StartTicks)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("killed group still has members")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// orphan runs a real process in dir that is not a descendant of this test
// process (its parent shell exits at once, so it is reparented away) and
// kills it at the end of the test.
func orphan(t *testing.T, dir, script string) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", "("+script+") >/dev/null 2>&1 </dev/null & echo $!")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("orphan pid %q", out)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) }) // Best effort: it may have ended.
	return pid
}

func TestPathsInUse(t *testing.T) {
	dir := t.TempDir()
	inside := filepath.Join(dir, "sub")
	os.Mkdir(inside, 0o755)
	file := filepath.Join(dir, "held.txt")
	os.WriteFile(file, []byte("x"), 0o644)
	outside := t.TempDir()

	byCwd := orphan(t, inside, "exec sleep 60")
	byFile := orphan(t, outside, "exec 3<"+file+"; exec sleep 60")
	other := orphan(t, outside, "exec sleep 60")
	// A process this test started: the asker's own, never evidence.
	own := start(t, inside, false, "sleep", "60")

	var uses []Use
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, err := NewScan()
		if err != nil {
			t.Fatal(err)
		}
		uses, err = s.PathsInUse(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(uses) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := map[int]string{}
	for _, u := range uses {
		got[u.PID] = u.Why
	}
	if got[byCwd] != WhyCwd {
		t.Errorf("process with cwd inside: %q in %+v", got[byCwd], uses)
	}
	if got[byFile] != WhyFile {
		t.Errorf("process with an open file inside: %q in %+v", got[byFile], uses)
	}
	if _, ok := got[other]; ok {
		t.Errorf("process outside reported: %+v", uses)
	}
	if _, ok := got[own.Process.Pid]; ok {
		t.Errorf("a process the asker started is reported: %+v", uses)
	}
	// The asking process and its ancestors are never evidence: this test
	// process maps its own binary, so scanning the binary's directory must not
	// report it.
	exe, _ := os.Executable()
	s, _ := NewScan()
	uses, _ = s.PathsInUse(filepath.Dir(exe))
	for _, u := range uses {
		if u.PID == os.Getpid() || u.PID == os.Getppid() {
			t.Errorf("the asking process or its parent is reported: %+v", u)
		}
	}
}

func TestAncestry(t *testing.T) {
	r := NewReader()
	chain, err := r.Ancestors(os.Getpid())
	if err != nil || len(chain) == 0 || chain[0] != os.Getppid() {
		t.Fatalf("Ancestors(self) = %v, %v (ppid %d)", chain, err, os.Getppid())
	}
	parent, err := Describe(os.Getppid())
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := r.HasAncestor(os.Getpid(), parent); err != nil || !ok {
		t.Fatalf("parent is not an ancestor: %v %v", ok, err)
	}
	child := start(t, "", false, "sleep", "60")
	cid, _ := Describe(child.Process.Pid)
	if ok, _ := r.HasAncestor(os.Getpid(), cid); ok {
		t.Fatal("a child reads as an ancestor")
	}
	stale := parent
	stale.StartTicks++
	if ok, _ := r.HasAncestor(os.Getpid(), stale); ok {
		t.Fatal("an ancestor pid with other start ticks reads as an ancestor")
	}
}

// TestResolveAncestor runs this test binary under a shell chain
// (sh -> wtprobe-named shell -> test binary) and resolves ancestor:NAME from
// inside it.
func TestResolveAncestor(t *testing.T) {
	if sel := os.Getenv("WT_PROC_TEST_RESOLVE"); sel != "" {
		h, err := Resolve(sel, Names{ClientID: "probe"})
		if err != nil {
			fmt.Println("ERR", decision.CodeOf(err))
			os.Exit(0)
		}
		fmt.Println("PID", h.PID)
		os.Exit(0)
	}
	exe, _ := os.Executable()
	dir := t.TempDir()
	probe := filepath.Join(dir, "wtprobe")
	if err := os.Symlink("/bin/sh", probe); err != nil {
		t.Fatal(err)
	}
	// wtprobe (a shell known by its argv[0]) runs the test binary and stays
	// its parent (the trailing "; :" keeps the shell from exec-ing it).
	script := fmt.Sprintf("echo SHELL $$; %q -test.run '^TestResolveAncestor$'; :", exe)
	for _, tc := range []struct {
		sel  string
		want string
	}{
		{"ancestor:wtprobe", "shell"},
		{"ancestor:no-such-program", "ERR INVALID_HOLDER"},
		{"ancestor:../x", "ERR INVALID_HOLDER"},
		{"self", "self"},
		{"notapid", "ERR INVALID_HOLDER"},
	} {
		cmd := exec.Command(probe, "-c", script)
		cmd.Env = append(os.Environ(), "WT_PROC_TEST_RESOLVE="+tc.sel)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", tc.sel, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		shell := strings.TrimPrefix(lines[0], "SHELL ")
		last := lines[len(lines)-1]
		switch tc.want {
		case "shell":
			if last != "PID "+shell {
				t.Errorf("%s resolved %q, want the shell %s", tc.sel, last, shell)
			}
		case "self":
			if !strings.HasPrefix(last, "PID ") || last == "PID "+shell {
				t.Errorf("%s resolved %q", tc.sel, last)
			}
		default:
			if last != tc.want {
				t.Errorf("%s resolved %q, want %q", tc.sel, last, tc.want)
			}
		}
	}
	if _, err := Resolve(strconv.Itoa(os.Getpid()), Names{ClientID: "bad id!"}); decision.CodeOf(err) != decision.InvalidHolder {
		t.Fatalf("bad client id: %v", err)
	}
}

// TestZombieIsNotLive: an exited child that its parent has not reaped yet
// still has a /proc entry with its start ticks, but runs no more code.
func TestZombieIsNotLive(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	var st Stat
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		s, err := ReadStat(pid)
		if err != nil {
			t.Fatal(err)
		}
		if st = s; st.State == 'Z' || time.Now().After(deadline) {
			break
		}
	}
	if st.State != 'Z' || st.Running() {
		t.Fatalf("state %c", st.State)
	}
	boot, _ := BootID()
	id := Identity{BootID: boot, PID: pid, StartTicks: st.StartTicks}
	if live, err := IsLive(NewReader(), id); live || err != nil {
		t.Fatalf("IsLive(zombie) = %v, %v", live, err)
	}
	s, err := NewScan()
	if err != nil {
		t.Fatal(err)
	}
	if s.IsLive(id) {
		t.Fatal("the scan calls a zombie live")
	}
}

// TestCarryingEnv finds a process by a variable of its environment.
func TestCarryingEnv(t *testing.T) {
	marked := exec.Command("sleep", "60")
	marked.Env = append(os.Environ(), "WT_LEASE_ID=test-carrier-1")
	plain := exec.Command("sleep", "60")
	for _, c := range []*exec.Cmd{marked, plain} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { c.Process.Kill(); c.Wait() }()
	}
	s, err := NewScan()
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CarryingEnv("WT_LEASE_ID", "test-carrier-1"); len(got) != 1 || got[0] != marked.Process.Pid {
		t.Fatalf("carriers %v, want [%d]", got, marked.Process.Pid)
	}
	if got := s.CarryingEnv("WT_LEASE_ID", "test-carrier"); len(got) != 0 {
		t.Fatalf("a prefix matched: %v", got)
	}
}

// TestWalked: a walk keeps the stats it read, so that a caller needing a
// process of the chain does not read its /proc entry again; a new walk
// forgets the old one.
func TestWalked(t *testing.T) {
	r := NewReader()
	if _, ok := r.Walked(os.Getppid()); ok {
		t.Fatal("a reader that walked nothing has a stat")
	}
	gp, err := ReadStat(os.Getppid())
	if err != nil {
		t.Fatal(err)
	}
	above, err := Describe(gp.PPID) // the parent's parent: the walk passes the parent
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := r.HasAncestor(os.Getpid(), above); err != nil || !ok {
		t.Fatalf("grandparent is not an ancestor: %v %v", ok, err)
	}
	st, ok := r.Walked(os.Getppid())
	if !ok || st.PID != os.Getppid() || st.StartTicks != gp.StartTicks || st.Comm != gp.Comm {
		t.Fatalf("Walked(parent) = %+v %v, want %+v", st, ok, gp)
	}
	child := start(t, "", false, "sleep", "60")
	if _, ok := r.Walked(child.Process.Pid); ok {
		t.Fatal("a process off the chain was walked")
	}
	self, _ := Describe(os.Getpid())
	if ok, _ := r.HasAncestor(os.Getpid(), self); !ok {
		t.Fatal("a process is not its own ancestor")
	}
	if _, ok := r.Walked(os.Getppid()); ok {
		t.Fatal("a new walk kept the parent of the old one")
	}
}
