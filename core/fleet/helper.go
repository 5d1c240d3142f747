package fleet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// HelperName is the helper binary that links the etcd client.
const HelperName = "wt-fleet"

// PasswordEnv holds the etcd user's password where no password file is
// named (store.EtcdAuth): read by the helper, from its environment.
const PasswordEnv = "WT_ETCD_PASSWORD"

// Request is one line the helper reads on stdin: what to do, and where
// etcd is. A hold then reads commands, one a line ("release").
type Request struct {
	Op        string   `json:"op"` // hold, check, list, revoke
	Endpoints []string `json:"endpoints"`
	// Auth is how the helper proves itself to etcd: files it reads, and
	// a user (its password from the file or $WT_ETCD_PASSWORD).
	Auth        *store.EtcdAuth `json:"auth,omitempty"`
	DialTimeout time.Duration   `json:"dial_timeout"`
	Key         string          `json:"key,omitempty"`
	TTL         time.Duration   `json:"ttl,omitempty"`
	Holder      *Holder         `json:"holder,omitempty"`
	Revision    int64           `json:"revision,omitempty"`
	Prefix      string          `json:"prefix,omitempty"`
	// FenceHash (check): the SHA-256 of the fencing secret a push carried.
	FenceHash string `json:"fence_hash,omitempty"`
}

// Response is one line the helper writes on stdout. A hold writes the
// outcome of the acquisition first, then {"lost":true} if the lease could
// not be kept alive, and {"released":true} once it revoked it.
type Response struct {
	OK       bool    `json:"ok"`
	Code     string  `json:"code,omitempty"`
	Message  string  `json:"message,omitempty"`
	Hint     string  `json:"hint,omitempty"`
	Revision int64   `json:"revision,omitempty"`
	LeaseID  int64   `json:"etcd_lease,omitempty"`
	Holder   *Holder `json:"holder,omitempty"`
	Entries  []Entry `json:"entries,omitempty"`
	Entry    *Entry  `json:"entry,omitempty"`
	Lost     bool    `json:"lost,omitempty"`
	Released bool    `json:"released,omitempty"`
}

// Err turns a refusal into its decision error.
func (r Response) Err() error {
	if r.OK {
		return nil
	}
	d := decision.Relay(r.Code, r.Message)
	if r.Hint != "" {
		d = d.WithHint("%s", r.Hint)
	}
	if r.Holder != nil {
		d = d.WithFact("fleet_holder", *r.Holder).WithFact("fleet_revision", r.Revision)
	}
	return d
}

// Refusal is the Response for an error.
func Refusal(err error) Response {
	d, ok := decision.As(err)
	if !ok {
		d = decision.SayWrap(decision.FleetUnreachable, err, "etcd-2")
	}
	r := Response{Code: d.Code, Message: d.Message, Hint: d.Hint}
	if h, ok := d.Facts["fleet_holder"].(Holder); ok {
		r.Holder = &h
		r.Revision, _ = d.Facts["fleet_revision"].(int64)
	}
	return r
}

// Helper is the Coordinator that runs the wt-fleet helper binary for every
// operation (and, for a hold, keeps it running beside the child).
type Helper struct {
	Path        string
	Endpoints   []string
	Auth        store.EtcdAuth
	DialTimeout time.Duration
	// Stderr receives the helper's own diagnostics.
	Stderr io.Writer
	// pre is the helper Prestart started, waiting for Acquire.
	pre *started
}

// FindHelper locates wt-fleet: $WT_FLEET_BIN, then beside the running
// binary (make install puts them together), then PATH.
func FindHelper() (string, error) {
	if p := os.Getenv("WT_FLEET_BIN"); p != "" {
		return p, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), HelperName)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(HelperName); err == nil {
		return p, nil
	}
	return "", decision.Say(decision.FleetHelperMissing, "policy-coordinator", HelperName).
		WithHint("install wt again (make install), which installs %s", HelperName)
}

func (h *Helper) command(ctx context.Context) *exec.Cmd {
	cmd := exec.CommandContext(ctx, h.Path)
	cmd.Stderr = h.Stderr
	return cmd
}

func (h *Helper) request(op string) Request {
	req := Request{Op: op, Endpoints: h.Endpoints, DialTimeout: h.DialTimeout}
	if !h.Auth.IsZero() {
		req.Auth = &h.Auth
	}
	return req
}

// call runs one request to completion.
func (h *Helper) call(ctx context.Context, req Request) (Response, error) {
	in, _ := json.Marshal(req)
	cmd := h.command(ctx)
	cmd.Stdin = bytes.NewReader(append(in, '\n'))
	out, err := cmd.Output()
	var resp Response
	if jerr := json.Unmarshal(bytes.TrimSpace(firstLine(out)), &resp); jerr != nil {
		return resp, decision.SayWrap(decision.FleetUnreachable, errors.Join(err, jerr), "gave-no", HelperName, req.Op)
	}
	return resp, resp.Err()
}

func firstLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i]
	}
	return b
}

// started is a helper process that is running and waits for its request.
type started struct {
	pid     int
	in, out *os.File
}

// start starts the helper and sends it the endpoints: it makes its etcd
// client at once (and, given a ttl, grants a lease of it), and then waits
// for the request.
func (h *Helper) start(ttl time.Duration) (*started, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := exec.Command(h.Path)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, h.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, decision.SayWrap(decision.FleetHelperMissing, err, "start", h.Path)
	}
	p := &started{pid: cmd.Process.Pid, in: inW, out: outR}
	connect := h.request("connect")
	connect.TTL = ttl
	line, _ := json.Marshal(connect)
	if _, err := inW.Write(append(line, '\n')); err != nil {
		p.end(true)
		return nil, decision.SayWrap(decision.FleetUnreachable, err, "talk", HelperName)
	}
	return p, nil
}

// end closes the pipes, kills the helper when kill is set, and reaps it.
// The helper is reaped here, by its pid, and never through os/exec: in
// wt-exec the supervisor's wait4(-1) reaps every child while the command
// runs, and may have reaped this one (if it died), which is ECHILD here.
func (p *started) end(kill bool) {
	p.in.Close()
	p.out.Close()
	if kill {
		_ = syscall.Kill(p.pid, syscall.SIGKILL) // Best effort: it may be gone.
	}
	for {
		if _, err := syscall.Wait4(p.pid, nil, 0, nil); err != syscall.EINTR {
			return
		}
	}
}

// Prestart starts the helper ahead of Acquire, so that its start (4-8 ms,
// most of it the etcd client's initialisation) and, given the fleet TTL,
// the grant of a lease overlap the caller's own work. Close ends it if
// Acquire never comes (a lease it granted expires with its TTL).
func (h *Helper) Prestart(ttl time.Duration) error {
	if h.pre != nil {
		return nil
	}
	p, err := h.start(ttl)
	if err != nil {
		return err
	}
	h.pre = p
	return nil
}

// Acquire implements Coordinator: it starts `wt-fleet` holding the key and
// leaves it running, keeping the lease alive, until Release.
//
// The helper runs in a session of its own (no terminal's signals reach
// it) and stays the caller's child: wt-exec, a child subreaper that stops
// everything below it once the command exits, leaves this one process
// alone (Session.Pid names it) until it has released the lease. The pipes
// are the only other link: closing them (the caller dies) ends the helper
// without revoking, and the lease expires with its TTL. It is started once
// per run: each start of the helper costs about 8 ms (the etcd client's
// initialisation).
func (h *Helper) Acquire(ctx context.Context, key string, holder Holder, ttl time.Duration) (Session, error) {
	req := h.request("hold")
	req.Key, req.TTL, req.Holder = key, ttl, &holder
	p := h.pre
	h.pre = nil
	if p == nil {
		var err error
		if p, err = h.start(0); err != nil {
			return nil, err
		}
	}
	in, _ := json.Marshal(req)
	if _, err := p.in.Write(append(in, '\n')); err != nil {
		p.end(true)
		return nil, decision.SayWrap(decision.FleetUnreachable, err, "talk", HelperName)
	}
	lines := bufio.NewScanner(p.out)
	first := make(chan Response, 1)
	go func() {
		var r Response
		if !lines.Scan() || json.Unmarshal(lines.Bytes(), &r) != nil {
			r = Response{Code: decision.FleetUnreachable, Message: decision.Words(decision.FleetUnreachable, "hold-no-answer", HelperName)}
		}
		first <- r
	}()
	var resp Response
	select {
	case resp = <-first:
	case <-ctx.Done():
		p.end(true) // a lease it may have taken expires with its TTL
		return nil, decision.SayWrap(decision.FleetUnreachable, ctx.Err(), "waiting-hold", HelperName)
	}
	if !resp.OK {
		p.end(true)
		return nil, resp.Err()
	}
	s := &helperSession{proc: p, revision: resp.Revision, leaseID: resp.LeaseID,
		lost: make(chan struct{}), done: make(chan Response, 1)}
	go s.watch(lines)
	return s, nil
}

type helperSession struct {
	proc              *started
	revision, leaseID int64
	lost              chan struct{}
	lostOnce          sync.Once
	done              chan Response
}

func (s *helperSession) Revision() int64       { return s.revision }
func (s *helperSession) LeaseID() int64        { return s.leaseID }
func (s *helperSession) Lost() <-chan struct{} { return s.lost }

// Pid is the helper process that holds the lease.
func (s *helperSession) Pid() int { return s.proc.pid }

// watch reads the hold's later lines: lost, then released (or the end).
func (s *helperSession) watch(lines *bufio.Scanner) {
	var last Response
	for lines.Scan() {
		var r Response
		if json.Unmarshal(lines.Bytes(), &r) != nil {
			continue
		}
		if r.Lost {
			s.lostOnce.Do(func() { close(s.lost) })
		}
		last = r
		if r.Released {
			// The answer to release: Release need not wait for the
			// helper to close its etcd connection and exit.
			break
		}
	}
	if !last.Released {
		// The helper ended without releasing: the lease is no longer
		// kept alive, whatever happened to it.
		s.lostOnce.Do(func() { close(s.lost) })
	}
	s.done <- last
}

// Release asks the helper to revoke the lease and waits for it (at most
// until ctx ends; the lease then expires with its TTL).
func (s *helperSession) Release(ctx context.Context) error {
	_, werr := io.WriteString(s.proc.in, "release\n")
	var last Response
	select {
	case last = <-s.done:
		// It answered (or ended): what it still does is close its etcd
		// connection, which nothing waits for.
		s.proc.end(true)
	case <-ctx.Done():
		// Killing it leaves the lease to expire with its TTL.
		s.proc.end(true)
		last = <-s.done
	}
	if last.Released {
		return nil
	}
	if werr != nil {
		return decision.SayWrap(decision.FleetLeaseLost, werr, "fleet-lease")
	}
	if last.Code != "" {
		return last.Err()
	}
	return decision.Say(decision.FleetLeaseLost, "fleet-lease-could")
}

// Check implements Coordinator.
func (h *Helper) Check(ctx context.Context, key string, revision int64, fenceHash string) error {
	req := h.request("check")
	req.Key, req.Revision, req.FenceHash = key, revision, fenceHash
	_, err := h.call(ctx, req)
	return err
}

// List implements Coordinator.
func (h *Helper) List(ctx context.Context, prefix string) ([]Entry, error) {
	req := h.request("list")
	req.Prefix = prefix
	resp, err := h.call(ctx, req)
	return resp.Entries, err
}

// Revoke implements Coordinator.
func (h *Helper) Revoke(ctx context.Context, key string) (Entry, error) {
	req := h.request("revoke")
	req.Key = key
	resp, err := h.call(ctx, req)
	if err != nil || resp.Entry == nil {
		return Entry{}, err
	}
	return *resp.Entry, nil
}

// Close implements Coordinator: a helper started ahead and never used
// is stopped (it has taken nothing).
func (h *Helper) Close() error {
	if p := h.pre; p != nil {
		h.pre = nil
		p.end(true) // it has taken nothing yet
	}
	return nil
}

// Describe names a holder for a person: "client C on host H (pid P)".
func (h Holder) Describe() string {
	return fmt.Sprintf("client %s on host %s (pid %d, since %s)", h.ClientID, h.Host, h.PID, h.Since)
}

// DefaultDialTimeout bounds each etcd call made through the helper: an etcd
// that does not answer in time is FLEET_UNREACHABLE.
const DefaultDialTimeout = 2 * time.Second

// TimeoutEnv sets another bound (a Go duration, e.g. 5s) for a slow network
// or a loaded machine; a value that is not a positive duration is ignored.
const TimeoutEnv = "WT_FLEET_TIMEOUT"

// DialTimeout is the bound of each etcd call: $WT_FLEET_TIMEOUT, else
// DefaultDialTimeout.
func DialTimeout() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(TimeoutEnv)); err == nil && d > 0 {
		return d
	}
	return DefaultDialTimeout
}

// NewHelper finds wt-fleet and returns the Coordinator that runs it
// against endpoints with auth, its diagnostics going to stderr.
func NewHelper(endpoints []string, auth store.EtcdAuth, stderr io.Writer) (*Helper, error) {
	path, err := FindHelper()
	if err != nil {
		return nil, err
	}
	return &Helper{Path: path, Endpoints: endpoints, Auth: auth, DialTimeout: DialTimeout(), Stderr: stderr}, nil
}

// KeySpace is the remote id of the repository's fleet remote, whose URL
// `git remote get-url` gives; INVALID_POLICY when the remote is missing.
func KeySpace(ctx context.Context, g *gitrepo.Repo, pol store.Policy) (string, error) {
	remote := pol.FleetRemoteName()
	out, err := g.Git(ctx, true, "remote", "get-url", "--end-of-options", remote)
	var ge *gitrepo.Error
	switch {
	case err == nil:
	case ctx.Err() != nil:
		// A slow git is not a missing remote.
		return "", decision.SayWrap(decision.GitFailed, ctx.Err(), "git-remote", remote).
			WithHint("see what slows git in %s (a filesystem, a lock); $WT_FLEET_TIMEOUT bounds the wait", shell.Word(g.TopLevel))
	case errors.As(err, &ge) && ge.ExitCode == 2:
		return "", decision.SayWrap(decision.InvalidPolicy, err, "fleet-mode-names", remote).
			WithHint("add it (git remote add %s URL) or name another: wt-admin policy --fleet-remote NAME", shell.Word(remote))
	default:
		return "", decision.SayWrap(decision.GitFailed, err, "git-remote-get", remote)
	}
	raw := strings.TrimSpace(string(out))
	sshCmd := os.Getenv("GIT_SSH_COMMAND")
	if sshCmd == "" {
		if b, err := g.Git(ctx, true, "config", "--get", "core.sshCommand"); err == nil {
			sshCmd = strings.TrimSpace(string(b))
		}
	}
	sp := Spelling{CaseSensitive: pol.FleetCaseSensitive, ResolveHost: SSHResolver(ctx, sshCmd)}
	space := sp.RemoteIDIn(raw, g.TopLevel)
	// A fenced remote on this machine records the key space it checks
	// tokens under: a client that computes another would hold task keys
	// the remote does not know.
	if dir := LocalRemoteDir(raw, g.TopLevel); dir != "" {
		rec, err := g.Git(ctx, true, "config", "--file", filepath.Join(dir, "config"), "--get", "wt.fence.keyspace")
		if err == nil {
			if r := strings.TrimSpace(string(rec)); r != "" && r != space {
				return "", decision.Say(decision.FleetKeySpaceMismatch, "remote-checks", remote, dir, r, space, raw).
					WithHint("name the remote as its fence does: wt-hook install --server --remote-url URL in %s, with the URL clients use", shell.Word(dir))
			}
		}
	}
	return space, nil
}

// DescribeAuth says which credentials a names (files, never their
// contents), "" for none.
func DescribeAuth(a store.EtcdAuth) string {
	var parts []string
	if a.Cert != "" {
		parts = append(parts, "client certificate "+a.Cert+" (key "+a.Key+")")
	}
	if a.CACert != "" {
		parts = append(parts, "CA "+a.CACert)
	}
	if a.User != "" {
		pw := "$" + PasswordEnv
		if a.PasswordFile != "" {
			pw = a.PasswordFile
		}
		parts = append(parts, "user "+a.User+" (password in "+pw+")")
	}
	return strings.Join(parts, "; ")
}

// SSHResolver is a Spelling's ResolveHost that asks ssh which host an ssh
// URL's host connects to, as git's ssh would (`ssh -G HOST`, its hostname
// line): an alias of ~/.ssh/config ("Host work" with "HostName
// git.example.com") names the same remote as the host itself. sshCommand
// is git's (GIT_SSH_COMMAND or core.sshCommand; "" for ssh). An ssh that
// cannot be run, or does not answer in five seconds, leaves the host as
// written.
func SSHResolver(ctx context.Context, sshCommand string) func(string) string {
	if sshCommand == "" {
		sshCommand = "ssh"
	}
	if ctx == nil {
		ctx = context.Background()
	}
	return func(host string) string {
		if strings.HasPrefix(host, "-") {
			return host
		}
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		out, err := exec.CommandContext(c, "sh", "-c", sshCommand+` -G "$1"`, "sh", host).Output()
		if err != nil {
			return host
		}
		for _, line := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(line, "hostname "); ok && strings.TrimSpace(v) != "" {
				return strings.TrimSpace(v)
			}
		}
		return host
	}
}
