// Package etcdtest runs a real single-member etcd server for tests: a
// separate process of the etcd-server program (internal/etcdserver, a
// module of its own so that etcd's server is not among wt's requirements),
// built once and kept in the user's cache directory. Tests stop, freeze
// (SIGSTOP) and kill it like any process. Imported by tests only.
package etcdtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// FreePort returns a TCP port on 127.0.0.1 that nothing listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Binary returns the etcd-server program, building it the first time for
// this version of its sources and of Go (into the user's cache directory,
// renamed into place, so concurrent test processes agree).
func Binary() (string, error) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("etcdtest: cannot locate its own source")
	}
	src := filepath.Join(filepath.Dir(self), "..", "..", "..", "internal", "etcdserver")
	h := sha256.New()
	h.Write([]byte(runtime.Version()))
	for _, f := range []string{"main.go", "go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	bin := filepath.Join(cache, "wt-test", "etcd-server-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.tmp-%d", bin, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build etcd-server: %v\n%s", err, out)
	}
	return bin, os.Rename(tmp, bin)
}

// Start runs an etcd server process until the test ends and returns its
// client endpoint.
func Start(t testing.TB) string {
	t.Helper()
	ports := freePorts(t, 2)
	m := startMember(t, t.TempDir(), ports[0], ports[1])
	m.ready(t)
	return m.Endpoint
}

// Member is one etcd server process of a Cluster.
type Member struct {
	Name, Endpoint string
	cmd            *exec.Cmd
	dir            string
	exited         chan struct{}
}

// Kill ends the member at once (SIGKILL) and waits for it.
func (m *Member) Kill() {
	m.cmd.Process.Kill()
	<-m.exited
}

// Cluster runs an etcd cluster of n members until the test ends and
// returns them once it serves.
func Cluster(t testing.TB, n int) []*Member {
	t.Helper()
	ports := freePorts(t, 2*n)
	var initial []string
	for i := 0; i < n; i++ {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, ports[2*i+1]))
	}
	top := t.TempDir()
	var ms []*Member
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("m%d", i)
		ms = append(ms, startMember(t, filepath.Join(top, name), ports[2*i], ports[2*i+1], name, strings.Join(initial, ",")))
	}
	for _, m := range ms {
		m.ready(t)
	}
	return ms
}

// Leader returns the member that leads the cluster now, asking the live
// ones.
func Leader(t testing.TB, ms []*Member) *Member {
	t.Helper()
	ids := map[uint64]*Member{}
	var leader uint64
	for _, m := range ms {
		select {
		case <-m.exited:
			continue
		default:
		}
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{m.Endpoint}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := c.Status(ctx, m.Endpoint)
		cancel()
		c.Close()
		if err != nil {
			t.Fatalf("status of %s: %v", m.Name, err)
		}
		ids[st.Header.MemberId] = m
		leader = st.Leader
	}
	if m := ids[leader]; m != nil {
		return m
	}
	t.Fatal("no live member leads the cluster")
	return nil
}

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ps []int
	for len(ps) < n {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	return ps
}

// startMember starts an etcd-server process in dir (extra: NAME and
// INITIAL_CLUSTER) that ends with the test.
func startMember(t testing.TB, dir string, clientPort, peerPort int, extra ...string) *Member {
	t.Helper()
	return startMemberEnv(t, dir, clientPort, peerPort, nil, extra...)
}

// startMemberEnv is startMember with more environment for the process.
func startMemberEnv(t testing.TB, dir string, clientPort, peerPort int, env []string, extra ...string) *Member {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m := &Member{Name: "wt-test", Endpoint: fmt.Sprintf("http://127.0.0.1:%d", clientPort), dir: dir, exited: make(chan struct{})}
	if len(extra) > 0 {
		m.Name = extra[0]
	}
	m.cmd = exec.Command(bin, append([]string{dir, strconv.Itoa(clientPort), strconv.Itoa(peerPort)}, extra...)...)
	m.cmd.Env = append(os.Environ(), env...)
	out, err := os.Create(filepath.Join(dir, "output"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	m.cmd.Stdout, m.cmd.Stderr = out, out
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { m.cmd.Wait(); close(m.exited) }()
	t.Cleanup(func() { m.cmd.Process.Signal(syscall.SIGTERM); <-m.exited })
	return m
}

// ready waits until the member serves.
func (m *Member) ready(t testing.TB) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := os.Stat(filepath.Join(m.dir, "ready")); err == nil {
			return
		}
		select {
		case <-m.exited:
			b, _ := os.ReadFile(filepath.Join(m.dir, "output"))
			t.Fatalf("etcd-server %s ended before it served:\n%s", m.Name, b)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd-server %s did not become ready in a minute", m.Name)
		}
	}
}

// PutValue writes key with value (a fleet.Holder's JSON, say) in the etcd
// at endpoint and returns its create revision: a fleet key as a holder
// would have it, for tests and benchmarks of what checks it.
func PutValue(t testing.TB, endpoint, key, value string) int64 {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, key, value); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("read back %s: %v", key, err)
	}
	return resp.Kvs[0].CreateRevision
}
