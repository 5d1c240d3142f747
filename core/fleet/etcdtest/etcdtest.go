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
	"strconv"
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
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	cp, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	pp, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, dir, strconv.Itoa(cp), strconv.Itoa(pp))
	out, err := os.Create(filepath.Join(dir, "output"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); <-exited })
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
			break
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(filepath.Join(dir, "output"))
			t.Fatalf("etcd-server ended before it served:\n%s", b)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("etcd-server did not become ready in a minute")
		}
	}
	return fmt.Sprintf("http://127.0.0.1:%d", cp)
}

// PutKey writes key (value "held") in the etcd at endpoint and returns its
// create revision: a fleet key as a holder would have it, for tests and
// benchmarks of what checks it.
func PutKey(t testing.TB, endpoint, key string) int64 { return PutValue(t, endpoint, key, "held") }

// PutValue is PutKey with the key's value (a fleet.Holder's JSON, say).
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
