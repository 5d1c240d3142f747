package etcdtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TLSFiles are the PEM files of a TLS etcd made by StartTLS: the CA that
// signs the server's and the clients' certificates, and a client
// certificate (common name "wt-client") with its key.
type TLSFiles struct {
	Endpoint                  string
	CA, ClientCert, ClientKey string
	// Dir holds them; MakeClient writes more clients' files there.
	Dir string
	ca  *x509.Certificate
	key *ecdsa.PrivateKey
}

// StartTLS runs an etcd server that serves clients only over TLS and only
// those with a certificate its CA signed (etcd's --client-cert-auth),
// until the test ends. It returns its https endpoint and the files.
func StartTLS(t testing.TB) (string, TLSFiles) {
	t.Helper()
	dir := t.TempDir()
	f := TLSFiles{Dir: dir}
	var err error
	if f.key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "wt-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &f.key.PublicKey, f.key)
	if err != nil {
		t.Fatal(err)
	}
	if f.ca, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	f.CA = filepath.Join(dir, "ca.pem")
	writePEM(t, f.CA, "CERTIFICATE", der)
	serverCert, serverKey := f.issue(t, "server", true)
	f.ClientCert, f.ClientKey = f.MakeClient(t, "wt-client")

	ports := freePorts(t, 2)
	m := startMemberEnv(t, filepath.Join(dir, "member"), ports[0], ports[1],
		[]string{"ETCD_SERVER_TLS=" + strings.Join([]string{f.CA, serverCert, serverKey}, ",")})
	m.ready(t)
	f.Endpoint = fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	return f.Endpoint, f
}

// EnableAuth turns etcd's authentication on as an operator would (etcdctl
// role add, user add, grant-role, auth enable): a root user, and a user
// "agent" whose role may read and write the keys under prefix and nothing
// else. It returns the file that holds agent's password.
func (f TLSFiles) EnableAuth(t testing.TB, prefix string) (passwordFile string) {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(f.ca)
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{f.Endpoint}, DialTimeout: 10 * time.Second,
		TLS: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, step := range []func() error{
		func() error { _, err := c.RoleAdd(ctx, "root"); return err },
		func() error { _, err := c.UserAdd(ctx, "root", "root-secret"); return err },
		func() error { _, err := c.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := c.RoleAdd(ctx, "wt-agents"); return err },
		func() error {
			_, err := c.RoleGrantPermission(ctx, "wt-agents", prefix, clientv3.GetPrefixRangeEnd(prefix), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := c.UserAdd(ctx, "agent", "agent-secret"); return err },
		func() error { _, err := c.UserGrantRole(ctx, "agent", "wt-agents"); return err },
		func() error { _, err := c.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatalf("etcd auth setup: %v", err)
		}
	}
	passwordFile = filepath.Join(f.Dir, "agent-password")
	if err := os.WriteFile(passwordFile, []byte("agent-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return passwordFile
}

// MakeClient issues a client certificate for common name cn and returns
// its certificate and key files.
func (f TLSFiles) MakeClient(t testing.TB, cn string) (cert, key string) {
	t.Helper()
	return f.issue(t, cn, false)
}

func (f TLSFiles) issue(t testing.TB, cn string, server bool) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		tpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, f.ca, &k.PublicKey, f.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(f.Dir, cn+".pem"), filepath.Join(f.Dir, cn+"-key.pem")
	writePEM(t, cert, "CERTIFICATE", der)
	writePEM(t, key, "EC PRIVATE KEY", kb)
	return cert, key
}

func writePEM(t testing.TB, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
