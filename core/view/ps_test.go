package view

import (
	"reflect"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// TestPs: every governed worktree has a row, with its lease and the
// processes in it: here the lease's holder (this process), which no other
// relation lists twice; a path names one worktree; a path wt does not
// govern is UNREGISTERED_WORKTREE.
//
// Not parallel: it reads every process, and the holder's descendants are
// the processes this test binary runs (the other tests' git) while it
// reads.
func TestPs(t *testing.T) {
	f := newFixture(t, policy.Change{})
	leased := f.allocate("T-1", store.RoleFeature, "leased")
	idle := f.allocate("T-2", store.RoleFeature, "idle")
	f.git("worktree", "add", "-q", "-b", "manual", f.path("manual"))
	me := self(t)
	l := f.lease(leased, me)

	res, err := Ps(f.ctx, f.r, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Code != decision.PsShown || res.Processes == 0 || len(res.Rows) != 2 {
		t.Fatalf("result: %+v", res)
	}
	got := map[string]PsRow{}
	for _, r := range res.Rows {
		got[r.Path] = r
	}
	lr := got[leased.WorktreePath]
	want := []PsProcess{{PID: me.PID, Command: proc.Command(me.PID), Relation: RelHolder}}
	if lr.TaskKey != "T-1" || lr.Owner != "alice" || lr.Lease == nil || lr.Lease.LeaseID != l.LeaseID || !reflect.DeepEqual(lr.Processes, want) {
		t.Errorf("leased:\n got %+v\nwant processes %+v", lr, want)
	}
	if ir := got[idle.WorktreePath]; ir.TaskKey != "T-2" || ir.Lease != nil || ir.Processes == nil || len(ir.Processes) != 0 {
		t.Errorf("idle: %+v", ir)
	}

	one, err := Ps(f.ctx, f.r, idle.WorktreePath)
	if err != nil || len(one.Rows) != 1 || one.Rows[0].Path != idle.WorktreePath {
		t.Errorf("one worktree: %+v %v", one, err)
	}
	for _, p := range []string{f.dir, f.path("manual"), f.path("nowhere")} {
		_, err := Ps(f.ctx, f.r, p)
		wantCode(t, err, decision.UnregisteredWorktree)
	}
	// The holder gone, its lease lists nobody.
	f.lease(leased, deadHolder)
	one, err = Ps(f.ctx, f.r, leased.WorktreePath)
	if err != nil || len(one.Rows) != 1 || len(one.Rows[0].Processes) != 0 {
		t.Errorf("a dead holder's lease: %+v %v", one, err)
	}
}
