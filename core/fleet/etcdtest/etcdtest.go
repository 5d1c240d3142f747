// Package etcdtest runs a real single-member etcd server for tests: in
// process (Start), or as a separate process of the test binary (Serve),
// which tests stop, freeze (SIGSTOP) and kill. It imports etcd's server and
// is imported by tests only.
package etcdtest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
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

// config is a single member on loopback with fast election timing and no
// log output.
func config(dir string, clientPort, peerPort int) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = "wt-test"
	cfg.Dir = dir
	cfg.TickMs, cfg.ElectionMs = 10, 50
	cu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	pu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	return cfg
}

func start(dir string, clientPort, peerPort int) (*embed.Etcd, error) {
	e, err := embed.StartEtcd(config(dir, clientPort, peerPort))
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(30 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcd did not become ready")
	}
}

// Start runs etcd in this process until the test ends and returns its
// client endpoint.
func Start(t testing.TB) string {
	t.Helper()
	cp, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	pp, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	e, err := start(t.TempDir(), cp, pp)
	if err != nil {
		t.Fatalf("embedded etcd: %v", err)
	}
	t.Cleanup(e.Close)
	return fmt.Sprintf("http://127.0.0.1:%d", cp)
}

// Serve runs etcd with its data in dir on the given ports until SIGTERM
// or SIGINT: the body of a separate server process. It calls ready once
// etcd serves.
func Serve(dir string, clientPort, peerPort int, ready func()) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	e, err := start(dir, clientPort, peerPort)
	if err != nil {
		return err
	}
	ready()
	select {
	case <-sigs:
	case err = <-e.Err():
	}
	e.Close()
	return err
}

// PutKey writes key (value "held") in the etcd at endpoint and returns its
// create revision: a fleet key as a holder would have it, for tests and
// benchmarks of what checks it.
func PutKey(t testing.TB, endpoint, key string) int64 {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, key, "held"); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("read back %s: %v", key, err)
	}
	return resp.Kvs[0].CreateRevision
}
