package etcdfleet_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/fleet/etcdfleet"
	"github.com/wt-tool/wt/core/fleet/etcdtest"
	"github.com/wt-tool/wt/core/store"
)

// TestTLSAndUsers runs fleet mode against a real etcd that requires TLS
// client certificates and has authentication on, with the role layout
// docs/design.md gives: a client's user may take and renew leases under
// one remote's keys (wt/<key space>/) and nothing else. Without a client
// certificate, without the user's password, or outside its key space, the
// coordinator is refused, and says why.
func TestTLSAndUsers(t *testing.T) {
	ep, files := etcdtest.StartTLS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	prefix := fleet.Prefix("ks")
	pwFile := files.EnableAuth(t, prefix)
	auth := store.EtcdAuth{Cert: files.ClientCert, Key: files.ClientKey, CACert: files.CA, User: "agent", PasswordFile: pwFile}
	co, err := etcdfleet.New([]string{ep}, auth, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	key := fleet.Key("ks", "T-1")
	s, err := co.Acquire(ctx, key, holder("agent-a"), 5*time.Second)
	if err != nil {
		t.Fatalf("the agent's user under its key space: %v", err)
	}
	if err := co.Check(ctx, key, s.Revision(), fleet.FenceHash("secret-of-agent-a")); err != nil {
		t.Fatalf("check: %v", err)
	}
	if _, err := co.Acquire(ctx, fleet.Key("other", "T-1"), holder("agent-a"), 5*time.Second); err == nil || !strings.Contains(err.Error(), "permission") {
		t.Fatalf("another remote's key space: %v, want a permission refusal", err)
	} else if d, _ := decision.As(err); d == nil || !strings.Contains(d.Hint, "role grant-permission") {
		t.Fatalf("the refusal's hint does not name the role grant: %v", err)
	}
	if err := s.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}

	// The certificate without the user: etcd takes its common name as the
	// user, which has no role: refused.
	certOnly, err := etcdfleet.New([]string{ep}, store.EtcdAuth{Cert: files.ClientCert, Key: files.ClientKey, CACert: files.CA}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer certOnly.Close()
	if _, err := certOnly.Acquire(ctx, fleet.Key("ks", "T-2"), holder("agent-b"), 5*time.Second); err == nil {
		t.Fatal("a client certificate without the user took a fleet lease")
	}
	// A wrong password.
	bad := filepath.Join(t.TempDir(), "bad")
	os.WriteFile(bad, []byte("guessed\n"), 0o600)
	if c, err := etcdfleet.New([]string{ep}, store.EtcdAuth{Cert: files.ClientCert, Key: files.ClientKey, CACert: files.CA, User: "agent", PasswordFile: bad}, 5*time.Second); err == nil {
		defer c.Close()
		if _, err := c.Acquire(ctx, fleet.Key("ks", "T-3"), holder("agent-c"), 5*time.Second); err == nil {
			t.Fatal("a wrong password took a fleet lease")
		}
	}
	// No password anywhere: refused before dialing, with the fix.
	t.Setenv(fleet.PasswordEnv, "")
	os.Unsetenv(fleet.PasswordEnv)
	if _, err := etcdfleet.New([]string{ep}, store.EtcdAuth{CACert: files.CA, User: "agent"}, 5*time.Second); decision.CodeOf(err) != decision.FleetUnreachable || !strings.Contains(err.Error(), "no password") {
		t.Fatalf("no password: %v", err)
	}
	// No client certificate: the TLS handshake fails, fail closed.
	noCert, err := etcdfleet.New([]string{ep}, store.EtcdAuth{CACert: files.CA, User: "agent", PasswordFile: pwFile}, 2*time.Second)
	if err == nil {
		defer noCert.Close()
		_, err = noCert.Acquire(ctx, fleet.Key("ks", "T-4"), holder("agent-d"), 5*time.Second)
	}
	if decision.CodeOf(err) != decision.FleetUnreachable {
		t.Fatalf("without a client certificate: %v, want FLEET_UNREACHABLE", err)
	}
	// An unreadable certificate names the file.
	if _, err := etcdfleet.New([]string{ep}, store.EtcdAuth{Cert: "/nonexistent/c.pem", Key: "/nonexistent/k.pem", CACert: files.CA}, time.Second); err == nil || !strings.Contains(err.Error(), "/nonexistent/c.pem") {
		t.Fatalf("an unreadable certificate: %v", err)
	}
}
