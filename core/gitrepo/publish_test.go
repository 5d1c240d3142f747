package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/internal/gittest"
)

// view is a copy of r's repository (git clone) whose own commits stand
// for what a confined run made in its private view: its objects dir is
// what the publication reads from.
func view(t *testing.T, r *Repo, top string) (dir, objects string) {
	t.Helper()
	dir = filepath.Join(top, "view")
	gittest.Git(t, top, "clone", "-q", "--no-local", r.TopLevel, dir)
	return dir, filepath.Join(dir, ".git", "objects")
}

// has reports whether the repository of common holds object oid.
func has(common, oid string) bool {
	return exec.Command("git", "--git-dir="+common, "cat-file", "-e", oid).Run() == nil
}

// TestImportObjectsCopiesWhatTheTipReaches: the objects a run's commits
// added are written into the repository (loose below the unpack limit,
// as a pack at or above it), after which the tip is connected there; the
// history before not is not copied.
func TestImportObjectsCopiesWhatTheTipReaches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		files int
		pack  bool
	}{
		{"few objects, loose", 2, false},
		{"many objects, a pack", unpackLimit + 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, top, base := newRepo(t)
			vdir, objects := view(t, r, top)
			for i := range tc.files {
				os.WriteFile(filepath.Join(vdir, fmt.Sprintf("f%03d", i)), []byte(fmt.Sprint("content ", i)), 0o644)
			}
			gittest.Git(t, vdir, "add", ".")
			gittest.Git(t, vdir, "commit", "-q", "-m", "run")
			tip := gittest.Git(t, vdir, "rev-parse", "HEAD")
			if err := Connected(ctx, r.CommonDir, tip, []string{base}); err == nil {
				t.Fatal("the run's commit is connected before its import")
			}
			packsBefore, _ := filepath.Glob(filepath.Join(r.CommonDir, "objects", "pack", "*.pack"))

			n, err := ImportObjects(ctx, r.CommonDir, objects, []string{tip}, []string{base, ""})
			// The commit, its tree and one blob a file.
			if err != nil || n != tc.files+2 {
				t.Fatalf("ImportObjects: %d %v, want %d", n, err, tc.files+2)
			}
			if err := Connected(ctx, r.CommonDir, tip, []string{base, ""}); err != nil {
				t.Fatalf("not connected after the import: %v", err)
			}
			packs, _ := filepath.Glob(filepath.Join(r.CommonDir, "objects", "pack", "*.pack"))
			if got := len(packs) > len(packsBefore); got != tc.pack {
				t.Errorf("a new pack: %v, want %v", got, tc.pack)
			}
			if !has(r.CommonDir, tip) || !has(r.CommonDir, gittest.Git(t, vdir, "rev-parse", "HEAD:f000")) {
				t.Error("the commit or its blob is not in the repository")
			}
			// Nothing between the tip and itself.
			if n, err := ImportObjects(ctx, r.CommonDir, objects, []string{tip}, []string{tip}); err != nil || n != 0 {
				t.Errorf("an empty range: %d %v", n, err)
			}
		})
	}
}

// TestImportObjectsOfAnUnknownTipFails: a tip that neither the repository
// nor the view holds is a git failure, and nothing is written.
func TestImportObjectsOfAnUnknownTipFails(t *testing.T) {
	t.Parallel()
	r, top, base := newRepo(t)
	_, objects := view(t, r, top)
	before := gittest.Git(t, r.TopLevel, "count-objects", "-v")
	n, err := ImportObjects(context.Background(), r.CommonDir, objects, []string{strings.Repeat("1", 40)}, []string{base})
	var ge *Error
	if n != 0 || err == nil || !errors.As(err, &ge) || ge.Args[0] != "pack-objects" {
		t.Fatalf("ImportObjects: %d %v, want pack-objects' failure", n, err)
	}
	if after := gittest.Git(t, r.TopLevel, "count-objects", "-v"); after != before {
		t.Errorf("objects changed:\n%s\n->\n%s", before, after)
	}
}

// TestMoveRefComparesAndSwaps: a ref is created only where it does not
// exist and moved only from the value given; a refused move leaves it.
func TestMoveRefComparesAndSwaps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, _, base := newRepo(t)
	next := commitFile(t, r.TopLevel, "a", "a")
	const ref = "refs/heads/wt/T-1"
	if err := MoveRef(ctx, r.CommonDir, ref, base, "", "wt: publish"); err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadRef(r.CommonDir, ref); got != base {
		t.Fatalf("created at %q, want %s", got, base)
	}
	if err := MoveRef(ctx, r.CommonDir, ref, next, "", "again"); err == nil {
		t.Error("created a second time")
	}
	if err := MoveRef(ctx, r.CommonDir, ref, next, next, "from the wrong value"); err == nil {
		t.Error("moved from a value it does not hold")
	}
	if got, _ := ReadRef(r.CommonDir, ref); got != base {
		t.Fatalf("a refused move moved it to %q", got)
	}
	if err := MoveRef(ctx, r.CommonDir, ref, next, base, "wt: publish"); err != nil {
		t.Fatal(err)
	}
	log, err := ReadReflog(r.CommonDir, ref)
	if err != nil || len(log) != 2 || log[1].Old != base || log[1].New != next || log[1].Msg != "wt: publish" {
		t.Fatalf("reflog: %+v %v", log, err)
	}
}

// TestIsAncestorIn: an ancestor, the commit itself, a commit that is not
// one, and an object that is not there (an error, never false).
func TestIsAncestorIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, _, base := newRepo(t)
	next := commitFile(t, r.TopLevel, "a", "a")
	for _, tc := range []struct {
		a, b string
		want bool
	}{{base, next, true}, {next, next, true}, {next, base, false}} {
		if got, err := IsAncestorIn(ctx, r.CommonDir, tc.a, tc.b); err != nil || got != tc.want {
			t.Errorf("%s of %s: %v %v, want %v", Short(tc.a), Short(tc.b), got, err, tc.want)
		}
		if got, err := r.IsAncestor(ctx, tc.a, tc.b); err != nil || got != tc.want {
			t.Errorf("Repo.IsAncestor %s of %s: %v %v, want %v", Short(tc.a), Short(tc.b), got, err, tc.want)
		}
	}
	if got, err := IsAncestorIn(ctx, r.CommonDir, strings.Repeat("1", 40), next); err == nil || got {
		t.Errorf("a missing object: %v %v, want an error", got, err)
	}
}

// TestListRefsOfAView: the refs of a view's refs dir (loose and packed)
// are listed through a stand-in git dir holding the repository's config,
// never the view's own; the repository's own refs need none.
func TestListRefsOfAView(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, top, base := newRepo(t)
	next := commitFile(t, r.TopLevel, "a", "a")
	own, err := ListRefsOf(ctx, r.CommonDir, r.CommonDir)
	if err != nil || len(own) != 1 || own["refs/heads/main"] != next {
		t.Fatalf("the repository's refs: %v %v", own, err)
	}
	v := filepath.Join(top, "viewrefs")
	os.MkdirAll(filepath.Join(v, "refs", "heads", "wt"), 0o755)
	os.WriteFile(filepath.Join(v, "refs", "heads", "wt", "T-1"), []byte(next+"\n"), 0o644)
	os.WriteFile(filepath.Join(v, "packed-refs"), []byte("# pack-refs with: peeled fully-peeled sorted \n"+base+" refs/heads/main\n"), 0o644)
	// A config in the view that git would refuse to read: it is not read.
	os.WriteFile(filepath.Join(v, "config"), []byte("[core\n"), 0o644)
	refs, err := ListRefsOf(ctx, r.CommonDir, v)
	if err != nil || len(refs) != 2 || refs["refs/heads/wt/T-1"] != next || refs["refs/heads/main"] != base {
		t.Fatalf("the view's refs: %v %v", refs, err)
	}
	// A view without a refs dir lists nothing.
	empty := filepath.Join(top, "empty")
	os.Mkdir(empty, 0o755)
	if refs, err := ListRefsOf(ctx, r.CommonDir, empty); err != nil || len(refs) != 0 {
		t.Errorf("an empty view: %v %v", refs, err)
	}
}

// TestImportAllKeepsWhatNoRefReaches: every object of a view's objects dir
// that the repository lacks, loose or packed, is copied; one it has is
// not; a FIFO planted as a pack index is passed over, never read; a view
// that made no object imports nothing.
func TestImportAllKeepsWhatNoRefReaches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, top, _ := newRepo(t)
	if n, err := ImportAll(ctx, r.CommonDir, filepath.Join(top, "none")); err != nil || n != 0 {
		t.Fatalf("no objects dir: %d %v", n, err)
	}
	vdir, objects := view(t, r, top)
	// A packed blob and a loose one that no ref reaches.
	loose := hashObject(t, vdir, "loose only in the view")
	inPack := hashObject(t, vdir, "packed in the view")
	gittest.Git(t, vdir, "repack", "-q", "-a", "-d")
	loose2 := hashObject(t, vdir, "loose only in the view, after the repack")
	for _, o := range []string{loose, inPack, loose2} {
		if has(r.CommonDir, o) {
			t.Fatalf("%s is in the repository before the import", o)
		}
	}
	unix.Mkfifo(filepath.Join(objects, "pack", "pack-fifo.idx"), 0o644)
	n, err := ImportAll(ctx, r.CommonDir, objects)
	if err != nil || n != 3 { // the base the view shares is there already
		t.Fatalf("ImportAll: %d %v", n, err)
	}
	for _, o := range []string{loose, inPack, loose2} {
		if !has(r.CommonDir, o) {
			t.Errorf("%s was not imported", o)
		}
	}
	if n, err := ImportAll(ctx, r.CommonDir, objects); err != nil || n != 0 {
		t.Errorf("a second import: %d %v, want nothing to copy", n, err)
	}
}

// hashObject writes content as a blob in the repository at dir.
func hashObject(t *testing.T, dir, content string) string {
	t.Helper()
	cmd := exec.Command("git", "-C", dir, "hash-object", "-w", "--stdin")
	cmd.Stdin = strings.NewReader(content)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
