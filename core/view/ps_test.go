package view

import (
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// TestPs: every governed worktree has a row, with its lease and the
// processes in it: the lease's holder (this process; then a child working
// in the worktree, which its cwd there does not list twice); a path names one worktree; a path wt does not
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
	// A holder that also works in the worktree (its cwd there) is listed
	// once, as the holder. It is left to run outside this process's tree
	// (its shell exits), where ps looks at what processes use.
	out, err := exec.Command("sh", "-c", `cd "$1" && sleep 600 >/dev/null 2>&1 & echo $!`, "sh", leased.WorktreePath).Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Kill(pid, unix.SIGKILL)
	id, err := proc.Describe(pid)
	if err != nil {
		t.Fatal(err)
	}
	f.lease(leased, proc.Holder{ClientID: "sitter", PID: id.PID, BootID: id.BootID, StartTicks: id.StartTicks})
	one, err = Ps(f.ctx, f.r, leased.WorktreePath)
	want = []PsProcess{{PID: id.PID, Command: proc.Command(id.PID), Relation: RelHolder}}
	if err != nil || len(one.Rows) != 1 || !reflect.DeepEqual(one.Rows[0].Processes, want) {
		t.Errorf("a holder working in its worktree:\n got %+v %v\nwant %+v", one, err, want)
	}
}
