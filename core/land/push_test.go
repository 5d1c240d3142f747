package land

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/decision/decisiontest"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/internal/gittest"
)

// TestLandPush: --push lands on the remote first by the same
// compare-and-swap, publishes each landing's provenance as a note, and
// catches up with a remote another lander moved; a local branch the
// remote lacks commits of, a remote that refuses, and one that cannot be
// reached are LAND_PUSH_REJECTED, nothing moved.
func TestLandPush(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	remote := f.Path("remote.git")
	gittest.Git(t, f.Top, "clone", "-q", "--bare", f.Dir, remote)
	f.Git("remote", "add", "origin", remote)
	remoteMain := func() string { return gittest.Git(t, remote, "rev-parse", "main") }
	for _, k := range []string{"A", "B", "C", "D", "E"} {
		f.task(k, strings.ToLower(k), k)
	}

	// A lands on the remote and here, with its note.
	res := f.land(Options{Push: "origin", Batch: 1}, "A")
	a := res.Tasks[0]
	if a.Code != decision.Landed || remoteMain() != a.Result || res.Tip != a.Result {
		t.Fatalf("A: %+v; remote at %s", a, remoteMain())
	}
	note := gittest.Git(t, remote, "notes", "--ref", NotesRef, "show", a.Result)
	if !strings.Contains(note, `"task":"A"`) || !strings.Contains(note, `"push":"origin"`) {
		t.Errorf("A's note on the remote: %s", note)
	}

	// A clone without wt's store answers why from the notes, once fetched.
	clone := f.Path("clone")
	gittest.Git(t, f.Top, "clone", "-q", remote, clone)
	g := &gitrepo.Repo{TopLevel: clone}
	_, err := Why(f.Ctx, g, "", "main", a.Result, clone)
	decisiontest.WantHint(t, err, decision.WhyUnknown, "fetch origin "+NotesRef)
	gittest.Git(t, clone, "fetch", "-q", "origin", NotesRef+":"+NotesRef)
	w, err := Why(f.Ctx, g, "", "main", a.Result, clone)
	if err != nil || w.From != "notes" || w.Landing == nil || w.Landing.Task != "A" || w.Landing.Result != a.Result {
		t.Errorf("why from the notes: %+v %v", w, err)
	}
	w, err = Why(f.Ctx, g, "", "main", f.Base, clone)
	if err != nil || w.Landing != nil || !strings.Contains(w.Unseen, "no note of") {
		t.Errorf("why of a commit no landing brought, from the notes: %+v %v", w, err)
	}

	// Another machine moves the remote: B lands on what it made.
	if err := os.WriteFile(filepath.Join(clone, "other"), []byte("other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, clone, "add", "other")
	gittest.Git(t, clone, "commit", "-q", "-m", "other machine")
	gittest.Git(t, clone, "push", "-q", "origin", "main")
	other := gittest.Git(t, clone, "rev-parse", "HEAD")
	res = f.land(Options{Push: "origin", Batch: 1}, "B")
	b := res.Tasks[0]
	if b.Code != decision.Landed || b.Onto != other || remoteMain() != b.Result || res.Tip != b.Result {
		t.Fatalf("B: %+v, remote at %s, other machine's %s", b, remoteMain(), other)
	}
	if note := gittest.Git(t, remote, "notes", "--ref", NotesRef, "list"); strings.Count(note, "\n") != 1 {
		t.Errorf("the remote's notes: %q, want A's and B's", note)
	}
	if _, err := os.Stat(filepath.Join(f.Dir, "other")); err != nil {
		t.Errorf("the canonical checkout did not follow main to the remote's commit: %v", err)
	}

	// A local commit the remote lacks: C is refused, nothing moves.
	local := f.onMain("local", "local")
	before := remoteMain()
	res = f.land(Options{Push: "origin", Batch: 1}, "C")
	if c := res.Tasks[0]; c.Code != decision.LandPushRejected || !strings.Contains(c.Message, local[:12]) {
		t.Errorf("C: %+v", c)
	}
	if remoteMain() != before || f.Git("rev-parse", "main") != local {
		t.Errorf("moved: remote %s (was %s), main %s (was %s)", remoteMain(), before, f.Git("rev-parse", "main"), local)
	}
	f.Git("reset", "-q", "--hard", before)

	// A remote that refuses: the intent is concluded push_rejected, main
	// stays; one at a time, the landing stops there.
	hook := filepath.Join(remote, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho no >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	receipts := f.receipts()
	res = f.land(Options{Push: "origin", Batch: 1}, "C", "D")
	if got := codes(res); !slices.Equal(got, []string{"C LAND_PUSH_REJECTED"}) || !strings.Contains(res.Tasks[0].Message, "pre-receive hook declined") {
		t.Errorf("one at a time, refused: %v (%s)", got, res.Tasks[0].Message)
	}
	res = f.land(Options{Push: "origin", Jobs: 1}, "D", "E")
	if got := codes(res); !slices.Equal(got, []string{"D LAND_PUSH_REJECTED", "E LAND_PUSH_REJECTED"}) {
		t.Errorf("batched, refused: %v", got)
	}
	if remoteMain() != before || f.Git("rev-parse", "main") != before {
		t.Errorf("moved: remote %s, main %s, want both at %s", remoteMain(), f.Git("rev-parse", "main"), before)
	}
	if got := f.receipts(); len(got) != len(receipts)+3 || !slices.Contains(got, "push_rejected") {
		t.Errorf("receipts %v, before %v", got, receipts)
	}
	if js := f.openJournals(); len(js) != 0 {
		t.Errorf("open journals %+v", js)
	}

	// A remote that cannot be reached.
	for _, batch := range []int{1, 0} {
		res = f.land(Options{Push: filepath.Join(f.Top, "nowhere"), Batch: batch, Jobs: 1}, "E")
		if e := res.Tasks[0]; e.Code != decision.LandPushRejected || f.Git("rev-parse", "main") != before {
			t.Errorf("batch %d, no remote: %+v", batch, e)
		}
	}
}
