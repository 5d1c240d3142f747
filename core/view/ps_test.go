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
	"github.com/wt-tool/wt/internal/wttest"
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
	leased := f.Allocate("T-1", store.RoleFeature, "leased")
	idle := f.Allocate("T-2", store.RoleFeature, "idle")
	f.Git("worktree", "add", "-q", "-b", "manual", f.Path("manual"))
	me := wttest.Self(t)
	l := f.Lease(leased, me, nil)
	res, err := Ps(f.Ctx, f.R, "")
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

	one, err := Ps(f.Ctx, f.R, idle.WorktreePath)
	if err != nil || len(one.Rows) != 1 || one.Rows[0].Path != idle.WorktreePath {
		t.Errorf("one worktree: %+v %v", one, err)
	}
	for _, p := range []string{f.Dir, f.Path("manual"), f.Path("nowhere")} {
		_, err := Ps(f.Ctx, f.R, p)
		wttest.WantCode(t, err, decision.UnregisteredWorktree)
	}
	// The holder gone, its lease lists nobody.
	f.Lease(leased, wttest.DeadHolder, nil)
	one, err = Ps(f.Ctx, f.R, leased.WorktreePath)
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
	f.Lease(leased, proc.Holder{ClientID: "sitter", PID: id.PID, BootID: id.BootID, StartTicks: id.StartTicks}, nil)
	one, err = Ps(f.Ctx, f.R, leased.WorktreePath)
	want = []PsProcess{{PID: id.PID, Command: proc.Command(id.PID), Relation: RelHolder}}
	if err != nil || len(one.Rows) != 1 || !reflect.DeepEqual(one.Rows[0].Processes, want) {
		t.Errorf("a holder working in its worktree:\n got %+v %v\nwant %+v", one, err, want)
	}
}
