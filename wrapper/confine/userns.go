package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/proc"
)

// Without root, a user namespace gives wt-exec the mount namespace the
// private view needs (Linux lets an ordinary user make one where
// unprivileged user namespaces are on). A process cannot enter a new user
// namespace once it has threads, and a Go program always has, so the view
// is made by a helper: wt-exec forks itself (/proc/self/exe) into a new
// user and mount namespace (its own uid and gid mapped to themselves,
// CAP_SYS_ADMIN and what overlayfs needs kept across that exec as ambient
// capabilities), and the
// helper mounts the view, hands wt-exec a descriptor of it over a socket,
// drops every capability, confines itself with Landlock and execs the
// command in its place (same pid, process group, session and cgroup).
// If the command cannot be exec'd, the helper says why on the socket and
// exits; a successful exec closes the socket (close-on-exec).

// helperEnv carries the helper's end of the socket (a descriptor number),
// requestEnv what it is to do (JSON of helperRequest). Neither reaches the
// command.
const (
	helperEnv  = "WT_CONFINE_HELPER"
	requestEnv = "WT_CONFINE_REQUEST"
)

// helperRequest is what the helper makes before it execs the command.
type helperRequest struct {
	Common   string      `json:"common"`
	GitDir   string      `json:"git_dir"`
	Dir      string      `json:"dir"`
	Write    []string    `json:"write"`
	Devices  []string    `json:"devices"`
	Private  []string    `json:"private"`
	Protect  []string    `json:"protect"`
	Copies   [][2]string `json:"copies"`
	Hide     []string    `json:"hide"`
	Overlays [][3]string `json:"overlays"`
	// Home is how many of Overlays, first, are the run's layers over the
	// home caches (the rest are the profile's).
	Home    int      `json:"home"`
	Signals bool     `json:"signals"`
	Sandbox bool     `json:"sandbox"`
	ABI     int      `json:"abi"`
	Path    string   `json:"path"`
	Argv    []string `json:"argv"`
}

// canUserNS reports whether this kernel lets an ordinary user make a user
// namespace: max_user_namespaces above zero, and neither Debian's
// unprivileged_userns_clone nor Ubuntu's AppArmor restriction in the way.
func canUserNS() bool {
	read := func(p string) (int, bool) {
		b, err := proc.ReadFile(p)
		if err != nil {
			return 0, false
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		return n, err == nil
	}
	if n, ok := read("/proc/sys/user/max_user_namespaces"); !ok || n == 0 {
		return false
	}
	if n, ok := read("/proc/sys/kernel/unprivileged_userns_clone"); ok && n == 0 {
		return false
	}
	if n, ok := read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok && n != 0 {
		return false
	}
	return true
}

// IsHelper reports whether this process is the confinement helper
// (wt-exec's main runs Helper first thing when it is).
func IsHelper() bool { return os.Getenv(helperEnv) != "" }

// forkUserNS starts the command through the helper in a new user and
// mount namespace, and returns its pid once it has exec'd the command.
func (c *Plan) forkUserNS(terminals []string, path string, argv []string, attr *syscall.ProcAttr) (int, error) {
	v := c.guard.view
	v.Close()
	req := helperRequest{Common: v.Common, GitDir: v.GitDir, Dir: v.Dir, Devices: append(append([]string(nil), devices...), terminals...),
		Signals: c.Signals, ABI: c.ABI, Path: path, Argv: argv, Hide: c.guard.hide, Sandbox: v.sandbox}
	for _, r := range c.Rules {
		req.Write = append(req.Write, r.Path)
	}
	for _, o := range c.guard.home {
		req.Overlays = append(req.Overlays, [3]string{o.path, o.upper, o.work})
	}
	req.Home = len(c.guard.home)
	if c.agent != nil {
		req.Protect = c.agent.protect
		for _, p := range c.agent.private {
			req.Private = append(req.Private, p.path)
			req.Copies = append(req.Copies, [2]string{p.copy, p.path})
		}
		for _, o := range c.agent.overlays {
			req.Overlays = append(req.Overlays, [3]string{o.path, o.upper, o.work})
		}
	}
	b, err := json.Marshal(req)
	if err != nil {
		return 0, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("make the helper's socket: %w", err)
	}
	defer unix.Close(fds[0])
	// The helper's end passes to it as an ordinary inherited descriptor:
	// ProcAttr.Files would move the command's descriptors (--keep-fd).
	syscall.ForkLock.Lock()
	_, err = unix.FcntlInt(uintptr(fds[1]), unix.F_SETFD, 0)
	if err != nil {
		syscall.ForkLock.Unlock()
		unix.Close(fds[1])
		return 0, err
	}
	a := *attr
	sys := *attr.Sys
	a.Sys = &sys
	sys.Cloneflags |= unix.CLONE_NEWUSER | unix.CLONE_NEWNS
	sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	sys.GidMappingsEnableSetgroups = false
	// Mounting needs CAP_SYS_ADMIN; overlayfs keeps the mounter's
	// capabilities for its work on the upper layer (whiteouts, copy-up
	// with the owner and mode kept). All of them are in the user
	// namespace alone, and all are dropped before the command runs.
	sys.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH, unix.CAP_FOWNER,
		unix.CAP_FSETID, unix.CAP_CHOWN, unix.CAP_MKNOD}
	if v.sandbox {
		// A network namespace of its own, owned by the new user
		// namespace: bringing its loopback up needs CAP_NET_ADMIN there.
		sys.Cloneflags |= unix.CLONE_NEWNET
		sys.AmbientCaps = append(sys.AmbientCaps, unix.CAP_NET_ADMIN)
	}
	a.Env = append(append([]string(nil), attr.Env...), helperEnv+"="+strconv.Itoa(fds[1]), requestEnv+"="+string(b))
	syscall.ForkLock.Unlock()
	exe, err := os.Executable()
	if err != nil {
		unix.Close(fds[1])
		return 0, err
	}
	pid, err := syscall.ForkExec(exe, []string{"wt-exec-confine", path}, &a)
	unix.Close(fds[1])
	if err != nil {
		return 0, fmt.Errorf("start the confinement helper: %w", err)
	}
	// First the view (or why there is none), then EOF once the command
	// runs, or why it does not.
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(fds[0], buf, oob, 0)
	if err != nil {
		return 0, fmt.Errorf("hear from the confinement helper: %w", err)
	}
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err == nil && len(msgs) == 1 {
			if got, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(got) == 1 {
				v.fd = got[0]
			}
		}
		n, _, _, _, err = unix.Recvmsg(fds[0], buf, nil, 0)
		if err != nil {
			return 0, fmt.Errorf("hear from the confinement helper: %w", err)
		}
	}
	if n == 0 {
		if v.fd < 0 {
			return 0, errors.New("the confinement helper ended without a view")
		}
		return pid, nil
	}
	msg := string(buf[:n])
	if e, ok := strings.CutPrefix(msg, "errno:"); ok {
		if no, err := strconv.Atoi(e); err == nil {
			return 0, syscall.Errno(no)
		}
	}
	return 0, errors.New(strings.TrimPrefix(msg, "error:"))
}

// Helper is the confinement helper (see forkUserNS): it makes the view in
// the namespaces it was started in, confines itself, and execs the
// command. It never returns.
func Helper() {
	runtime.LockOSThread()
	fd, err := strconv.Atoi(os.Getenv(helperEnv))
	if err != nil {
		os.Exit(125)
	}
	fail := func(msg string) {
		_, _ = unix.Write(fd, []byte(msg)) // Best effort: wt-exec may be gone.
		os.Exit(125)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		fail("error:" + err.Error())
	}
	var req helperRequest
	if err := json.Unmarshal([]byte(os.Getenv(requestEnv)), &req); err != nil {
		fail("error:read the confinement request: " + err.Error())
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, helperEnv+"=") && !strings.HasPrefix(kv, requestEnv+"=") {
			env = append(env, kv)
		}
	}
	g := &refGuard{mode: GuardView, view: &View{Common: req.Common, GitDir: req.GitDir, Dir: req.Dir, userNS: true, sandbox: req.Sandbox, fd: -1}, hide: req.Hide}
	if req.Sandbox {
		if err := loopbackUp(); err != nil {
			fail("error:" + err.Error())
		}
	}
	for _, o := range req.Overlays[:min(req.Home, len(req.Overlays))] {
		g.home = append(g.home, agentOverlay{path: o[0], upper: o[1], work: o[2]})
	}
	if rest := req.Overlays[min(req.Home, len(req.Overlays)):]; len(req.Protect) > 0 || len(req.Copies) > 0 || len(rest) > 0 {
		g.agent = &agentPlan{protect: req.Protect}
		for _, o := range rest {
			g.agent.overlays = append(g.agent.overlays, agentOverlay{path: o[0], upper: o[1], work: o[2]})
		}
		for _, c := range req.Copies {
			g.agent.private = append(g.agent.private, privateCopy{copy: c[0], path: c[1]})
		}
	}
	if err := g.mountView(); err != nil {
		fail("error:" + err.Error())
	}
	if err := unix.Sendmsg(fd, []byte("view"), unix.UnixRights(g.view.fd), nil, 0); err != nil {
		fail("error:" + err.Error())
	}
	plan := &Plan{ABI: req.ABI, Signals: req.Signals}
	for _, w := range req.Write {
		plan.Rules = append(plan.Rules, Rule{Path: w})
	}
	rs, err := plan.ruleset(req.Devices, req.Private)
	if err != nil {
		fail("error:build the Landlock ruleset: " + err.Error())
	}
	// No capability passes into the command, ambient or other.
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		fail("error:clear the ambient capabilities: " + err.Error())
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail("error:set no_new_privs: " + err.Error())
	}
	if rs.fd >= 0 {
		if err := llsys.LandlockRestrictSelf(rs.fd, rs.flags); err != nil {
			fail("error:apply the Landlock confinement: " + err.Error())
		}
		unix.Close(rs.fd)
	}
	err = unix.Exec(req.Path, req.Argv, env)
	var no syscall.Errno
	if errors.As(err, &no) {
		fail("errno:" + strconv.Itoa(int(no)))
	}
	fail("error:" + err.Error())
}
