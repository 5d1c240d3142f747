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
	"strings"

	"golang.org/x/term"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/fleet/etcdfleet"
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
	co, err := etcdfleet.New(req.Endpoints, req.DialTimeout)
	if err != nil {
		out.Encode(fleet.Refusal(err))
		return 1
	}
	defer co.Close()
	if req.Op == "connect" {
		// Started ahead of need (fleet.Helper.Prestart): the client is
		// made while the caller does its own work; the request follows,
		// or nothing at all (it was not needed).
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) == 0 && err != nil {
			return 0
		}
		if jerr := json.Unmarshal(line, &req); jerr != nil {
			fmt.Fprintf(stderr, "%s: usage: one JSON request a line on stdin (internal to wt; %v)\n", fleet.HelperName, jerr)
			return 2
		}
	}
	ctx := context.Background()
	var resp fleet.Response
	switch req.Op {
	case "hold":
		return hold(ctx, co, req, in, out, stderr)
	case "check":
		err = co.Check(ctx, req.Key, req.Revision)
	case "list":
		resp.Entries, err = co.List(ctx, req.Prefix)
	case "revoke":
		var e fleet.Entry
		if e, err = co.Revoke(ctx, req.Key); err == nil {
			resp.Entry = &e
		}
	default:
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

func hold(ctx context.Context, co *etcdfleet.Coordinator, req fleet.Request, in *bufio.Reader, out *json.Encoder, stderr io.Writer) int {
	if req.Holder == nil || req.Key == "" || req.TTL <= 0 {
		fmt.Fprintf(stderr, "%s: usage: hold needs key, ttl and holder\n", fleet.HelperName)
		return 2
	}
	s, err := co.Acquire(ctx, req.Key, *req.Holder, req.TTL)
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
			fmt.Fprintf(stderr, "%s: %s: the fleet lease of task %s (revision %d) could not be kept alive: etcd did not answer within its TTL of %s. The command goes on, but this run may no longer push.\n",
				fleet.HelperName, decision.FleetLeaseLost, req.Holder.TaskKey, s.Revision(), req.TTL)
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
