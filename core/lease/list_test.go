package lease

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/liveness"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// worker starts a process that sleeps until end kills it (and waits it):
// a holder that is live, then exited. The test's end kills it too.
func worker(t *testing.T, client string) (h proc.Holder, end func()) {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := false
	end = func() {
		if !done {
			done = true
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
	t.Cleanup(end)
	id, err := proc.Describe(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return proc.Holder{ClientID: client, PID: id.PID, BootID: id.BootID, StartTicks: id.StartTicks}, end
}

// adoptedBy gives allocation a's worktree a lease held by h (an event
// writer_lease_adopted begins it).
func (g *gov) adoptedBy(a store.Allocation, h proc.Holder) store.Lease {
	g.T.Helper()
	var l store.Lease
	g.Write(func(tx *store.Tx) error {
		cur, err := tx.Allocation(a.AllocationID)
		if err != nil {
			return err
		}
		l, err = GrantAdopted(g.R, tx, cur, h, "test")
		return err
	})
	return l
}

// TestListWithHistory: the current leases with their freshness, and with
// all the ended ones from events.jsonl, each with how it ended: released
// (with the expiry its last renewal set), taken over, abandoned with its
// reason; the options filter and limit them.
func TestListWithHistory(t *testing.T) {
	t.Parallel()
	g := newGov(t)
	w2 := g.Allocate("T-2", "", "w2")
	me := wttest.Self(t)

	// 1. Acquired, renewed, released.
	first := g.mustAcquire(Request{Holder: me, TTL: time.Minute})
	if err := Renew(g.R, &first, time.Hour); err != nil {
		t.Fatal(err)
	}
	renewedTo := *first.Lease.ExpiresAt
	if _, err := Release(g.R, first, realScan, nil); err != nil {
		t.Fatal(err)
	}
	// 2. Adopted by a worker that then exits, and taken over.
	h, end := worker(t, "worker")
	adopted := g.adoptedBy(g.a, h)
	end()
	current := g.mustAcquire(Request{Holder: me})
	if current.Code != decision.WriterLeaseTakenOver {
		t.Fatalf("grant %+v", current)
	}
	// 3. On another worktree, adopted by a worker that exits, abandoned.
	h2, end2 := worker(t, "worker2")
	abandoned := g.adoptedBy(w2, h2)
	end2()
	if _, err := Abandon(g.R, w2.WorktreePath, "it crashed", true, Caller{}, Expect{}); err != nil {
		t.Fatal(err)
	}

	now, err := List(g.R, false)
	if err != nil || len(now) != 1 {
		t.Fatalf("current %+v %v", now, err)
	}
	if e := now[0]; e.LeaseID != current.Lease.LeaseID || e.TaskKey != "T-1" || e.Role != store.RoleFeature ||
		e.Freshness != liveness.FreshActive || e.Generation != 3 || e.Ended != "" || !e.Holder.Same(me) {
		t.Fatalf("current %+v", e)
	}

	all, err := List(g.R, true)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ id, ended, task string }
	want := []row{
		{current.Lease.LeaseID, "", "T-1"},
		{first.Lease.LeaseID, "released", "T-1"},
		{adopted.LeaseID, "taken over by " + current.Lease.LeaseID, "T-1"},
		{abandoned.LeaseID, "abandoned: it crashed", "T-2"},
	}
	if len(all) != len(want) {
		t.Fatalf("all %+v", all)
	}
	for i, w := range want {
		if e := all[i]; e.LeaseID != w.id || e.Ended != w.ended || e.TaskKey != w.task || (w.ended != "") != (e.To != "") {
			t.Errorf("entry %d: %+v, want %+v", i, e, w)
		}
	}
	if all[1].ExpiresAt != renewedTo || all[1].Generation != 1 || all[1].WorktreePath != g.a.WorktreePath {
		t.Errorf("released entry %+v (renewed to %s)", all[1], renewedTo)
	}

	for _, tc := range []struct {
		name string
		opts ListOptions
		ids  []string
	}{
		{"active", ListOptions{Active: true}, []string{current.Lease.LeaseID}},
		{"audit role", ListOptions{All: true, Role: store.RoleAudit}, nil},
		{"feature role", ListOptions{All: true, Role: store.RoleFeature}, []string{current.Lease.LeaseID, first.Lease.LeaseID, adopted.LeaseID, abandoned.LeaseID}},
		{"limit to the current", ListOptions{All: true, Limit: 1}, []string{current.Lease.LeaseID}},
		{"limit: the ended ones that began last", ListOptions{All: true, Limit: 3}, []string{current.Lease.LeaseID, adopted.LeaseID, abandoned.LeaseID}},
		{"a limit above the count", ListOptions{All: true, Limit: 10}, []string{current.Lease.LeaseID, first.Lease.LeaseID, adopted.LeaseID, abandoned.LeaseID}},
	} {
		got, err := ListWith(g.R, tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var ids []string
		for _, e := range got {
			ids = append(ids, e.LeaseID)
		}
		if strings.Join(ids, ",") != strings.Join(tc.ids, ",") {
			t.Errorf("%s: %v, want %v", tc.name, ids, tc.ids)
		}
	}
	_, err = ListWith(g.R, ListOptions{All: true, Active: true})
	wttest.WantCode(t, err, decision.Usage)
}

// TestListReadsEventsAsWritten: a last line cut without its newline (a
// power loss) is skipped; any other line that does not decode is
// INVALID_METADATA, never skipped; no events file is no history.
func TestListReadsEventsAsWritten(t *testing.T) {
	t.Parallel()
	g := newGov(t)
	me := wttest.Self(t)
	gr := g.mustAcquire(Request{Holder: me})
	if _, err := Release(g.R, gr, realScan, nil); err != nil {
		t.Fatal(err)
	}
	var path string
	g.Write(func(tx *store.Tx) error { path = tx.EventsPath(); return nil })
	appendTo := func(s string) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	appendTo(`{"at":"2026-`)
	all, err := List(g.R, true)
	if err != nil || len(all) != 1 || all[0].LeaseID != gr.Lease.LeaseID || all[0].Ended != "released" {
		t.Fatalf("with a torn last line: %+v %v", all, err)
	}
	appendTo("\n")
	_, err = List(g.R, true)
	wttest.WantCode(t, err, decision.InvalidMetadata)

	if ended, err := endedLeases(path+".none", nil); err != nil || ended != nil {
		t.Fatalf("no file: %+v %v", ended, err)
	}
}
