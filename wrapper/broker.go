package wrapper

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/broker"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// A confined command's view of the repository, wt's store included, is
// its own, so the store changes an agent may legitimately ask for are made
// by the wt-exec that runs it: `wt-admin lease handoff` and `wt-admin
// lease transfer` of its own worktree, and `wt-admin ready` of its own
// task. wt-exec listens on a socket in the
// command's private TMPDIR (named by WT_EXEC_BROKER in its environment);
// wt-admin, confined, passes those two commands to it, and wt-exec runs
// them as wt-admin, unconfined and as its own child (so the holder's
// checks see a process the holder started), and hands back their output
// and exit status. Nothing else is passed on: not --operator, not another
// worktree, not another command.

// brokerRequest is one command a confined wt-admin passes on (the
// protocol: core/broker).
type brokerRequest = broker.Request

// brokered are the wt-admin commands passed on, each with the flags it
// may carry (each takes a value) and whether --json may be given.
var brokered = map[string][]string{
	"handoff":  {"--to-client", "--ttl", "--expect-lease-id", "--expect-generation"},
	"transfer": {"--holder", "--reason", "--expect-lease-id", "--expect-generation"},
}

// startBroker listens for a confined command's requests (see above) in
// tmp, for the run of task, and returns the variable naming the socket for its environment.
func (s *supervisor) startBroker(c gitrepo.Checkout, task, tmp string) (string, error) {
	p := filepath.Join(tmp, ".wt-exec.sock")
	l, err := net.Listen("unix", p)
	if err != nil {
		return "", err
	}
	s.broker = l
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			s.serveBroker(c, task, conn)
		}
	}()
	return store.BrokerEnv + "=" + p, nil
}

// stopBroker stops listening.
func (s *supervisor) stopBroker() {
	if s.broker != nil {
		_ = s.broker.Close() // Best effort: a socket in a TMPDIR about to go.
		s.broker = nil
	}
}

func (s *supervisor) serveBroker(c gitrepo.Checkout, task string, conn net.Conn) {
	defer conn.Close()
	var req brokerRequest
	reply := broker.Reply{Code: 2}
	peer, why := s.peerOfRun(conn)
	if why != "" {
		// Not this run's: whatever it asks is refused, and recorded. The
		// request is read (bounded) only to say what was asked.
		_ = conn.SetReadDeadline(time.Now().Add(time.Second)) // Best effort: a silent peer.
		_ = json.NewDecoder(io.LimitReader(conn, 64<<10)).Decode(&req)
		d := decision.Say(decision.BrokerPeerRefused, "this-wt", why).
			WithHint("run wt-admin from inside the run whose worktree it is, or from outside any run")
		s.recordRefusal(c, task, peer, req.Args, d.Message)
		reply = broker.Reply{Code: 125, Stderr: "wt-exec: refused: " + d.Error() + "\n"}
		_ = json.NewEncoder(conn).Encode(reply) // Best effort: the asker may be gone.
		return
	}
	if err := json.NewDecoder(io.LimitReader(conn, 64<<10)).Decode(&req); err != nil {
		reply.Stderr = "wt-exec: refused: USAGE: not a request: " + err.Error() + "\n"
	} else if args, err := brokeredArgs(c, task, req); err != nil {
		reply.Stderr = "wt-exec: refused: USAGE: " + err.Error() + "\n"
	} else {
		if len(req.Args) > 0 && req.Args[0] == "ready" && s.pub != nil {
			// ready records the task branch's tip as the commit to land:
			// the run's last commits leave its view first.
			if err := s.pub.Publish(context.Background()); err != nil {
				reply.Stderr = "wt-exec: refused: " + err.Error() + "\n"
				_ = json.NewEncoder(conn).Encode(reply) // Best effort: the asker may be gone.
				return
			}
		}
		reply = s.runAdmin(args)
	}
	_ = json.NewEncoder(conn).Encode(reply) // Best effort: the asker may be gone.
}

// peerOfRun reads who connected (SO_PEERCRED: the kernel's word, not the
// peer's) and says why it is not a process of this run ("" when it is):
// another user, or a process that does not descend from this wt-exec (the
// command and all it started descend from it: wt-exec is their
// subreaper). A run's broker socket can be found by any run that looks for
// it (a socket made after a run started is not covered in its view), so
// the socket's name is no proof of anything.
func (s *supervisor) peerOfRun(conn net.Conn) (*unix.Ucred, string) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil, "the connection is not a Unix socket's"
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, "its peer cannot be read: " + err.Error()
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil || cerr != nil {
		return nil, fmt.Sprintf("its peer cannot be read: %v", errors.Join(err, cerr))
	}
	if int(cred.Uid) != os.Getuid() {
		return cred, fmt.Sprintf("the connecting process (pid %d) is another user's (uid %d)", cred.Pid, cred.Uid)
	}
	self, err := proc.Self()
	if err != nil {
		return cred, "this wt-exec's own identity cannot be read: " + err.Error()
	}
	in, err := proc.NewReader().HasAncestor(int(cred.Pid), self)
	if err != nil {
		return cred, fmt.Sprintf("whether the connecting process (pid %d) is of this run cannot be read: %v", cred.Pid, err)
	}
	if !in {
		return cred, fmt.Sprintf("the connecting process (pid %d) is not: it does not descend from this wt-exec (pid %d)", cred.Pid, self.PID)
	}
	return cred, ""
}

// recordRefusal records a refused broker request in the store (event
// broker_request_refused): who asked (the kernel's word), what, and why.
// Best effort: the refusal stands without it.
//
// It runs beside the run (the broker's goroutine): it opens the store of
// its own, and names the run by its worktree, not by what the run's
// goroutine is writing.
func (s *supervisor) recordRefusal(c gitrepo.Checkout, task string, peer *unix.Ucred, args []string, why string) {
	st, err := store.Open(c.CommonDir)
	if err != nil {
		s.notify("a refused broker request could not be recorded: " + err.Error())
		return
	}
	detail := map[string]any{"task": task, "worktree": c.TopLevel, "args": args, "why": why}
	if peer != nil {
		detail["peer_pid"], detail["peer_uid"] = peer.Pid, peer.Uid
	}
	if err := st.Write(func(tx *store.Tx) error {
		id := ""
		if b, ok, err := tx.Binding(c.Key); err == nil && ok {
			id = b.AllocationID
		}
		return tx.LogEvent("broker_request_refused", id, detail)
	}); err != nil {
		s.notify("a refused broker request could not be recorded: " + err.Error())
	}
}

// brokeredArgs checks a request and returns the wt-admin arguments that
// carry it out on this run's worktree.
func brokeredArgs(c gitrepo.Checkout, task string, req brokerRequest) ([]string, error) {
	a := req.Args
	if len(a) >= 2 && a[0] == "ready" {
		// The run's own task, marked by its writer: wt-admin, run as
		// wt-exec's child, descends from the holder.
		if a[1] != task || task == "" {
			return nil, fmt.Errorf("%s is not the run's own task %s", a[1], task)
		}
		out := []string{"--repo", c.TopLevel, "ready", task}
		strategies := map[string]bool{"rebase": true, "merge": true, "squash": true}
		for i := 2; i < len(a); i++ {
			x := a[i]
			switch {
			case x == "--json":
				out = append([]string{"--json"}, out...)
			case x == "--strategy" && i+1 < len(a) && strategies[a[i+1]]:
				out = append(out, "--strategy", a[i+1])
				i++
			case strings.HasPrefix(x, "--strategy=") && strategies[strings.TrimPrefix(x, "--strategy=")]:
				out = append(out, x)
			default:
				return nil, fmt.Errorf("%s is not passed on from a confined command (a confined ready takes only --json and --strategy rebase|merge|squash)", x)
			}
		}
		return out, nil
	}
	if len(a) < 3 || a[0] != "lease" || brokered[a[1]] == nil {
		return nil, errors.New("wt-exec passes on only wt-admin lease handoff PATH and lease transfer PATH of the run's own worktree")
	}
	target := a[2]
	if !filepath.IsAbs(target) {
		target = filepath.Join(req.Dir, target)
	}
	if t, err := gitrepo.Locate(target); err != nil || t.Key != c.Key || t.CommonDir != c.CommonDir {
		return nil, fmt.Errorf("%s is not the run's own worktree %s", a[2], c.TopLevel)
	}
	out := []string{"--repo", c.TopLevel, "lease", a[1], c.TopLevel}
	for i := 3; i < len(a); i++ {
		switch {
		case a[i] == "--json":
			out = append([]string{"--json"}, out...)
		case slices.Contains(brokered[a[1]], a[i]) && i+1 < len(a):
			out = append(out, a[i], a[i+1])
			i++
		default:
			return nil, fmt.Errorf("%s is not passed on from a confined command (a confined lease %s takes %v)", a[i], a[1], brokered[a[1]])
		}
	}
	return out, nil
}

// runAdmin runs wt-admin with args as wt-exec's child, while the reaper
// leaves its children alone (child.Proc.WithoutReaping).
func (s *supervisor) runAdmin(args []string) broker.Reply {
	bin := "wt-admin"
	if exe, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(exe), "wt-admin"); fileExists(p) {
			bin = p
		}
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = withoutVar(withoutVar(os.Environ(), store.ConfinedEnv), store.BrokerEnv)
	var err error
	s.child.WithoutReaping(func() { err = cmd.Run() })
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else {
			code, stderr = 125, *bytes.NewBufferString("wt-exec: refused: INTERNAL: run wt-admin: " + err.Error() + "\n")
		}
	}
	return broker.Reply{Stdout: stdout.String(), Stderr: stderr.String(), Code: code}
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
