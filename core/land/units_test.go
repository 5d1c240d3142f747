package land

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// TestExecRefusal: wt-exec's --json refusal is relayed with its code,
// message and hint; a grant, or output that is not its JSON, is none.
func TestExecRefusal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		out, code, hint string
	}{
		{`{"ok":false,"error":{"code":"CONFINEMENT_UNAVAILABLE","message":"no Landlock","hint":"a newer kernel"}}`, decision.ConfinementUnavailable, "a newer kernel"},
		{`{"ok":false,"error":{"code":"WRITER_LEASE_HELD","message":"held"}}`, decision.WriterLeaseHeld, ""},
		{`{"ok":true,"lease_id":"x"}`, "", ""},
		{`{"ok":false}`, "", ""},
		{`{"ok":false,"error":{"message":"no code"}}`, "", ""},
		{``, "", ""},
		{`not json`, "", ""},
	} {
		d := execRefusal([]byte(c.out))
		if c.code == "" {
			if d != nil {
				t.Errorf("execRefusal(%s) = %v, want none", c.out, d)
			}
			continue
		}
		if d == nil || d.Code != c.code || d.Hint != c.hint || d.Message == "" {
			t.Errorf("execRefusal(%s) = %+v, want %s with hint %q", c.out, d, c.code, c.hint)
		}
	}
}

// TestTestEnv: the test gets the lander's environment without wt's
// variables that carry authority or name a run, in order.
func TestTestEnv(t *testing.T) {
	t.Parallel()
	env := []string{"PATH=/bin", store.PublicationTokenEnv + "=secret", "HOME=/h", store.BrokerEnv + "=/sock", "WT_LEASE_ID=l",
		"WT_ALLOCATION_ID=a", "WT_HOLDER_PID=1", "WT_CLIENT_ID=c", "WT_SESSION_ID=s", "WT_RUN_ID=r", "WT_OTHER=kept", "NOEQUALS"}
	got := testEnv(env)
	if want := []string{"PATH=/bin", "HOME=/h", "WT_OTHER=kept", "NOEQUALS"}; !slices.Equal(got, want) {
		t.Errorf("testEnv = %q, want %q", got, want)
	}
	if env[1] != store.PublicationTokenEnv+"=secret" {
		t.Errorf("testEnv changed its argument: %q", env)
	}
}

// TestTail: the last lines of a test's output, of its last 16 KiB, none
// when it cannot be read.
func TestTail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var lines []string
	for i := 1; i <= 50; i++ {
		lines = append(lines, fmt.Sprint("line ", i))
	}
	if got := tail(write("long", strings.Join(lines, "\n")+"\n"), 3); got != "line 48\nline 49\nline 50" {
		t.Errorf("tail of 50 lines: %q", got)
	}
	if got := tail(write("short", "one\ntwo"), TailMax); got != "one\ntwo" {
		t.Errorf("tail of 2 lines: %q", got)
	}
	big := strings.Repeat("x", 20<<10) + "\nlast\n"
	if got := tail(write("big", big), TailMax); len(got) > 16<<10 || !strings.HasSuffix(got, "\nlast") {
		t.Errorf("tail of a big file: %d bytes, ends %q", len(got), got[max(0, len(got)-10):])
	}
	if got := tail(filepath.Join(dir, "none"), TailMax); got != "" {
		t.Errorf("tail of no file: %q", got)
	}
}

// TestHandBackHint: a conflict is rebased in a run of the task's
// worktree; a failed test is read, and fixed; both mark the task ready
// again, and the hint has no semicolon (land joins several with one).
func TestHandBackHint(t *testing.T) {
	t.Parallel()
	conflict := HandBackHint("/r", "main", "/w t", "A", "alice", store.LandingConflict, "refs/wt/land/A/1", "")
	failed := HandBackHint("/r", "main", "/w", "A", "alice", store.LandingTestFailed, "refs/wt/land/A/2", "/logs/2.log")
	for _, c := range []struct {
		hint string
		want []string
	}{
		{conflict, []string{"wt-exec -C '/w t' -- git rebase main", "git rebase --continue", "wt-admin --repo /r ready A --owner alice"}},
		{failed, []string{"cat /logs/2.log", "git -C /r log refs/wt/land/A/2", "wt-admin --repo /r ready A --owner alice"}},
	} {
		for _, w := range c.want {
			if !strings.Contains(c.hint, w) {
				t.Errorf("hint %q lacks %q", c.hint, w)
			}
		}
		if strings.Contains(c.hint, ";") {
			t.Errorf("hint %q has a semicolon", c.hint)
		}
	}
}

// TestLeaseRefusals: the refusals of the publication lease carry their
// codes; a pause ends INTERRUPTED with its context; a dead holder's
// proof says why it is dead.
func TestLeaseRefusals(t *testing.T) {
	t.Parallel()
	mine := store.PublicationLease{LeaseID: "l-1"}
	if d := lost(&mine); d.Code != decision.PublicationLeaseRequired || !strings.Contains(d.Message, "l-1") {
		t.Errorf("lost: %+v", d)
	}
	if d := fleetLost("main", "/r"); d.Code != decision.FleetLeaseLost || !strings.Contains(d.Hint, "/r fleet status") {
		t.Errorf("fleetLost: %+v", d)
	}
	h := held(store.PublicationLease{Branch: "main", Task: "A", Holder: proc.Holder{PID: 7}}, "/r")
	if h.Code != decision.PublicationLeaseHeld || !strings.Contains(h.Message, "landing task A") {
		t.Errorf("held: %+v", h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d := pause(ctx, time.Hour, "waiting for X"); d == nil || d.Code != decision.Interrupted {
		t.Errorf("pause of an ended context: %v", d)
	}
	if d := pause(context.Background(), time.Millisecond, "x"); d != nil {
		t.Errorf("pause: %v", d)
	}
	if d := asDecision(errors.New("disk")); d.Code != decision.Internal {
		t.Errorf("asDecision of a plain error: %+v", d)
	}
	if d := asDecision(fmt.Errorf("wrapped: %w", h)); d != h {
		t.Errorf("asDecision of a decision: %+v", d)
	}

	self := wttest.Self(t)
	if got := deathProof(wttest.DeadHolder); !strings.Contains(got, "its boot") {
		t.Errorf("deathProof of another boot's holder: %s", got)
	}
	other := self
	other.StartTicks++
	if got := deathProof(other); !strings.Contains(got, "another process") {
		t.Errorf("deathProof of a reused pid: %s", got)
	}
	gone := self
	gone.PID = 1 << 22 // no pid reaches the kernel's limit, 1<<22
	if got := deathProof(gone); !strings.Contains(got, "no process") {
		t.Errorf("deathProof of no process: %s", got)
	}
}

// TestSlotTask: the integration worktrees' task keys.
func TestSlotTask(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: IntegrationTask, 1: IntegrationTask + "-2", 4: IntegrationTask + "-5"} {
		if got := slotTask(n); got != want {
			t.Errorf("slotTask(%d) = %s, want %s", n, got, want)
		}
	}
	if got := attemptRef("A", 3); got != "refs/wt/land/A/3" {
		t.Errorf("attemptRef = %s", got)
	}
}

// TestLinkLog: a failed candidate's log becomes the task's attempt log,
// its directory made; a log that is not there is INTERNAL_ERROR.
func TestLinkLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	from := filepath.Join(dir, "candidate.log")
	if err := os.WriteFile(from, []byte("failed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(dir, "A", "1.log")
	if err := linkLog(from, to); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(to); err != nil || string(b) != "failed\n" {
		t.Errorf("the attempt's log: %q %v", b, err)
	}
	err := linkLog(filepath.Join(dir, "none.log"), filepath.Join(dir, "A", "2.log"))
	wttest.WantCode(t, err, decision.Internal)
}
