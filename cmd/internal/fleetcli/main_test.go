package fleetcli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/fleet/etcdtest"
	"github.com/wt-tool/wt/core/store"
)

// holderOf is the holder record of task in the tests' key space.
func holderOf(task string) *fleet.Holder {
	return &fleet.Holder{Host: "h", MachineID: "m", BootID: "b", PID: 42, StartTicks: 7, ClientID: "c", LeaseID: "l", TaskKey: task, Since: "2026-01-01T00:00:00Z"}
}

// line is one request as wt writes it to the helper.
func line(t *testing.T, req fleet.Request) string {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// helper runs the helper in this process on stdin and returns its exit
// status, the responses it wrote and its stderr.
func helper(t *testing.T, stdin string) (int, []fleet.Response, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(nil, strings.NewReader(stdin), &out, &errb)
	return code, responses(t, out.String()), errb.String()
}

// responses decodes the helper's stdout, one Response a line.
func responses(t *testing.T, out string) []fleet.Response {
	t.Helper()
	var rs []fleet.Response
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		var r fleet.Response
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("response %q: %v", l, err)
		}
		rs = append(rs, r)
	}
	return rs
}

// one fails the test unless rs is one response, and returns it.
func one(t *testing.T, rs []fleet.Response) fleet.Response {
	t.Helper()
	if len(rs) != 1 {
		t.Fatalf("responses %+v, want one", rs)
	}
	return rs[0]
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// holding is a hold the helper runs in the background: wt-exec's side of
// its stdin and stdout.
type holding struct {
	in     *io.PipeWriter
	out    *bufio.Scanner
	stderr *syncBuffer
	done   chan int
}

// startHold runs the helper on the request lines given (more may be sent
// with send) until it returns.
func startHold(t *testing.T, lines ...string) *holding {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &holding{in: inW, out: bufio.NewScanner(outR), stderr: &syncBuffer{}, done: make(chan int, 1)}
	go func() {
		code := Main(nil, inR, outW, h.stderr)
		outW.Close()
		h.done <- code
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	for _, l := range lines {
		h.send(t, l)
	}
	return h
}

func (h *holding) send(t *testing.T, l string) {
	t.Helper()
	if _, err := io.WriteString(h.in, l); err != nil {
		t.Fatalf("send %q: %v", l, err)
	}
}

// next is the helper's next response.
func (h *holding) next(t *testing.T) fleet.Response {
	t.Helper()
	if !h.out.Scan() {
		t.Fatalf("the helper wrote no more (%v); stderr:\n%s", h.out.Err(), h.stderr.String())
	}
	var r fleet.Response
	if err := json.Unmarshal(h.out.Bytes(), &r); err != nil {
		t.Fatalf("response %q: %v", h.out.Text(), err)
	}
	return r
}

// end closes the helper's stdin when close is set, and returns its exit
// status once it ended, with nothing more written.
func (h *holding) end(t *testing.T, close bool) int {
	t.Helper()
	if close {
		h.in.Close()
	}
	if h.out.Scan() {
		t.Errorf("the helper wrote more: %s", h.out.Text())
	}
	return <-h.done
}

// TestMainRefusesWhatIsNotARequest: --help is the one argument; anything
// but one JSON request naming endpoints on stdin, or a person at a
// terminal, is a usage error (2) and nothing is written on stdout. No etcd
// is asked.
func TestMainRefusesWhatIsNotARequest(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := Main([]string{"--help"}, strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), "wt-fleet: the fleet-mode helper of wt") {
		t.Errorf("--help: exit %d, stdout %q", code, out.String())
	}
	nowhere := "http://127.0.0.1:1"
	for _, c := range []struct {
		name, stdin, said string
	}{
		{"nothing", "", "usage: one JSON request a line on stdin"},
		{"not JSON", "hold please\n", "usage: one JSON request a line on stdin"},
		{"no endpoints", line(t, fleet.Request{Op: "list"}), "usage: one JSON request a line on stdin"},
		{"unknown op", line(t, fleet.Request{Op: "steal", Endpoints: []string{nowhere}}), `usage: unknown op "steal"`},
		{"hold without holder", line(t, fleet.Request{Op: "hold", Endpoints: []string{nowhere}, Key: "k", TTL: time.Minute}), "usage: hold needs key, ttl and holder"},
		{"hold without ttl", line(t, fleet.Request{Op: "hold", Endpoints: []string{nowhere}, Key: "k", Holder: holderOf("T-1")}), "usage: hold needs key, ttl and holder"},
		{"connect then not JSON", line(t, fleet.Request{Op: "connect", Endpoints: []string{nowhere}}) + "{\n", "usage: one JSON request a line on stdin"},
		{"connect then unknown op", line(t, fleet.Request{Op: "connect", Endpoints: []string{nowhere}}) + line(t, fleet.Request{Op: "steal"}), `usage: unknown op "steal"`},
	} {
		code, rs, stderr := helper(t, c.stdin)
		if code != 2 || len(rs) != 0 || !strings.Contains(stderr, "wt-fleet: "+c.said) {
			t.Errorf("%s: exit %d, responses %+v, stderr %q; want 2 saying %q", c.name, code, rs, stderr, c.said)
		}
	}

	// A person at a terminal is told it is not run by hand.
	screen, tty, err := pty.Open()
	if err != nil {
		t.Skip("no pty here:", err)
	}
	defer screen.Close()
	defer tty.Close()
	out.Reset()
	errb.Reset()
	if code := Main(nil, tty, &out, &errb); code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), "it is not run by hand") {
		t.Errorf("at a terminal: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// TestMainConnectWithNothingToDo: a helper started ahead of need whose
// request never comes ends with 0 and writes nothing.
func TestMainConnectWithNothingToDo(t *testing.T) {
	t.Parallel()
	code, rs, stderr := helper(t, line(t, fleet.Request{Op: "connect", Endpoints: []string{"http://127.0.0.1:1"}}))
	if code != 0 || len(rs) != 0 || stderr != "" {
		t.Errorf("exit %d, responses %+v, stderr %q", code, rs, stderr)
	}
}

// TestMainRefusesCredentialsItCannotUse: fleet mode fails closed: TLS
// credentials for an http endpoint, or a password file that cannot be
// read, are a FLEET_UNREACHABLE refusal (exit 1) on stdout.
func TestMainRefusesCredentialsItCannotUse(t *testing.T) {
	t.Parallel()
	missing := t.TempDir() + "/missing"
	for _, c := range []struct {
		name string
		auth store.EtcdAuth
		said string
	}{
		{"tls over http", store.EtcdAuth{CACert: missing}, "http://127.0.0.1:1"},
		{"password file", store.EtcdAuth{User: "wt", PasswordFile: missing}, missing},
	} {
		code, rs, _ := helper(t, line(t, fleet.Request{Op: "list", Endpoints: []string{"http://127.0.0.1:1"}, Auth: &c.auth}))
		r := one(t, rs)
		if code != 1 || r.OK || r.Code != decision.FleetUnreachable || !strings.Contains(r.Message, c.said) || r.Hint == "" {
			t.Errorf("%s: exit %d, response %+v", c.name, code, r)
		}
	}
}

// TestMainUnreachableEtcd: an etcd that does not answer within the dial
// timeout is FLEET_UNREACHABLE, naming the endpoint.
func TestMainUnreachableEtcd(t *testing.T) {
	t.Parallel()
	port, err := etcdtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	at := "http://127.0.0.1:" + strconv.Itoa(port)
	code, rs, _ := helper(t, line(t, fleet.Request{Op: "check", Endpoints: []string{at}, DialTimeout: 200 * time.Millisecond, Key: fleet.Key("r", "T-1"), Revision: 1}))
	if r := one(t, rs); code != 1 || r.Code != decision.FleetUnreachable || !strings.Contains(r.Message, at) {
		t.Errorf("exit %d, response %+v", code, r)
	}
}
