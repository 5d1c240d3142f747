package e2e

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/cmd/internal/cli"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/wt-tool/wt/cmd/internal/execcli"
	"github.com/wt-tool/wt/cmd/internal/fleetcli"
	"github.com/wt-tool/wt/cmd/internal/gate"
	"github.com/wt-tool/wt/cmd/internal/hookcli"
	"github.com/wt-tool/wt/core/fleet/etcdtest"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/gitversion"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/wrapper"
	"github.com/wt-tool/wt/wrapper/confine"
)

func TestMain(m *testing.M) {
	// Under the race detector every process sleeps a second at exit
	// (GORACE atexit_sleep_ms, default 1000, a grace for other threads'
	// reports), and these tests start thousands of processes of this
	// binary: that sleep was most of make test's time. Race reports are
	// printed when a race is found, not at exit, so none is lost.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	testscript.Main(inTestCgroup{m}, map[string]func(){
		"wt-admin": func() { os.Exit(cli.Admin(os.Args[1:], os.Stdout, os.Stderr)) },
		"wt-exec": func() {
			code, died, toGroup := execcli.ExecDying(os.Args[1:], os.Stdout, os.Stderr)
			wrapper.DieBy(died, toGroup)
			os.Exit(code)
		},
		"wt-hook": func() { os.Exit(hookcli.Hook(os.Args[1:], os.Stdout, os.Stderr)) },
		// The shims run wt-gate, found beside wt-hook, for the client hooks.
		"wt-gate": func() { os.Exit(gate.Main(os.Args[1:], os.Stdin, os.Stderr)) },
		// agentsh stands for an agent program that runs commands: a named
		// ancestor for --holder ancestor:agentsh. It runs its arguments as
		// a child and exits with the child's status.
		"agentsh": agentsh,
		// ttyvictim and ttyprobe: another agent's terminal, and what a
		// confined agent would try on it (ttyprobe_test.go).
		"ttyvictim": ttyvictim,
		"ttyprobe":  ttyprobe,
		"wt-fleet":  func() { os.Exit(fleetcli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
		// etcd-server DIR CLIENT_PORT PEER_PORT runs a real etcd member (a
		// separate process, for tests that stop, freeze and restart it). It
		// writes its pid to DIR/pid and creates DIR/ready once it serves.
		"etcd-server": etcdServer,
		// agentloop DIR stands for an agent that runs under wt-exec and
		// does what the script asks, when it asks (see the agent command).
		"agentloop": agentLoop,
		// blackhole FILE listens on a loopback port, writes it to FILE,
		// accepts every connection and never answers: an etcd that hangs.
		"blackhole": blackhole,
		// sockserve PATH and sockprobe PATH: a Unix socket's server, and
		// what a confined agent connecting to it gets (confine-sockets.txtar).
		"sockserve": sockServe,
		"sockprobe": sockProbe,
		// tcpprobe HOST:PORT: what a sandboxed test connecting there gets
		// ("connected" or "refused: ERROR").
		"tcpprobe": tcpProbe,
		// brokerask SOCKET JSON: sends JSON to a wt-exec's broker and
		// prints the reply (a request wt-admin would never make).
		"brokerask": brokerAsk,
		// wt-exec-confine is wt-exec's confinement helper, run by wt-exec
		// without root (wrapper/confine/userns.go).
		"wt-exec-confine": confine.Helper,
	})
}

// inTestCgroup runs the tests inside a cgroup of their own, where the
// machine allows one: every wt-exec the tests start makes its lease's
// cgroup beneath it, and a wt-exec a test kills leaves its cgroup there
// (in real use the next takeover removes it; a test's repository is gone
// by then). Afterwards the empty ones are removed with it; one that still
// holds processes is reported, with them, and left: a leak of a test.
type inTestCgroup struct{ m *testing.M }

func (w inTestCgroup) Run() int {
	own, err := proc.OwnCgroup()
	if err != nil {
		return w.m.Run()
	}
	dir := filepath.Join(own, fmt.Sprintf("wt-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return w.m.Run()
	}
	self := []byte(strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), self, 0); err != nil {
		os.Remove(dir)
		return w.m.Run()
	}
	code := w.m.Run()
	if err := os.WriteFile(filepath.Join(own, "cgroup.procs"), self, 0); err != nil {
		fmt.Fprintf(os.Stderr, "test cgroup: moving back to %s: %v\n", own, err)
		return code
	}
	subs, _ := os.ReadDir(dir)
	for _, e := range subs {
		if !e.IsDir() {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		if err := os.Remove(sub); err != nil {
			procs, _ := os.ReadFile(filepath.Join(sub, "cgroup.procs"))
			fmt.Fprintf(os.Stderr, "test cgroup: %s is left (%v): a test left processes %q\n", sub, err, strings.Fields(string(procs)))
		}
	}
	os.Remove(dir)
	return code
}

func blackhole() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil || len(os.Args) != 2 {
		os.Exit(2)
	}
	os.WriteFile(os.Args[1], []byte(strconv.Itoa(l.Addr().(*net.TCPAddr).Port)), 0o644)
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		blackholeHeld = append(blackholeHeld, c) // never read, never closed
	}
}

// blackholeHeld keeps blackhole's connections open (a connection no one
// refers to may be closed by its finalizer).
var blackholeHeld []net.Conn

// sockServe PATH listens on the Unix socket PATH (an abstract one when
// PATH starts with @) until killed, answering "hello" to every
// connection; it creates PATH.ready (or $WORK/abstract.ready) once it
// listens. sockProbe PATH connects to it and prints "connected: hello" or
// "refused: ERROR".
func sockServe() {
	if len(os.Args) != 2 {
		os.Exit(2)
	}
	p := os.Args[1]
	l, err := net.Listen("unix", strings.Replace(p, "@", "\x00", 1))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ready := p + ".ready"
	if strings.HasPrefix(p, "@") {
		ready = filepath.Join(os.Getenv("WORK"), "abstract.ready")
	}
	os.WriteFile(ready, nil, 0o644)
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		c.Write([]byte("hello"))
		c.Close()
	}
}

func brokerAsk() {
	if len(os.Args) != 3 {
		os.Exit(2)
	}
	c, err := net.Dial("unix", os.Args[1])
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	defer c.Close()
	c.Write([]byte(os.Args[2] + "\n"))
	b, _ := io.ReadAll(c)
	fmt.Print(string(b))
}

func tcpProbe() {
	if len(os.Args) != 2 {
		os.Exit(2)
	}
	c, err := net.DialTimeout("tcp", os.Args[1], 5*time.Second)
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	c.Close()
	fmt.Println("connected")
}

func sockProbe() {
	if len(os.Args) != 2 {
		os.Exit(2)
	}
	c, err := net.Dial("unix", strings.Replace(os.Args[1], "@", "\x00", 1))
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	b, _ := io.ReadAll(c)
	fmt.Println("connected:", string(b))
}

// agentLoop is a long-running agent: it writes DIR/wtexec.pid (its
// parent, the wt-exec that runs it), DIR/pid (its own) and DIR/ready, then runs each command
// the agent command hands it (DIR/cmd, arguments NUL-separated, announced
// by DIR/go) and leaves its stdout, stderr and exit code in DIR/stdout,
// DIR/stderr and DIR/rc. It exits when DIR/stop appears.
func agentLoop() {
	if len(os.Args) != 2 {
		os.Exit(2)
	}
	dir := os.Args[1]
	os.WriteFile(filepath.Join(dir, "wtexec.pid"), []byte(strconv.Itoa(os.Getppid())), 0o644)
	os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(os.Getpid())), 0o644)
	os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644)
	for {
		if _, err := os.Stat(filepath.Join(dir, "stop")); err == nil {
			os.Exit(0)
		}
		if _, err := os.Stat(dir); err != nil {
			os.Exit(0) // its test is over and gone: never poll forever
		}
		if _, err := os.Stat(filepath.Join(dir, "go")); err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		os.Remove(filepath.Join(dir, "go"))
		b, _ := os.ReadFile(filepath.Join(dir, "cmd"))
		args := strings.Split(string(b), "\x00")
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		rc := 0
		if err := cmd.Run(); err != nil {
			rc = 127
			if ee, ok := err.(*exec.ExitError); ok {
				rc = ee.ExitCode()
			}
			fmt.Fprintln(&stderr, err)
		}
		os.WriteFile(filepath.Join(dir, "stdout"), stdout.Bytes(), 0o644)
		os.WriteFile(filepath.Join(dir, "stderr"), stderr.Bytes(), 0o644)
		os.WriteFile(filepath.Join(dir, "rc.tmp"), []byte(strconv.Itoa(rc)), 0o644)
		os.Rename(filepath.Join(dir, "rc.tmp"), filepath.Join(dir, "rc"))
	}
}

// etcdServer becomes the etcd-server program (core/fleet/etcdtest,
// $WT_TEST_ETCD_SERVER), with the same arguments: the process the script
// stops, freezes and kills is etcd itself.
func etcdServer() {
	bin := os.Getenv("WT_TEST_ETCD_SERVER")
	err := syscall.Exec(bin, append([]string{"etcd-server"}, os.Args[1:]...), os.Environ())
	fmt.Fprintln(os.Stderr, err)
	os.Exit(2)
}

func agentsh() {
	if len(os.Args) < 2 {
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		os.Exit(ee.ExitCode())
	}
	if err != nil {
		os.Exit(127)
	}
	os.Exit(0)
}

// TestScripts runs the end-to-end scripts in testdata/script: the real
// binaries against real git repositories in temporary directories.
func TestScripts(t *testing.T) {
	// The fleet scripts run a real etcd: the etcd-server program, built
	// here once (a script's HOME is its own, without Go's caches).
	etcdServerBin, err := etcdtest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	gitVersion, err := gittest.VersionOf("git")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("git %s on PATH; ref backend %s", gitVersion, cmp.Or(os.Getenv("WT_TEST_REF_FORMAT"), "files"))
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		// [cgroup]: this process may make a cgroup v2 beneath its own, as
		// wt-exec does for its command (root, or a delegated subtree).
		// [landlock]: the kernel has Landlock with signal scoping (ABI >= 6),
		// which confine.txtar needs. [root]: euid 0 (confine-refs.txtar's
		// mount namespace).
		Condition: func(cond string) (bool, error) {
			if cond == "root" {
				return os.Geteuid() == 0, nil
			}
			// [gitX.Y]: the git running is X.Y or later (git2.46 shows
			// symbolic-ref updates to reference-transaction; git2.54 runs
			// hooks defined in configuration). [reftable]: scripts make
			// reftable repositories (make test-newer-git's second pass).
			if v, ok := strings.CutPrefix(cond, "git"); ok {
				want, err := gitversion.Parse("git version " + v)
				if err != nil {
					return false, fmt.Errorf("condition %q: %v", cond, err)
				}
				return gitVersion.AtLeast(want.Major, want.Minor), nil
			}
			if cond == "reftable" {
				return os.Getenv("WT_TEST_REF_FORMAT") == "reftable", nil
			}
			if cond == "landlock" {
				v, err := llsys.LandlockGetABIVersion()
				return err == nil && v >= 6, nil
			}
			// [userns]: an ordinary user may make a user namespace here
			// (the private view of a confined run without root).
			if cond == "userns" {
				b, err := os.ReadFile("/proc/sys/user/max_user_namespaces")
				n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				return err == nil && n > 0, nil
			}
			if cond != "cgroup" {
				return false, fmt.Errorf("unknown condition %q", cond)
			}
			own, err := proc.OwnCgroup()
			if err != nil {
				return false, nil
			}
			probe := filepath.Join(own, fmt.Sprintf("wt-probe-%d", os.Getpid()))
			if err := os.Mkdir(probe, 0o755); err != nil {
				return false, nil
			}
			return true, os.Remove(probe)
		},
		Setup: func(e *testscript.Env) error {
			e.Setenv("WT_TEST_ETCD_SERVER", etcdServerBin)
			home := filepath.Join(e.WorkDir, ".home")
			if err := os.MkdirAll(home, 0o755); err != nil {
				return err
			}
			e.Setenv("HOME", home)
			// gitoff runs git with every hook off: the hooks dir and, on
			// git 2.54 and later, the hooks defined in configuration (what
			// an agent with a git config of its own can do). A step that
			// must get past wt's gate to show what stands behind it (the
			// kernel under confinement, the remote's fence, audit) runs it.
			bin := filepath.Join(e.WorkDir, ".bin")
			if err := os.MkdirAll(bin, 0o755); err != nil {
				return err
			}
			script := "#!/bin/sh\nexec git " + shell.Words(gitrepo.HooksOff...) + " \"$@\"\n"
			if err := os.WriteFile(filepath.Join(bin, "gitoff"), []byte(script), 0o755); err != nil {
				return err
			}
			for name, body := range confineScripts {
				if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
					return err
				}
			}
			e.Setenv("PATH", bin+string(filepath.ListSeparator)+e.Getenv("PATH"))
			e.Setenv("GORACE", os.Getenv("GORACE"))
			e.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			// make test-newer-git runs the scripts again with a newer git
			// first on PATH, once with each ref backend: every repository a
			// script makes then has that backend.
			if f := os.Getenv("WT_TEST_REF_FORMAT"); f != "" {
				e.Setenv("GIT_DEFAULT_REF_FORMAT", f)
			}
			e.Setenv("GIT_AUTHOR_NAME", "wt test")
			e.Setenv("GIT_AUTHOR_EMAIL", "test@wt.invalid")
			e.Setenv("GIT_COMMITTER_NAME", "wt test")
			e.Setenv("GIT_COMMITTER_EMAIL", "test@wt.invalid")
			e.Setenv("CTRL_OWNER", "ali\x01ce")
			e.Setenv("TAB_TASK", "T\t1")
			// A path that would forge a line of output, and text that
			// would retitle the terminal.
			e.Setenv("NL_PATH", "../nl\nwt-admin: DOCTOR_OK: nothing needs action")
			e.Setenv("ESC_TEXT", "crashed\x1b]0;pwned\x07")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// glob1 VAR PATTERN: set VAR to the one file matching PATTERN, and
			// VAR_ID to its base name without extension.
			"glob1": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: glob1 VAR PATTERN")
				}
				m, _ := filepath.Glob(ts.MkAbs(args[1]))
				if len(m) != 1 {
					ts.Fatalf("%s matches %d files: %v", args[1], len(m), m)
				}
				ts.Setenv(args[0], m[0])
				ts.Setenv(args[0]+"_ID", strings.TrimSuffix(filepath.Base(m[0]), filepath.Ext(m[0])))
			},
			// freeport VAR: set VAR to a TCP port nothing listens on.
			"freeport": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 {
					ts.Fatalf("usage: freeport VAR")
				}
				p, err := etcdtest.FreePort()
				ts.Check(err)
				ts.Setenv(args[0], strconv.Itoa(p))
			},
			// capture VAR REGEXP: set VAR to the first group of REGEXP in
			// the last command's stdout (which must match).
			"capture": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 || neg {
					ts.Fatalf("usage: capture VAR REGEXP")
				}
				m := regexp.MustCompile(args[1]).FindStringSubmatch(ts.ReadFile("stdout"))
				if len(m) < 2 {
					ts.Fatalf("stdout does not match %s", args[1])
				}
				ts.Setenv(args[0], m[1])
			},
			// replace FILE OLD NEW: replace the first OLD in FILE (which must hold it).
			"replace": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 3 {
					ts.Fatalf("usage: replace FILE OLD NEW")
				}
				p := ts.MkAbs(args[0])
				b, err := os.ReadFile(p)
				ts.Check(err)
				if !bytes.Contains(b, []byte(args[1])) {
					ts.Fatalf("%s does not contain %q", args[0], args[1])
				}
				ts.Check(os.WriteFile(p, bytes.Replace(b, []byte(args[1]), []byte(args[2]), 1), 0o644))
			},
			// recipe NAME FILE: write the code block that follows
			// "<!-- recipe: NAME -->" in docs/launchers.md to FILE, so that
			// the page's recipes run exactly as written.
			"recipe": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: recipe NAME FILE")
				}
				page, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "launchers.md"))
				ts.Check(err)
				_, rest, ok := strings.Cut(string(page), "<!-- recipe: "+args[0]+" -->\n")
				if !ok {
					ts.Fatalf("docs/launchers.md has no recipe %s", args[0])
				}
				_, rest, _ = strings.Cut(rest, "\n") // the opening fence
				block, _, ok := strings.Cut(rest, "\n```")
				if !ok {
					ts.Fatalf("recipe %s has no closing fence", args[0])
				}
				ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(block+"\n"), 0o644))
			},
			// nobodysetup: makes $WORK the workplace of an ordinary user
			// (uid and gid 65534): $WORK and the directories above it
			// traversable, $WORK its own, this test binary copied under
			// the names the scripts run (wt-exec, wt-admin, wt-hook,
			// wt-gate, and the confinement helper) where that user may
			// run it, and asnobody on PATH, which runs its arguments as
			// that user with those first on PATH (setpriv).
			"nobodysetup": func(ts *testscript.TestScript, neg bool, args []string) {
				work := ts.Getenv("WORK")
				for d := work; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
					fi, err := os.Stat(d)
					ts.Check(err)
					ts.Check(os.Chmod(d, fi.Mode().Perm()|0o011))
				}
				bin := filepath.Join(work, ".nobody", "bin")
				home := filepath.Join(work, ".nobody", "home")
				ts.Check(os.MkdirAll(bin, 0o755))
				ts.Check(os.MkdirAll(home, 0o755))
				self, err := os.Executable()
				ts.Check(err)
				// The programs this script runs are written by cp and
				// install, never through a descriptor of this process: a
				// test forking beside it would hold that descriptor until
				// its exec, and running the file meanwhile fails with
				// "text file busy" (ETXTBSY).
				first := filepath.Join(bin, "wt-exec")
				ts.Check(exec.Command("cp", self, first).Run())
				ts.Check(os.Chmod(first, 0o755))
				for _, name := range []string{"wt-admin", "wt-hook", "wt-gate", "wt-exec-confine", "sockprobe", "agentloop", "brokerask"} {
					ts.Check(os.Link(first, filepath.Join(bin, name)))
				}
				ts.Check(filepath.WalkDir(work, func(p string, d os.DirEntry, err error) error {
					if err != nil {
						return err
					}
					return os.Lchown(p, 65534, 65534)
				}))
				script := "#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups env PATH=" + bin + ":\"$PATH\" HOME=" + home + " \"$@\"\n"
				text := filepath.Join(work, ".nobody", "asnobody.sh")
				ts.Check(os.WriteFile(text, []byte(script), 0o644))
				ts.Check(exec.Command("install", "-m", "0755", text, filepath.Join(work, ".bin", "asnobody")).Run())
			},
			// nextsecond: wait until the wall clock's second changes: git's
			// reflogs keep whole seconds, and a script that needs a move in
			// a second of its own waits for that event. git takes its time
			// from time(2), which reads the kernel's coarse clock (a tick
			// behind the precise one): the wait ends when that one moved.
			"nextsecond": func(ts *testscript.TestScript, neg bool, args []string) {
				now := time.Now().Unix()
				for {
					var c unix.Timespec
					if unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &c) == nil && c.Sec > now {
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			},
			// waitfile FILE: wait (at most a minute) until FILE exists, e.g.
			// one a background command creates when it is ready.
			"waitfile": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 {
					ts.Fatalf("usage: waitfile FILE")
				}
				for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
					if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
						return
					}
				}
				ts.Fatalf("%s did not appear", args[0])
			},
			// agent DIR CMD [ARG...]: have the agentloop serving DIR run
			// CMD, wait (at most a minute) for it, and take its stdout,
			// stderr and success as this command's.
			"agent": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) < 2 {
					ts.Fatalf("usage: agent DIR CMD [ARG...]")
				}
				dir := ts.MkAbs(args[0])
				os.Remove(filepath.Join(dir, "rc"))
				ts.Check(os.WriteFile(filepath.Join(dir, "cmd"), []byte(strings.Join(args[1:], "\x00")), 0o644))
				ts.Check(os.WriteFile(filepath.Join(dir, "go"), nil, 0o644))
				var rc []byte
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
					var err error
					if rc, err = os.ReadFile(filepath.Join(dir, "rc")); err == nil {
						break
					}
					if time.Now().After(deadline) {
						ts.Fatalf("the agent in %s did not answer", dir)
					}
				}
				out, _ := os.ReadFile(filepath.Join(dir, "stdout"))
				errOut, _ := os.ReadFile(filepath.Join(dir, "stderr"))
				ts.Stdout().Write(out)
				ts.Stderr().Write(errOut)
				if ok := string(rc) == "0"; ok == neg {
					ts.Fatalf("agent %s: exit %s", strings.Join(args[1:], " "), rc)
				}
			},
			// truncate FILE N: keep the first N bytes of FILE.
			"truncate": func(ts *testscript.TestScript, neg bool, args []string) {
				var n int
				if len(args) != 2 {
					ts.Fatalf("usage: truncate FILE N")
				}
				fmt.Sscan(args[1], &n)
				ts.Check(os.Truncate(ts.MkAbs(args[0]), int64(n)))
			},
		},
	})
}

// confineScripts are what the confinement scripts compare the repository
// by, before and after a confined run (confine-refs.txtar): snapshot lists
// every ref but the task branch wt/T-1 (which wt-exec publishes) and wt's
// kept refs, each with its reflog, and the config; sums prints the sum of
// every file of repo's common dir but the task branch's ref and reflog,
// the run's own admin dir, wt's store and gate files and reftable's tables
// (rewritten whole when the task branch is published); sumcheck checks that
// every file sums.before lists is still there with the same bytes (new
// object files, which a publication adds, are not in the list).
var confineScripts = map[string]string{
	"snapshot": `#!/bin/sh
r=${1:-repo}
refs=$(git -C "$r" for-each-ref --format='%(refname)' | grep -v -e '^refs/heads/wt/T-1$' -e '^refs/heads/wt/T-1/' -e '^refs/wt/')
for ref in $refs; do
	echo "$ref $(git -C "$r" rev-parse "$ref")"
	git -C "$r" reflog show --format='  %H %gs' "$ref" -- 2>/dev/null
done
cat "$r/.git/config"
`,
	"sums": `#!/bin/sh
cd ${1:-repo}/.git && find . -type f ! -path './worktrees/w1/*' ! -path './wt/*' ! -path './wt-gate/*' ! -path './reftable/*' \
	! -path './refs/heads/wt/T-1' ! -path './logs/refs/heads/wt/T-1' ! -path './refs/heads/wt/T-1/*' ! -path './logs/refs/heads/wt/T-1/*' ! -name '*.lock' | sort | xargs sha1sum
`,
	"sumcheck": `#!/bin/sh
cd ${1:-repo}/.git && sha1sum --quiet -c "$WORK/sums.before"
`,
}
