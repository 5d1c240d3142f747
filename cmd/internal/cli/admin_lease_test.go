package cli

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wt-tool/wt/cmd/internal/textout"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// TestLeaseInspectSaysWhoHoldsIt: a worktree nobody holds is refused
// (NO_WRITER_LEASE); a held one is shown with its holder, its freshness
// and the safe next action; a lease id that is not the worktree's is a
// stale prompt.
func TestLeaseInspectSaysWhoHoldsIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	free := f.Allocate("T-1", "", "w1")
	held := f.Allocate("T-2", "", "w2")
	l := f.Lease(held, wttest.Self(t), nil)

	f.json(textout.ExitRefused, decision.NoWriterLease, "lease", "inspect", free.WorktreePath)
	f.json(textout.ExitUsage, decision.Usage, "lease", "inspect")
	f.json(textout.ExitUsage, decision.Usage, "lease", "inspect", held.WorktreePath, "--session-id", "s")
	f.json(textout.ExitRefused, decision.InvalidHolder, "lease", "inspect", held.WorktreePath, "--client-id", "not a client")

	env := f.json(textout.ExitOK, decision.LeaseInspected, "lease", "inspect", held.WorktreePath)
	d := env.Decision
	if str(d, "path") != held.WorktreePath || str(d, "task_key") != "T-2" || str(obj(d, "lease"), "lease_id") != l.LeaseID ||
		str(d, "freshness") == "" || str(d, "safe_next_action") == "" {
		t.Errorf("inspection %v", d)
	}
	if obj(d, "proof")["holder_live"] != true {
		t.Errorf("the test process, the holder, is not live: %v", obj(d, "proof"))
	}
	r := f.human(textout.ExitOK, "lease", "inspect", held.WorktreePath)
	if !strings.HasPrefix(r.stdout, "wt-admin: LEASE_INSPECTED: "+held.WorktreePath+" (task T-2)") ||
		!hasPrefixedLine(r.stdout, "lease", l.LeaseID+",") || !strings.Contains(r.stdout, "holder running") {
		t.Errorf("stdout: %s", r.stdout)
	}
}

// TestLeaseReleaseNeedsTheExactIdAndADeadHolder: release names the lease
// by its id; a live holder's lease is kept, and a dead holder's goes,
// into the ended leases lease list --all shows.
func TestLeaseReleaseNeedsTheExactIdAndADeadHolder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	live := f.Allocate("T-1", "", "w1")
	dead := f.Allocate("T-2", "", "w2")
	ll := f.Lease(live, wttest.Self(t), nil)
	dl := f.Lease(dead, wttest.DeadHolder, nil)

	env := f.json(textout.ExitOK, decision.LeasesListed, "lease", "list")
	if n := len(list(env.Decision, "leases")); n != 2 {
		t.Errorf("%d leases listed, want 2", n)
	}
	before := f.records()
	f.json(textout.ExitUsage, decision.Usage, "lease", "release", dead.WorktreePath)
	f.json(textout.ExitUsage, decision.Usage, "lease", "release", dead.WorktreePath, "--lease-id", "nope")
	f.json(textout.ExitUsage, decision.Usage, "lease", "release", dead.WorktreePath, "--lease-id", dl.LeaseID, "--expect-generation", "one")
	f.json(textout.ExitRefused, decision.WriterLeaseMismatch, "lease", "release", dead.WorktreePath, "--lease-id", ll.LeaseID)
	f.json(textout.ExitRefused, decision.WriterLeaseHeld, "lease", "release", live.WorktreePath, "--lease-id", ll.LeaseID)
	if f.records() != before {
		t.Fatal("a refused release changed the records")
	}

	env = f.json(textout.ExitOK, decision.WriterLeaseReleased, "lease", "release", dead.WorktreePath, "--lease-id", dl.LeaseID, "--expect-generation", "1")
	if str(obj(env.Decision, "lease"), "lease_id") != dl.LeaseID {
		t.Errorf("released %v", env.Decision)
	}
	if _, ok := f.lease(dead.WorktreePath); ok {
		t.Error("the released lease is still in the store")
	}
	if _, ok := f.lease(live.WorktreePath); !ok {
		t.Error("the live lease is gone")
	}

	// The current leases: the live one only (the released one was
	// written here, not granted, so the event log has no life of it).
	env = f.json(textout.ExitOK, decision.LeasesListed, "lease", "list", "--all")
	if ls := list(env.Decision, "leases"); len(ls) != 1 || str(ls[0].(map[string]any), "lease_id") != ll.LeaseID {
		t.Errorf("leases %v", ls)
	}
	r := f.human(textout.ExitOK, "lease", "list", "--role", store.RoleFeature, "--limit", "5")
	if !strings.HasPrefix(r.stdout, "TASK") || !strings.Contains(r.stdout, "T-1") {
		t.Errorf("stdout: %s", r.stdout)
	}
	f.json(textout.ExitUsage, decision.InvalidRole, "lease", "list", "--role", "boss")
}

// TestLeaseExpireAbandonAndAdoptEndADeadHoldersLease: expire removes a
// lease past its expiry whose holder is dead; abandon needs a reason and,
// for a lease not the caller's, --operator; adopt hands a dead holder's
// lease to a live process (here the test's), never to pid 1.
func TestLeaseExpireAbandonAndAdoptEndADeadHoldersLease(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	exp := f.Allocate("T-1", "", "w1")
	ab := f.Allocate("T-2", "", "w2")
	ad := f.Allocate("T-3", "", "w3")
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)
	f.Lease(exp, wttest.DeadHolder, func(l *store.Lease) { l.ExpiresAt = &past })
	f.Lease(ab, wttest.DeadHolder, nil)
	adl := f.Lease(ad, wttest.DeadHolder, nil)

	env := f.json(textout.ExitOK, decision.LeasesExpired, "lease", "expire")
	if n := len(list(env.Decision, "expired")); n != 1 {
		t.Errorf("%d expired, want 1: %v", n, env.Decision)
	}
	if _, ok := f.lease(exp.WorktreePath); ok {
		t.Error("the expired lease is still there")
	}
	if _, ok := f.lease(ab.WorktreePath); !ok {
		t.Error("expire removed a lease with no expiry")
	}

	before := f.records()
	f.json(textout.ExitUsage, decision.Usage, "lease", "abandon", ab.WorktreePath)
	f.json(textout.ExitRefused, decision.OperatorRequired, "lease", "abandon", ab.WorktreePath, "--reason", "gone")
	f.json(textout.ExitUsage, decision.Usage, "lease", "adopt", ad.WorktreePath, "--client-id", "c", "--holder", "self")
	f.json(textout.ExitRefused, decision.InvalidHolder, "lease", "adopt", ad.WorktreePath, "--client-id", "c", "--holder", "1")
	f.json(textout.ExitUsage, decision.Usage, "lease", "adopt", ad.WorktreePath)
	if f.records() != before {
		t.Fatal("a refusal changed the records")
	}

	r := f.human(textout.ExitOK, "lease", "abandon", ab.WorktreePath, "--reason", "its machine rebooted", "--operator")
	if !strings.HasPrefix(r.stdout, "wt-admin: WRITER_LEASE_ABANDONED: abandoned lease ") || !strings.Contains(r.stdout, "evidence: holder exited") {
		t.Errorf("stdout: %s", r.stdout)
	}
	if _, ok := f.lease(ab.WorktreePath); ok {
		t.Error("the abandoned lease is still there")
	}

	pid := strconv.Itoa(os.Getpid())
	env = f.json(textout.ExitOK, decision.WriterLeaseAdopted, "lease", "adopt", ad.WorktreePath, "--client-id", "heir", "--holder", pid, "--reason", "take over")
	now, ok := f.lease(ad.WorktreePath)
	if !ok || now.Holder.PID != os.Getpid() || now.Holder.ClientID != "heir" || now.LeaseID == adl.LeaseID || now.Provenance == nil {
		t.Errorf("after adopt: %+v (%v)", now, env.Decision)
	}
}

// TestLeaseHandoffAndTransfer: a handoff of a worktree nobody holds needs
// --operator; transfer moves the lease to a live descendant of its holder
// only.
func TestLeaseHandoffAndTransfer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	free := f.Allocate("T-1", "", "w1")
	held := f.Allocate("T-2", "", "w2")
	l := f.Lease(held, wttest.Self(t), nil)

	f.json(textout.ExitUsage, decision.Usage, "lease", "handoff", free.WorktreePath)
	f.json(textout.ExitRefused, decision.NoWriterLease, "lease", "handoff", free.WorktreePath, "--to-client", "next")
	r := f.human(textout.ExitOK, "lease", "handoff", free.WorktreePath, "--to-client", "next", "--operator", "--ttl", "1h")
	if !strings.HasPrefix(r.stdout, "wt-admin: HANDOFF_RESERVED: the next grant of "+free.WorktreePath+" is reserved for client next") ||
		!strings.Contains(r.stdout, "next: wt-exec -C "+free.WorktreePath+" --client-id next -- COMMAND") {
		t.Errorf("stdout: %s", r.stdout)
	}
	// inspect shows the reservation.
	env := f.json(textout.ExitOK, decision.LeaseInspected, "lease", "inspect", free.WorktreePath)
	if h := obj(env.Decision, "handoff"); str(h, "to_client") != "next" || h["operator"] != true {
		t.Errorf("handoff %v", env.Decision)
	}

	f.json(textout.ExitUsage, decision.Usage, "lease", "transfer", held.WorktreePath)
	f.json(textout.ExitRefused, decision.NoWriterLease, "lease", "transfer", free.WorktreePath, "--holder", "1")
	f.json(textout.ExitRefused, decision.InvalidHolder, "lease", "transfer", held.WorktreePath, "--holder", "1")
	if now, _ := f.lease(held.WorktreePath); now.Holder != l.Holder {
		t.Fatalf("a refused transfer moved the lease to %+v", now.Holder)
	}

	// A child of the test process, the holder, becomes the holder.
	child := exec.Command("sleep", "600")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	env = f.json(textout.ExitOK, decision.WriterLeaseTransferred, "lease", "transfer", held.WorktreePath, "--holder", strconv.Itoa(child.Process.Pid), "--reason", "outlive me")
	if now, _ := f.lease(held.WorktreePath); now.Holder.PID != child.Process.Pid || now.LeaseID != l.LeaseID {
		t.Errorf("after transfer: %+v (%v)", now, env.Decision)
	}
}
