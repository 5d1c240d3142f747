// Command etcd-server runs a real etcd member for wt's tests and
// benchmarks of fleet mode:
//
//	etcd-server DIR CLIENT_PORT PEER_PORT [NAME INITIAL_CLUSTER]
//
// alone, or as member NAME of the cluster INITIAL_CLUSTER
// ("m1=http://127.0.0.1:P1,m2=…", etcd's --initial-cluster), and
// keeps its data in DIR/data, writes DIR/pid and, once etcd serves,
// DIR/ready, and serves on 127.0.0.1 until SIGTERM or SIGINT; over TLS,
// with client certificates required, when $ETCD_SERVER_TLS names them. It is a
// module of its own, so that etcd's server stays out of wt's requirements
// (go.mod lists only what wt's packages and tests import; the tests build
// this program, see core/fleet/etcdtest).
package main

import (
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

func main() {
	if len(os.Args) != 4 && len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: etcd-server DIR CLIENT_PORT PEER_PORT [NAME INITIAL_CLUSTER]")
		os.Exit(2)
	}
	name, cluster := "wt-test", ""
	if len(os.Args) == 6 {
		name, cluster = os.Args[4], os.Args[5]
	}
	dir := os.Args[1]
	cp, err1 := strconv.Atoi(os.Args[2])
	pp, err2 := strconv.Atoi(os.Args[3])
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "etcd-server: ports must be numbers")
		os.Exit(2)
	}
	if err := serve(dir, cp, pp, name, cluster); err != nil {
		fmt.Fprintln(os.Stderr, "etcd-server:", err)
		os.Exit(1)
	}
}

// serve runs etcd until SIGTERM or SIGINT.
func serve(dir string, clientPort, peerPort int, name, cluster string) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	os.Remove(filepath.Join(dir, "ready")) // a restart in the same DIR

	e, err := embed.StartEtcd(config(filepath.Join(dir, "data"), clientPort, peerPort, name, cluster))
	if err != nil {
		return err
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("etcd did not become ready")
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
		return err
	}
	select {
	case <-sigs:
		return nil
	case err := <-e.Err():
		return err
	}
}

// config is a member on loopback with fast election timing and no log
// output: alone, or of cluster.
func config(dir string, clientPort, peerPort int, name, cluster string) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = dir
	cfg.TickMs, cfg.ElectionMs = 10, 50
	cu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	pu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	if cluster != "" {
		cfg.InitialCluster = cluster
		cfg.InitialClusterToken = "wt-test-cluster"
		// Members that share two loaded cores need some slack before
		// they call an election.
		cfg.TickMs, cfg.ElectionMs = 25, 500
	}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	// $ETCD_SERVER_TLS (CA,CERT,KEY: PEM files) serves clients over TLS
	// and requires their certificates signed by CA (etcd's
	// --client-cert-auth --trusted-ca-file).
	if v := os.Getenv("ETCD_SERVER_TLS"); v != "" {
		f := strings.Split(v, ",")
		if len(f) == 3 {
			cu.Scheme = "https"
			cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
			cfg.ClientTLSInfo = transport.TLSInfo{TrustedCAFile: f[0], CertFile: f[1], KeyFile: f[2], ClientCertAuth: true}
			cfg.ClientAutoTLS = false
		}
	}
	return cfg
}
