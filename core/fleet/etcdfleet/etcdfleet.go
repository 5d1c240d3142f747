// Package etcdfleet is fleet mode's Coordinator on etcd (docs/design.md, "Fleet mode"). It is
// linked into the wt-fleet helper and the tests only: the etcd client makes
// every binary that links it start about 5 ms slower.
package etcdfleet

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/store"
)

// DefaultDialTimeout bounds every etcd call: etcd that does not answer
// within it is FLEET_UNREACHABLE.
const DefaultDialTimeout = 2 * time.Second

// Coordinator talks to one etcd cluster.
type Coordinator struct {
	c       *clientv3.Client
	timeout time.Duration
}

var _ fleet.Coordinator = (*Coordinator)(nil)

// New connects to the cluster at endpoints, proving itself with auth
// (store.EtcdAuth: a TLS client certificate, the CA that signs etcd's
// certificate, an etcd user and its password). The connection is made
// lazily: an unreachable cluster shows at the first call, within timeout.
// A credential that cannot be read is FLEET_UNREACHABLE naming the file.
func New(endpoints []string, auth store.EtcdAuth, timeout time.Duration) (*Coordinator, error) {
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	cfg := clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          timeout,
		DialKeepAliveTime:    timeout,
		DialKeepAliveTimeout: timeout,
		Logger:               zap.NewNop(),
	}
	tlsCfg, err := tlsConfig(endpoints, auth)
	if err != nil {
		return nil, err
	}
	cfg.TLS = tlsCfg
	if auth.User != "" {
		cfg.Username = auth.User
		if cfg.Password, err = password(auth); err != nil {
			return nil, err
		}
	}
	c, err := clientv3.New(cfg)
	if err != nil {
		return nil, unreachable(err, endpoints)
	}
	return &Coordinator{c: c, timeout: timeout}, nil
}

// tlsConfig is the TLS of https endpoints: etcd's certificate verified
// against auth's CA (else the system's roots), and auth's client
// certificate shown. nil for http endpoints without TLS credentials.
func tlsConfig(endpoints []string, auth store.EtcdAuth) (*tls.Config, error) {
	https := false
	for _, e := range endpoints {
		https = https || strings.HasPrefix(e, "https://")
	}
	if !https && auth.Cert == "" && auth.CACert == "" {
		return nil, nil
	}
	if !https {
		return nil, decision.Say(decision.FleetUnreachable, "tls-client", strings.Join(endpoints, ",")).
			WithHint("name etcd's https:// endpoints: wt-admin policy --etcd-endpoints https://HOST:2379")
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if auth.CACert != "" {
		pem, err := os.ReadFile(auth.CACert)
		if err != nil {
			return nil, credential(err, auth.CACert, "the CA certificate")
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, credential(errors.New("no PEM certificate in it"), auth.CACert, "the CA certificate")
		}
	}
	if auth.Cert != "" {
		pair, err := tls.LoadX509KeyPair(auth.Cert, auth.Key)
		if err != nil {
			return nil, credential(err, auth.Cert+" and "+auth.Key, "the client certificate and key")
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// password is the etcd user's password: its file's first line, else
// $WT_ETCD_PASSWORD.
func password(auth store.EtcdAuth) (string, error) {
	if auth.PasswordFile == "" {
		if p, ok := os.LookupEnv(fleet.PasswordEnv); ok {
			return p, nil
		}
		return "", decision.Say(decision.FleetUnreachable, "etcd-user", auth.User, fleet.PasswordEnv).
			WithHint("name the file that holds it: wt-admin policy --etcd-password-file /ABS/FILE (or set %s)", fleet.PasswordEnv)
	}
	b, err := os.ReadFile(auth.PasswordFile)
	if err != nil {
		return "", credential(err, auth.PasswordFile, "the etcd password file")
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSuffix(line, "\r"), nil
}

// credential is FLEET_UNREACHABLE for a credential file that cannot be
// used: fleet mode fails closed.
func credential(err error, path, what string) error {
	return decision.SayWrap(decision.FleetUnreachable, err, "read", what, path).
		WithHint("make %s readable by this user (each machine holds its own credentials), or change it: wt-admin policy shows the files", path)
}

func unreachable(err error, endpoints []string) error {
	at := strings.Join(endpoints, ",")
	switch {
	case errors.Is(err, rpctypes.ErrPermissionDenied):
		return decision.SayWrap(decision.FleetUnreachable, err, "etcd-refuses", at).
			WithHint("give the etcd user a role with readwrite on this remote's keys: etcdctl role grant-permission ROLE --prefix=true readwrite wt/KEY_SPACE/ (wt-admin fleet status names the key space; docs/design.md has the role layout)")
	case errors.Is(err, rpctypes.ErrAuthFailed), errors.Is(err, rpctypes.ErrInvalidAuthToken), errors.Is(err, rpctypes.ErrUserEmpty):
		return decision.SayWrap(decision.FleetUnreachable, err, "etcd-does", at).
			WithHint("check the user and its password file: wt-admin policy shows them (--etcd-user, --etcd-password-file)")
	}
	return decision.SayWrap(decision.FleetUnreachable, err, "etcd", at).
		WithHint("check that etcd runs and is reachable (wt-admin policy shows the endpoints); fleet mode fails closed")
}

func (co *Coordinator) unreachable(err error) error { return unreachable(err, co.c.Endpoints()) }

func (co *Coordinator) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, co.timeout)
}

// Close implements fleet.Coordinator.
func (co *Coordinator) Close() error { return co.c.Close() }

// Acquire implements fleet.Coordinator: grant a lease of ttl, then in one
// transaction create the key only if absent, attached to it. Held
// elsewhere, the lease just granted is revoked again.
func (co *Coordinator) Acquire(ctx context.Context, key string, h fleet.Holder, ttl time.Duration) (fleet.Session, error) {
	id, err := co.Grant(ctx, ttl)
	if err != nil {
		return nil, err
	}
	return co.AcquireGranted(ctx, key, h, id)
}

// Grant grants a lease of ttl (whole seconds, rounded up), for
// AcquireGranted: the wt-fleet helper grants one while wt-exec still does
// its own work, which takes an etcd round trip off the path of a run.
func (co *Coordinator) Grant(ctx context.Context, ttl time.Duration) (clientv3.LeaseID, error) {
	cctx, cancel := co.ctx(ctx)
	defer cancel()
	g, err := co.c.Grant(cctx, int64(math.Ceil(ttl.Seconds())))
	if err != nil {
		return 0, co.unreachable(err)
	}
	return g.ID, nil
}

// RevokeGranted ends a lease Grant made and AcquireGranted did not use; best
// effort, an unrevoked one expires with its TTL.
func (co *Coordinator) RevokeGranted(id clientv3.LeaseID) { co.revokeQuietly(id) }

// AcquireGranted is Acquire with a lease granted already: the key is
// created only if absent, attached to it, and the lease kept alive; held
// elsewhere (or failing), the lease is revoked.
func (co *Coordinator) AcquireGranted(ctx context.Context, key string, h fleet.Holder, id clientv3.LeaseID) (fleet.Session, error) {
	value, err := json.Marshal(h)
	if err != nil {
		co.revokeQuietly(id)
		return nil, err
	}
	cctx, cancel := co.ctx(ctx)
	defer cancel()
	resp, err := co.c.Txn(cctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value), clientv3.WithLease(id))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		co.revokeQuietly(id)
		return nil, co.unreachable(err)
	}
	if !resp.Succeeded {
		co.revokeQuietly(id)
		var other fleet.Entry
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			other = entryOf(string(kvs[0].Key), kvs[0].Value, kvs[0].CreateRevision, kvs[0].Lease)
		}
		return nil, decision.Say(decision.FleetLeaseHeld, "task-held-fleet", h.TaskKey, other.Holder.Describe(), other.Revision).
			WithHint("wait for it to end; see every task's holder with wt-admin fleet status").
			WithFact("fleet_holder", other.Holder).WithFact("fleet_revision", other.Revision)
	}
	// etcd's own session keeps the lease alive (its context is not the
	// call's, which ends when Acquire returns).
	es, err := concurrency.NewSession(co.c, concurrency.WithLease(id), concurrency.WithContext(context.Background()))
	if err != nil {
		co.revokeQuietly(id)
		return nil, co.unreachable(err)
	}
	s := &session{co: co, es: es, revision: resp.Header.Revision, lost: make(chan struct{})}
	go s.watch()
	return s, nil
}

func (co *Coordinator) revokeQuietly(id clientv3.LeaseID) {
	ctx, cancel := co.ctx(context.Background())
	defer cancel()
	co.c.Revoke(ctx, id) // Best effort: unrevoked, it expires with its TTL.
}

type session struct {
	co       *Coordinator
	es       *concurrency.Session
	revision int64
	lost     chan struct{}
	mu       sync.Mutex
	released bool
}

func (s *session) Revision() int64       { return s.revision }
func (s *session) LeaseID() int64        { return int64(s.es.Lease()) }
func (s *session) Lost() <-chan struct{} { return s.lost }

// watch waits for the session's end: its keep-alive stops when the lease's
// TTL passed without an answer (or etcd says it is gone), and the lease is
// lost unless we released it.
func (s *session) watch() {
	<-s.es.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.released {
		close(s.lost)
	}
}

// Release implements fleet.Session: stop the keep-alive and revoke, each
// try within the coordinator's bound, trying again until ctx ends: a
// cluster that is electing a new leader (its old one died) answers again
// within a few election timeouts, and an unrevoked lease keeps every other
// machine waiting for its TTL.
func (s *session) Release(ctx context.Context) error {
	s.mu.Lock()
	s.released = true
	s.mu.Unlock()
	s.es.Orphan()
	for {
		cctx, cancel := s.co.ctx(ctx)
		_, err := s.co.c.Revoke(cctx, s.es.Lease())
		cancel()
		if err == nil || isLeaseGone(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return s.co.unreachable(err)
		case <-time.After(revokeRetry):
		}
	}
}

// revokeRetry is the pause between two tries of a release's revoke.
const revokeRetry = 50 * time.Millisecond

// isLeaseGone reports etcd's typed "lease not found" (expired, or revoked
// by someone else), which the client returns as an rpctypes error.
func isLeaseGone(err error) bool {
	return errors.Is(err, rpctypes.ErrLeaseNotFound) || errors.Is(err, rpctypes.ErrGRPCLeaseNotFound)
}

// Check implements fleet.Coordinator.
func (co *Coordinator) Check(ctx context.Context, key string, revision int64, fenceHash string) error {
	cctx, cancel := co.ctx(ctx)
	defer cancel()
	resp, err := co.c.Get(cctx, key)
	if err != nil {
		return co.unreachable(err)
	}
	if len(resp.Kvs) == 0 {
		return decision.Say(decision.FleetFenced, "fleet-lease", revision).
			WithHint("end this run and take the task again with wt-exec, which takes a new fleet lease")
	}
	kv := resp.Kvs[0]
	if kv.CreateRevision != revision {
		e := entryOf(key, kv.Value, kv.CreateRevision, kv.Lease)
		return decision.Say(decision.FleetFenced, "fleet-lease-this", revision, e.Holder.Describe(), kv.CreateRevision).
			WithHint("do not push: the task moved on; see wt-admin fleet status").WithFact("fleet_holder", e.Holder)
	}
	if fenceHash != "" {
		e := entryOf(key, kv.Value, kv.CreateRevision, kv.Lease)
		if subtle.ConstantTimeCompare([]byte(e.Holder.FenceHash), []byte(fenceHash)) != 1 {
			return decision.Say(decision.FleetFenced, "fencing-token", revision).
				WithHint("push from the task's writer, whose wt-exec gives every push its token")
		}
	}
	return nil
}

// List implements fleet.Coordinator.
func (co *Coordinator) List(ctx context.Context, prefix string) ([]fleet.Entry, error) {
	cctx, cancel := co.ctx(ctx)
	defer cancel()
	resp, err := co.c.Get(cctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, co.unreachable(err)
	}
	out := make([]fleet.Entry, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		e := entryOf(string(kv.Key), kv.Value, kv.CreateRevision, kv.Lease)
		e.TTL = -1
		if kv.Lease != 0 {
			if t, err := co.c.TimeToLive(cctx, clientv3.LeaseID(kv.Lease)); err == nil {
				e.TTL = t.TTL
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// Revoke implements fleet.Coordinator.
func (co *Coordinator) Revoke(ctx context.Context, key string) (fleet.Entry, error) {
	cctx, cancel := co.ctx(ctx)
	defer cancel()
	resp, err := co.c.Get(cctx, key)
	if err != nil {
		return fleet.Entry{}, co.unreachable(err)
	}
	if len(resp.Kvs) == 0 {
		return fleet.Entry{}, decision.Say(decision.FleetNoLease, "no-fleet", key).
			WithHint("see every task's holder with wt-admin fleet status")
	}
	kv := resp.Kvs[0]
	e := entryOf(key, kv.Value, kv.CreateRevision, kv.Lease)
	if kv.Lease != 0 {
		_, err = co.c.Revoke(cctx, clientv3.LeaseID(kv.Lease))
		if isLeaseGone(err) {
			err = nil
		}
	} else {
		// A key without a lease was not written by wt: delete it only if
		// it is still the one read.
		_, err = co.c.Txn(cctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", kv.CreateRevision)).
			Then(clientv3.OpDelete(key)).Commit()
	}
	if err != nil {
		return e, co.unreachable(err)
	}
	return e, nil
}

// entryOf decodes a task key; a value that is not a holder is shown as
// it is in the client id, so that a person sees what is there.
func entryOf(key string, value []byte, rev, lease int64) fleet.Entry {
	e := fleet.Entry{Key: key, Revision: rev, LeaseID: lease, TTL: -1}
	if i := strings.LastIndex(key, "/tasks/"); i >= 0 {
		e.TaskKey = key[i+len("/tasks/"):]
	}
	if err := json.Unmarshal(value, &e.Holder); err != nil {
		e.Holder.ClientID = string(value)
	}
	return e
}
