// Package fleetcli is the wt-fleet helper: the one binary that links the
// etcd client, run by wt-exec, wt-hook and wt-admin only when the policy's
// coordinator is etcd (core/fleet explains why).
//
// Its protocol is internal and line-based: one JSON fleet.Request on stdin,
// fleet.Response lines on stdout. A "hold" answers with the outcome of the
// acquisition and then keeps the lease alive: a "release" line on stdin
// revokes it ({"released":true}); stdin closing without one (wt-exec
// killed) ends the helper without revoking, so the lease expires with its
// TTL; a lease that cannot be kept alive is reported at once, on stderr
// and as {"lost":true}.
package fleetcli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/term"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/fleet/etcdfleet"
	"github.com/wt-tool/wt/core/store"
)

// Main runs the helper and returns its exit status: 0 done, 1 refused,
// 2 bad request, 3 a hold ended without release (stdin closed).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
		fmt.Fprintf(stdout, "%s: the fleet-mode helper of wt, run by wt-exec, wt-hook and wt-admin (see man wt-fleet); it is not run by hand\n", fleet.HelperName)
		return 0
	}
	if f, ok := stdin.(*os.File); ok {
		if term.IsTerminal(int(f.Fd())) {
			fmt.Fprintf(stderr, "%s: usage: wt runs this helper with one JSON request a line on stdin; it is not run by hand (see man wt-fleet)\n", fleet.HelperName)
			return 2
		}
	}
	in := bufio.NewReader(stdin)
	line, err := in.ReadBytes('\n')
	var req fleet.Request
	if jerr := json.Unmarshal(line, &req); jerr != nil || len(req.Endpoints) == 0 {
		fmt.Fprintf(stderr, "%s: usage: one JSON request a line on stdin (internal to wt; %v %v)\n", fleet.HelperName, err, jerr)
		return 2
	}
	out := json.NewEncoder(stdout)
	var auth store.EtcdAuth
	if req.Auth != nil {
		auth = *req.Auth
	}
	// The client keeps the endpoints; a second request line (after
	// "connect") is decoded into req again, which would write the same
	// slice under the client's background grant: it gets a copy.
	co, err := etcdfleet.New(slices.Clone(req.Endpoints), auth, req.DialTimeout)
	if err != nil {
		out.Encode(fleet.Refusal(err))
		return 1
	}
	defer co.Close()
	ctx := context.Background()
	var pre *granted
	if req.Op == "connect" {
		// Started ahead of need (fleet.Helper.Prestart): the client is
		// made, and with a TTL a lease granted, while the caller does its
		// own work; the request follows, or nothing at all (not needed).
		if req.TTL > 0 {
			pre = grantAhead(ctx, co, req.TTL)
		}
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) == 0 && err != nil {
			pre.drop(co)
			return 0
		}
		if jerr := json.Unmarshal(line, &req); jerr != nil {
			pre.drop(co)
			fmt.Fprintf(stderr, "%s: usage: one JSON request a line on stdin (internal to wt; %v)\n", fleet.HelperName, jerr)
			return 2
		}
	}
	var resp fleet.Response
	switch req.Op {
	case "hold":
		return hold(ctx, co, req, pre, in, out, stderr)
	case "check":
		err = co.Check(ctx, req.Key, req.Revision, req.FenceHash)
	case "list":
		resp.Entries, err = co.List(ctx, req.Prefix)
	case "revoke":
		var e fleet.Entry
		if e, err = co.Revoke(ctx, req.Key); err == nil {
			resp.Entry = &e
		}
	default:
		pre.drop(co)
		fmt.Fprintf(stderr, "%s: usage: unknown op %q\n", fleet.HelperName, req.Op)
		return 2
	}
	if err != nil {
		out.Encode(fleet.Refusal(err))
		return 1
	}
	resp.OK = true
	out.Encode(resp)
	return 0
}

func hold(ctx context.Context, co *etcdfleet.Coordinator, req fleet.Request, pre *granted, in *bufio.Reader, out *json.Encoder, stderr io.Writer) int {
	if req.Holder == nil || req.Key == "" || req.TTL <= 0 {
		pre.drop(co)
		fmt.Fprintf(stderr, "%s: usage: hold needs key, ttl and holder\n", fleet.HelperName)
		return 2
	}
	var s fleet.Session
	var err error
	if id, ok := pre.take(co, req.TTL); ok {
		s, err = co.AcquireGranted(ctx, req.Key, *req.Holder, id)
	} else {
		s, err = co.Acquire(ctx, req.Key, *req.Holder, req.TTL)
	}
	if err != nil {
		out.Encode(fleet.Refusal(err))
		return 1
	}
	out.Encode(fleet.Response{OK: true, Revision: s.Revision(), LeaseID: s.LeaseID()})
	cmds := make(chan string)
	go func() {
		for {
			line, err := in.ReadString('\n')
			if strings.TrimSpace(line) != "" {
				cmds <- strings.TrimSpace(line)
			}
			if err != nil {
				close(cmds)
				return
			}
		}
	}()
	lost := s.Lost()
	for {
		select {
		case <-lost:
			fmt.Fprintf(stderr, "%s: %s: %s\n", fleet.HelperName, decision.FleetLeaseLost,
				decision.Words(decision.FleetLeaseLost, "not-kept-alive", req.Holder.TaskKey, s.Revision(), req.TTL))
			out.Encode(fleet.Response{Lost: true, Code: decision.FleetLeaseLost, Revision: s.Revision()})
			lost = nil
		case cmd, ok := <-cmds:
			if !ok {
				// wt-exec is gone without releasing: the lease is left to
				// expire with its TTL (its command may still run).
				return 3
			}
			if cmd != "release" {
				continue
			}
			if err := s.Release(ctx); err != nil {
				out.Encode(fleet.Refusal(err))
				return 1
			}
			out.Encode(fleet.Response{OK: true, Released: true, Revision: s.Revision()})
			return 0
		}
	}
}

// granted is a lease granted ahead of a hold request.
type granted struct {
	ttl  time.Duration
	at   time.Time
	done chan struct{}
	id   clientv3.LeaseID
	err  error
}

// grantAhead grants a lease of ttl in the background.
func grantAhead(ctx context.Context, co *etcdfleet.Coordinator, ttl time.Duration) *granted {
	g := &granted{ttl: ttl, at: time.Now(), done: make(chan struct{})}
	go func() {
		g.id, g.err = co.Grant(ctx, ttl)
		close(g.done)
	}()
	return g
}

// take returns the lease granted ahead when it was granted for ttl and is
// young (less than half its TTL ago: a hold that waited longer, behind a
// live writer with wt-exec --wait, gets a fresh one); otherwise it revokes
// it and says no.
func (g *granted) take(co *etcdfleet.Coordinator, ttl time.Duration) (clientv3.LeaseID, bool) {
	if g == nil {
		return 0, false
	}
	<-g.done
	if g.err != nil {
		return 0, false
	}
	if g.ttl != ttl || time.Since(g.at) > ttl/2 {
		co.RevokeGranted(g.id)
		return 0, false
	}
	return g.id, true
}

// drop revokes a lease granted ahead and never used.
func (g *granted) drop(co *etcdfleet.Coordinator) {
	if g == nil {
		return
	}
	<-g.done
	if g.err == nil {
		co.RevokeGranted(g.id)
	}
}
