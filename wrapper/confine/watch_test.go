package confine

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
)

// TestWatch: a run's branch is published as it moves, not only when the
// run ends: once the run has lasted a moment, and at each move after.
func TestWatch(t *testing.T) {
	t.Parallel()
	r := newRepo(t, "wt/T-1")
	v := standIn(t, r, true)
	upper := v.Upper()
	one := commitIn(t, upper, "one", r.base)
	hgit(t, upper, "update-ref", "refs/heads/wt/T-1", one) // a loose ref: its directory is watched
	p := NewPublisher(v, "T-1", "wt/T-1", r.base, "main")
	moves := make(chan Move, 4)
	p.Published = func(m Move) { moves <- m }
	p.Notify = func(s string) { t.Errorf("notice: %s", s) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Watch(ctx)
	}()
	if m := <-moves; !reflect.DeepEqual(m, Move{Ref: "refs/heads/wt/T-1", Old: r.base, New: one}) {
		t.Errorf("first move: %+v", m)
	}
	two := commitIn(t, upper, "two", r.base)
	hgit(t, upper, "update-ref", "refs/heads/wt/T-1", two)
	if m := <-moves; !reflect.DeepEqual(m, Move{Ref: "refs/heads/wt/T-1", Old: one, New: two, Rewrite: true}) {
		t.Errorf("second move: %+v", m)
	}
	cancel()
	<-done
	if got := hgit(t, r.c.TopLevel, "rev-parse", "refs/heads/wt/T-1"); got != two {
		t.Errorf("the branch is at %s, want %s", got, two)
	}
}

// TestPublishEdges: a branch the run made (no tip to swap from) is
// created; a branch someone else already moved to the run's tip is taken
// as published; a tip that is symbolic or unchanged is nothing to publish.
func TestPublishEdges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRepo(t, "wt/T-1")
	v := standIn(t, r, true)
	upper := v.Upper()
	var moves []Move
	p := NewPublisher(v, "T-9", "wt/T-9", "", "")
	p.Published = func(m Move) { moves = append(moves, m) }
	if err := p.Publish(ctx); err != nil || moves != nil {
		t.Fatalf("an unborn branch: %v %v", moves, err)
	}
	tip := commitIn(t, upper, "new", r.base)
	hgit(t, upper, "update-ref", "refs/heads/wt/T-9", tip)
	if err := p.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []Move{{Ref: "refs/heads/wt/T-9", Old: "", New: tip}}; !reflect.DeepEqual(moves, want) {
		t.Errorf("moves %+v, want %+v", moves, want)
	}
	if err := p.Publish(ctx); err != nil || len(moves) != 1 {
		t.Errorf("an unchanged tip published again: %v %v", moves, err)
	}
	// Someone else moves the real branch to the run's next tip first.
	next := commitIn(t, upper, "next", tip)
	hgit(t, upper, "update-ref", "refs/heads/wt/T-9", next)
	hgit(t, upper, "push", "-q", r.c.CommonDir, next+":refs/heads/wt/T-9")
	if err := p.Publish(ctx); err != nil || len(moves) != 1 {
		t.Errorf("a tip published by someone else: %v %v", moves, err)
	}
	if p.published != next || p.kept {
		t.Errorf("published %s kept %v", p.published, p.kept)
	}
	hgit(t, upper, "symbolic-ref", "refs/heads/wt/T-9", "refs/heads/main")
	if err := p.Publish(ctx); err != nil || len(moves) != 1 {
		t.Errorf("a symbolic ref published: %v %v", moves, err)
	}
}

// TestSeedReftable: in a reftable repository the view's upper layer gets
// the whole table stack, opaque, and a copy of it as the run starts; a
// run that wrote no table moved no ref.
func TestSeedReftable(t *testing.T) {
	t.Parallel()
	common, dir := t.TempDir(), t.TempDir()
	skipNoUserXattr(t, dir)
	stack := filepath.Join(common, "reftable")
	mkdirs(t, stack)
	os.WriteFile(filepath.Join(stack, "0x01.ref"), []byte("A"), 0o444)
	os.WriteFile(filepath.Join(stack, "tables.list"), []byte("0x01.ref\n"), 0o644)
	v := &View{Common: common, Dir: dir, Branch: "wt/T-1", userNS: true, fd: -1}
	if err := v.seed(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(v.Upper(), "reftable"), filepath.Join(dir, "start", "reftable")} {
		if readFile(t, filepath.Join(d, "tables.list")) != "0x01.ref\n" || readFile(t, filepath.Join(d, "0x01.ref")) != "A" {
			t.Errorf("the stack in %s is not whole", d)
		}
	}
	buf := make([]byte, 4)
	if n, err := unix.Getxattr(filepath.Join(v.Upper(), "reftable"), "user.overlay.opaque", buf); err != nil || string(buf[:n]) != "y" {
		t.Errorf("the stack's copy is not opaque: %v", err)
	}
	f, err := os.Open(v.Upper())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v.fd = int(f.Fd())
	if got, err := NewPublisher(v, "T-1", "wt/T-1", "", "").Unpublished(context.Background()); err != nil || got != nil {
		t.Errorf("an unchanged stack: %q %v", got, err)
	}
}

// TestCanMountNS: a view as root is made where the process has
// CAP_SYS_ADMIN in its effective set, as capget(2) reports it.
func TestCanMountNS(t *testing.T) {
	t.Parallel()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		t.Skip("capget:", err)
	}
	want := data[unix.CAP_SYS_ADMIN/32].Effective&(1<<(unix.CAP_SYS_ADMIN%32)) != 0
	if got := canMountNS(); got != want {
		t.Errorf("canMountNS() = %v, capget says %v", got, want)
	}
}

// TestPlanFailures: what the planner cannot make refuses the run
// (CONFINEMENT_UNAVAILABLE), and names what.
func TestPlanFailures(t *testing.T) {
	r := newRepo(t, "wt/T-1")
	c := r.c
	t.Run("a profile's directory", func(t *testing.T) {
		home := filepath.Join(t.TempDir(), "home")
		os.WriteFile(home, nil, 0o644) // HOME a file: nothing can be made in it
		for _, ns := range []bool{false, true} {
			_, err := planAgent(claudeProfile(t), home, c.TopLevel, "/tmp/x", ns, false)
			if d, ok := decision.As(err); !ok || d.Code != decision.ConfinementUnavailable || !strings.Contains(d.Message, "for the claude profile") {
				t.Errorf("ns %v: %v", ns, err)
			}
		}
	})
	t.Run("a ref directory", func(t *testing.T) {
		pretend(t, false, false)
		os.WriteFile(filepath.Join(c.CommonDir, "refs", "remotes"), nil, 0o644)
		defer os.Remove(filepath.Join(c.CommonDir, "refs", "remotes"))
		_, err := New(Input{Checkout: c, Branch: "wt/T-1", TempDir: t.TempDir(), ABI: 6})
		if d, ok := decision.As(err); !ok || d.Code != decision.ConfinementUnavailable || !strings.Contains(d.Message, "make the ref directory") {
			t.Errorf("New: %v", err)
		}
	})
	t.Run("the view's directory", func(t *testing.T) {
		pretend(t, true, false)
		t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "none"))
		_, err := New(Input{Checkout: c, Branch: "wt/T-1", TempDir: t.TempDir(), ABI: 6})
		if d, ok := decision.As(err); !ok || d.Code != decision.ConfinementUnavailable || !strings.Contains(d.Message, "make the run's private view") {
			t.Errorf("New: %v", err)
		}
	})
}

// TestWatchEndsNoPublicationHalfWay: the watch ending while it publishes
// (wt-exec's endView cancels it once the command is done) lets the
// publication it began finish: the branch moves, and no git is killed
// half way through the move (a killed update-ref leaves the branch's lock
// in the repository, and the last publication then fails on it).
func TestWatchEndsNoPublicationHalfWay(t *testing.T) {
	t.Parallel()
	r := newRepo(t, "wt/T-1")
	v := standIn(t, r, true)
	upper := v.Upper()
	one := commitIn(t, upper, "one", r.base)
	hgit(t, upper, "update-ref", "refs/heads/wt/T-1", one)
	p := NewPublisher(v, "T-1", "wt/T-1", r.base, "main")
	ctx, cancel := context.WithCancel(context.Background())
	// The watch ends just as the move begins.
	p.Ledger = func(old, new string) { cancel() }
	var notices []string
	p.Notify = func(s string) { notices = append(notices, s) }
	p.Watch(ctx)
	if got := hgit(t, r.c.TopLevel, "rev-parse", "refs/heads/wt/T-1"); got != one {
		t.Errorf("the branch is at %s, want %s (notices %q)", got, one, notices)
	}
	if _, err := os.Lstat(filepath.Join(r.c.CommonDir, "refs/heads/wt/T-1.lock")); !os.IsNotExist(err) {
		t.Errorf("the branch's lock is left in the repository: %v", err)
	}
}
