package confine

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/wttest"
)

// standIn is a stand-in for a confined run's view of r's common dir: its
// upper layer a bare copy of the repository (what the run saw, and then
// wrote), read through a descriptor as wt-exec reads a mounted view.
func standIn(t *testing.T, r repo, open bool) *View {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "view")
	mkdirs(t, dir)
	upper := filepath.Join(dir, "upper")
	hgit(t, r.top, "clone", "-q", "--bare", "--no-local", filepath.Join(r.top, "repo"), upper)
	v := &View{Common: r.c.CommonDir, GitDir: r.c.GitDir, Branch: "wt/T-1", Dir: dir, fd: -1}
	if open {
		f, err := os.Open(upper)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		v.fd = int(f.Fd())
	}
	return v
}

// TestRecorder: a view's record names its layers, task, branch and the
// tip last published; Recorded keeps it up to date and Remove removes it
// with the layers.
func TestRecorder(t *testing.T) {
	t.Parallel()
	r := newRepo(t, "wt/T-1")
	root := t.TempDir()
	v := standIn(t, r, false)
	if err := Recorder(root, "w1", "T-1", "wt/T-1", r.base, r.c.CommonDir)(v.Dir); err != nil {
		t.Fatal(err)
	}
	got, ok, err := store.ReadViewRecord(root, "w1")
	want := store.ViewRecord{Dir: v.Dir, Task: "T-1", Branch: "wt/T-1", Published: r.base}
	if err != nil || !ok || got.Runner == nil || got.Runner.PID != os.Getpid() {
		t.Fatalf("record: %+v %v %v, want this process as its runner", got, ok, err)
	}
	if got.Runner = nil; got != want {
		t.Fatalf("record: %+v, want %+v", got, want)
	}
	v.Recorded(root, "w1", "T-1")
	if err := v.record("1234"); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := store.ReadViewRecord(root, "w1"); got.Published != "1234" || got.Dir != v.Dir {
		t.Errorf("after a publication: %+v", got)
	}
	if err := v.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := store.ReadViewRecord(root, "w1"); ok || exists(v.Dir) {
		t.Errorf("Remove left the record (%v) or the layers (%v)", ok, exists(v.Dir))
	}
}

// TestRecover: what a killed run's view holds is published under the
// next run's lease: its branch by compare-and-swap from the tip last
// published (or kept aside when the branch moved meanwhile), its objects
// copied in, its layers and record removed.
func TestRecover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("nothing recorded", func(t *testing.T) {
		t.Parallel()
		r := newRepo(t, "wt/T-1")
		if err := Recover(ctx, r.c.CommonDir, t.TempDir(), "w1", func(s string) { t.Errorf("notice %q", s) }, nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("layers gone", func(t *testing.T) {
		t.Parallel()
		r := newRepo(t, "wt/T-1")
		root := t.TempDir()
		Recorder(root, "w1", "T-1", "wt/T-1", r.base, r.c.CommonDir)(filepath.Join(root, "gone"))
		if err := Recover(ctx, r.c.CommonDir, root, "w1", func(s string) { t.Errorf("notice %q", s) }, nil); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := store.ReadViewRecord(root, "w1"); ok {
			t.Error("the record of a view that is gone stays")
		}
	})
	for _, moved := range []bool{false, true} {
		name := map[bool]string{false: "published", true: "kept: the branch moved meanwhile"}[moved]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t, "wt/T-1")
			root := t.TempDir()
			v := standIn(t, r, false)
			upper := v.Upper()
			tip := commitIn(t, upper, "the run's", r.base)
			hgit(t, upper, "update-ref", "refs/heads/wt/T-1", tip)
			loose := commitIn(t, upper, "only in the view", "")
			Recorder(root, "w1", "T-1", "wt/T-1", r.base, r.c.CommonDir)(v.Dir)
			if moved {
				other := commitIn(t, r.c.CommonDir, "someone else's", r.base)
				hgit(t, r.c.TopLevel, "update-ref", "refs/heads/wt/T-1", other)
			}
			var notes []string
			var ledger [][2]string
			err := Recover(ctx, r.c.CommonDir, root, "w1", func(s string) { notes = append(notes, s) }, func(o, n string) { ledger = append(ledger, [2]string{o, n}) })
			if err != nil {
				t.Fatal(err)
			}
			branch := hgit(t, r.c.TopLevel, "rev-parse", "refs/heads/wt/T-1")
			if !moved {
				if branch != tip || !reflect.DeepEqual(ledger, [][2]string{{r.base, tip}}) {
					t.Errorf("branch %s (want %s), ledger %v", branch, tip, ledger)
				}
			} else {
				kept := hgit(t, r.c.TopLevel, "rev-parse", KeptRef("T-1"))
				if branch == tip || kept != tip || len(notes) != 2 || !strings.Contains(notes[0], "PUBLISH_CONFLICT") {
					t.Errorf("branch %s kept %s (want %s), notices %q", branch, kept, tip, notes)
				}
			}
			hgit(t, r.c.TopLevel, "cat-file", "-e", loose+"^{commit}") // every object of the view is kept
			if last := notes[len(notes)-1]; !strings.Contains(last, "the view of an earlier run of task T-1 that ended without wt-exec (killed) was recovered") {
				t.Errorf("notices: %q", notes)
			}
			if _, ok, _ := store.ReadViewRecord(root, "w1"); ok || exists(v.Dir) {
				t.Errorf("the record (%v) or the layers (%v) stay", ok, exists(v.Dir))
			}
		})
	}
	t.Run("a sandbox's, its runner gone: removed, nothing published", func(t *testing.T) {
		t.Parallel()
		r := newRepo(t, "wt/T-1")
		root := t.TempDir()
		v := standIn(t, r, false)
		upper := v.Upper()
		hgit(t, upper, "update-ref", "refs/heads/wt/T-1", commitIn(t, upper, "the sandbox's", r.base))
		loose := commitIn(t, upper, "only in the sandbox", "")
		gone := wttest.DeadHolder.Identity()
		if err := store.WriteViewRecord(root, "w1", store.ViewRecord{Dir: v.Dir, Task: "T-1", Discard: true, Runner: &gone}); err != nil {
			t.Fatal(err)
		}
		var notes []string
		if err := Recover(ctx, r.c.CommonDir, root, "w1", func(s string) { notes = append(notes, s) }, nil); err != nil {
			t.Fatal(err)
		}
		if branch := hgit(t, r.c.TopLevel, "rev-parse", "refs/heads/wt/T-1"); branch != r.base {
			t.Errorf("a sandbox's branch was published: %s", branch)
		}
		if out, err := exec.Command("git", "-C", r.c.TopLevel, "cat-file", "-e", loose).CombinedOutput(); err == nil {
			t.Errorf("a sandbox's object was copied in: %s", out)
		}
		if _, ok, _ := store.ReadViewRecord(root, "w1"); ok || exists(v.Dir) || len(notes) != 1 {
			t.Errorf("the record (%v) or the layers (%v) stay; notices %q", ok, exists(v.Dir), notes)
		}
	})
	t.Run("its runner still runs: left alone", func(t *testing.T) {
		t.Parallel()
		r := newRepo(t, "wt/T-1")
		root := t.TempDir()
		v := standIn(t, r, false)
		parent, err := proc.Describe(os.Getppid())
		if err != nil {
			t.Fatal(err)
		}
		if err := store.WriteViewRecord(root, "w1", store.ViewRecord{Dir: v.Dir, Task: "T-1", Branch: "wt/T-1", Published: r.base, Runner: &parent}); err != nil {
			t.Fatal(err)
		}
		err = Recover(ctx, r.c.CommonDir, root, "w1", func(s string) { t.Errorf("notice %q", s) }, nil)
		if err == nil || !strings.Contains(err.Error(), "still in use by wt-exec pid") {
			t.Fatalf("Recover of a view in use: %v", err)
		}
		if _, ok, _ := store.ReadViewRecord(root, "w1"); !ok || !exists(v.Dir) {
			t.Errorf("a view in use lost its record (%v) or layers (%v)", ok, exists(v.Dir))
		}
	})
	t.Run("unreadable view", func(t *testing.T) {
		t.Parallel()
		r := newRepo(t, "wt/T-1")
		root := t.TempDir()
		v := standIn(t, r, false)
		mkdirs(t, filepath.Join(v.Upper(), "refs", "heads", "wt"))
		if err := os.WriteFile(filepath.Join(v.Upper(), "refs", "heads", "wt", "T-1"), []byte("not a commit\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		Recorder(root, "w1", "T-1", "wt/T-1", r.base, r.c.CommonDir)(v.Dir)
		err := Recover(ctx, r.c.CommonDir, root, "w1", func(string) {}, nil)
		if err == nil || !strings.Contains(err.Error(), "PUBLISH_FAILED") || !strings.Contains(err.Error(), store.ViewRecordPath(root, "w1")) {
			t.Fatalf("Recover: %v", err)
		}
		if _, ok, _ := store.ReadViewRecord(root, "w1"); !ok || !exists(v.Dir) {
			t.Error("a view that could not be recovered was removed")
		}
	})
}

// TestUpperTip reads the branch from the upper layer alone: its loose ref,
// else its own packed-refs, else the real repository's.
func TestUpperTip(t *testing.T) {
	t.Parallel()
	r := newRepo(t, "wt/T-1")
	v := standIn(t, r, false)
	up := v.Upper()
	if got, err := upperTip(v, "refs/heads/wt/T-1", false); err != nil || got != r.base {
		t.Errorf("from the upper layer's packed-refs: %q %v", got, err)
	}
	os.Remove(filepath.Join(up, "packed-refs"))
	os.WriteFile(filepath.Join(r.c.CommonDir, "packed-refs"), []byte("# pack-refs with: peeled\n1111 refs/heads/wt/T-1\n"), 0o644)
	if got, err := upperTip(v, "refs/heads/wt/T-1", false); err != nil || got != "1111" {
		t.Errorf("from the real packed-refs: %q %v", got, err)
	}
	mkdirs(t, filepath.Join(up, "refs", "heads", "wt"))
	os.WriteFile(filepath.Join(up, "refs", "heads", "wt", "T-1"), []byte("2222\n"), 0o644)
	if got, err := upperTip(v, "refs/heads/wt/T-1", false); err != nil || got != "2222" {
		t.Errorf("the loose ref: %q %v", got, err)
	}
}

// TestUnpublished: at the end of a run the refs it moved in its view, but
// its task branch, are listed with where they stand in the view and in
// the repository; KeepObjects copies in every object the view made.
func TestUnpublished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRepo(t, "wt/T-1")
	v := standIn(t, r, true)
	upper := v.Upper()
	p := NewPublisher(v, "T-1", "wt/T-1", r.base, "main")
	if got, err := p.Unpublished(ctx); err != nil || got != nil {
		t.Fatalf("nothing moved: %q %v", got, err)
	}
	feature := commitIn(t, upper, "a feature", r.base)
	hgit(t, upper, "update-ref", "refs/heads/feature", feature)
	hgit(t, upper, "update-ref", "refs/heads/wt/T-1", commitIn(t, upper, "the task's", r.base))
	tag := commitIn(t, upper, "tagged", "")
	hgit(t, upper, "update-ref", "refs/tags/v1", tag)
	if err := p.KeepObjects(ctx); err != nil {
		t.Fatal(err)
	}
	hgit(t, r.c.TopLevel, "cat-file", "-e", feature+"^{commit}")
	got, err := p.Unpublished(ctx)
	want := []string{"refs/heads/feature " + gitrepo.Short(feature) + " -", "refs/tags/v1 " + gitrepo.Short(tag) + " -"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Unpublished: %q %v, want %q", got, err, want)
	}
	// Without a mounted view there is nothing to read.
	closed := &View{Common: v.Common, Dir: v.Dir, fd: -1}
	q := NewPublisher(closed, "T-1", "wt/T-1", r.base, "main")
	if _, err := q.Unpublished(ctx); err != errNoView {
		t.Errorf("Unpublished without a view: %v", err)
	}
	if _, err := q.Tip(); err != errNoView {
		t.Errorf("Tip without a view: %v", err)
	}
	if err := q.Publish(ctx); err == nil || !strings.Contains(err.Error(), "PUBLISH_FAILED") {
		t.Errorf("Publish without a view: %v", err)
	}
	q.Watch(ctx) // returns at once: nothing to watch
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	p.Notify = func(s string) { t.Errorf("a cancelled watch said %q", s) }
	p.Watch(cancelled)
}
