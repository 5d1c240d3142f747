package confine

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/decision/decisiontest"
)

// skipNoUserXattr skips a test that marks directories opaque the way a view
// made in a user namespace does (user.overlay.opaque) where the file
// system of the temporary directory takes no user xattrs.
func skipNoUserXattr(t *testing.T, dir string) {
	t.Helper()
	if err := unix.Setxattr(dir, "user.wt-test", []byte("y"), 0); err != nil {
		t.Skipf("%s takes no user xattrs (%v): the view's layers cannot be marked opaque here", dir, err)
	}
}

// TestNewMakesView: a real run (not --explain) with a view made in a user
// namespace records the view's directory (OnView) before it makes it,
// then makes its layers and the socket cover, and seeds the upper layer
// with the task branch's ref directory and reflog as they are now, each
// marked opaque; Remove takes it all away.
func TestNewMakesView(t *testing.T) {
	pretend(t, false, true)
	tmpdir := t.TempDir()
	skipNoUserXattr(t, tmpdir)
	t.Setenv("TMPDIR", tmpdir)
	r := newRepo(t, "wt/T-1")
	c := r.c
	var recorded string
	p, err := New(Input{Checkout: c, Branch: "wt/T-1", TempDir: t.TempDir(), ABI: 7, OnView: func(dir string) error {
		if exists(dir) {
			t.Errorf("the view %s was made before it was recorded", dir)
		}
		recorded = dir
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	v := p.View()
	if v == nil || !v.userNS || v.Dir != recorded || filepath.Dir(v.Dir) != tmpdir || !strings.HasPrefix(filepath.Base(v.Dir), "wt-view-") {
		t.Fatalf("view %+v, recorded %q", v, recorded)
	}
	if fi, err := os.Stat(v.hiderFile()); err != nil || fi.Mode().Perm() != 0o444 || fi.Size() != 0 {
		t.Errorf("the socket cover: %v %v", fi, err)
	}
	up := v.Upper()
	want := map[string]string{"refs/heads/wt/T-1": r.base + "\n", "refs/heads/wt/T-2": r.base + "\n"}
	if !reflect.DeepEqual(v.seeded, want) {
		t.Errorf("seeded %v, want %v", v.seeded, want)
	}
	for ref, content := range want {
		if got := readFile(t, filepath.Join(up, ref)); got != content {
			t.Errorf("%s in the upper layer: %q", ref, got)
		}
	}
	if got, want := readFile(t, filepath.Join(up, "logs", "refs", "heads", "wt", "T-1")), readFile(t, filepath.Join(c.CommonDir, "logs", "refs", "heads", "wt", "T-1")); got != want {
		t.Errorf("the reflog's copy: %q, want %q", got, want)
	}
	for _, d := range []string{"refs/heads/wt", "logs/refs/heads/wt"} {
		buf := make([]byte, 8)
		if n, err := unix.Getxattr(filepath.Join(up, d), "user.overlay.opaque", buf); err != nil || string(buf[:n]) != "y" {
			t.Errorf("%s is not opaque: %v", d, err)
		}
	}
	if got, err := upperRefs(v); err != nil || len(got) != 0 {
		t.Errorf("the seeded copies count as the run's writes: %v %v", got, err)
	}
	if err := v.Remove(); err != nil || exists(v.Dir) {
		t.Errorf("Remove: %v, left %v", err, exists(v.Dir))
	}
	t.Run("a view that cannot be recorded", func(t *testing.T) {
		_, err := New(Input{Checkout: c, Branch: "wt/T-1", TempDir: t.TempDir(), ABI: 7, OnView: func(string) error { return errors.New("store read-only") }})
		if d, ok := decision.As(err); !ok || d.Code != decision.ConfinementUnavailable || !strings.Contains(err.Error(), "store read-only") {
			t.Fatalf("New: %v", err)
		}
		if ents, _ := os.ReadDir(tmpdir); len(ents) != 1 { // the xattr probe's own
			t.Errorf("a view that could not be recorded was made: %v", ents)
		}
	})
}

// TestViewRemove: Remove takes away the layers even where overlayfs left
// directories without permissions, and the profile's work dirs; a nil
// view is nothing to remove.
func TestViewRemove(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "wt-view-x")
	work := filepath.Join(dir, "work", "work")
	agentWork := filepath.Join(t.TempDir(), "work-1")
	mkdirs(t, work, filepath.Join(dir, "upper"), filepath.Join(agentWork, "w"))
	os.Chmod(work, 0)
	os.Chmod(filepath.Join(agentWork, "w"), 0)
	os.Chmod(filepath.Join(dir, "work"), 0)
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	unrecorded := false
	v := &View{Dir: dir, fd: fd, workDirs: []string{agentWork}, unrecord: func() error { unrecorded = true; return nil }}
	if v.Root() == "" || v.Upper() != filepath.Join(dir, "upper") {
		t.Errorf("Root %q Upper %q", v.Root(), v.Upper())
	}
	if err := v.Remove(); err != nil {
		t.Fatal(err)
	}
	if exists(dir) || exists(agentWork) || !unrecorded || v.fd != -1 || v.Root() != "" {
		t.Errorf("after Remove: dir %v, work %v, unrecorded %v, fd %d", exists(dir), exists(agentWork), unrecorded, v.fd)
	}
	var none *View
	if none.Remove() != nil || none.Root() != "" {
		t.Error("a nil view")
	}
	none.Close()
	if (&Plan{}).View() != nil || (*Plan)(nil).View() != nil {
		t.Error("a plan without a guard has a view")
	}
}

// TestCopyFile: a missing source is nothing to copy.
func TestCopyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := copyFile(filepath.Join(dir, "none"), filepath.Join(dir, "dst")); err != nil || exists(filepath.Join(dir, "dst")) {
		t.Errorf("copyFile of nothing: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "src"), []byte("x"), 0o600)
	if err := copyFile(filepath.Join(dir, "src"), filepath.Join(dir, "dst")); err != nil || readFile(t, filepath.Join(dir, "dst")) != "x" {
		t.Errorf("copyFile: %v", err)
	}
	if err := copyFile(dir, filepath.Join(dir, "dst2")); err == nil {
		t.Error("copyFile of a directory")
	}
}

// listen makes a listening pathname socket in a new temporary directory.
func listen(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "wts")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := filepath.Join(dir, "s")
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return p
}

// TestPlanSockets: a listening socket is reachable when allowed, the
// run's own beneath a directory it may write, and covered otherwise.
func TestPlanSockets(t *testing.T) {
	t.Parallel()
	s := listen(t)
	all, err := listeningSockets()
	if err != nil {
		t.Skip("/proc/net/unix cannot be read here:", err)
	}
	if !slices.Contains(all, s) {
		t.Fatalf("the listening socket %s is not listed: %q", s, all)
	}
	for _, tc := range []struct {
		name        string
		allowed     []string
		writable    []Rule
		reach, hide bool
	}{
		{"allowed", []string{s}, nil, true, false},
		{"the run's own", nil, []Rule{{filepath.Dir(s), ""}}, false, false},
		{"another's", nil, []Rule{{s + "x", ""}}, false, true},
	} {
		reach, hide, err := planSockets(tc.allowed, tc.writable)
		if err != nil || slices.Contains(reach, s) != tc.reach || slices.Contains(hide, s) != tc.hide || !slices.IsSorted(reach) || !slices.IsSorted(hide) {
			t.Errorf("%s: reach %q hide %q %v", tc.name, reach, hide, err)
		}
	}
}

// TestNewSockets: with a view the plan lists the sockets the run may
// reach (the SSH agent's, --allow-socket's) and those it covers; without
// one it says every socket is reachable.
func TestNewSockets(t *testing.T) {
	agent, other := listen(t), listen(t)
	if all, err := listeningSockets(); err != nil || !slices.Contains(all, agent) {
		t.Skip("/proc/net/unix does not list the test's sockets here:", err)
	}
	r := newRepo(t, "wt/T-1")
	pretend(t, true, false)
	p, err := New(Input{Checkout: r.c, Branch: "wt/T-1", TempDir: t.TempDir(), ABI: 6, DryRun: true, SSHAuthSock: agent + "/", AllowSockets: []string{"relative"}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Sockets, []string{agent}) || !slices.Contains(p.Hidden, other) || slices.Contains(p.Hidden, agent) || !reflect.DeepEqual(p.guard.hide, p.Hidden) {
		t.Errorf("reach %q, hidden %q", p.Sockets, p.Hidden)
	}
	if got := lines(p.Explain(r.c.TopLevel), "  sockets  reachable: "+agent+";"); len(got) != 1 {
		t.Errorf("explain: %q", p.Explain(r.c.TopLevel))
	}
	p.socketsUnread = "no /proc"
	if got := lines(p.Explain(r.c.TopLevel), "sockets  none covered: the listening sockets cannot be read: no /proc"); len(got) != 1 {
		t.Errorf("explain: %q", p.Explain(r.c.TopLevel))
	}
	pretend(t, false, false)
	p, err = New(Input{Checkout: r.c, Branch: "wt/T-1", TempDir: t.TempDir(), ABI: 6, DryRun: true, SSHAuthSock: agent})
	if err != nil {
		t.Fatal(err)
	}
	if p.Sockets != nil || p.Hidden != nil || len(lines(p.Explain(r.c.TopLevel), "every pathname socket it can find")) != 1 {
		t.Errorf("without a view: %q %q %q", p.Sockets, p.Hidden, p.Explain(r.c.TopLevel))
	}
}

// TestCloseInherited: every descriptor above 2 is marked close-on-exec,
// but those kept, which lose the mark; keeping one that is not open is a
// usage error.
func TestCloseInherited(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "f")
	keep, err := unix.Open(p, unix.O_CREAT|unix.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(keep)
	other, err := unix.Open(p, unix.O_RDONLY, 0) // without O_CLOEXEC: inherited
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(other)
	if err := CloseInherited([]int{keep}); err != nil {
		t.Fatal(err)
	}
	if fl, err := unix.FcntlInt(uintptr(keep), unix.F_GETFD, 0); err != nil || fl&unix.FD_CLOEXEC != 0 {
		t.Errorf("the kept descriptor: flags %d %v", fl, err)
	}
	if fl, err := unix.FcntlInt(uintptr(other), unix.F_GETFD, 0); err != nil || fl&unix.FD_CLOEXEC == 0 {
		t.Errorf("an inherited descriptor stays open across exec: flags %d %v", fl, err)
	}
	unix.FcntlInt(uintptr(keep), unix.F_SETFD, unix.FD_CLOEXEC) // as Go opens its own again
	decisiontest.WantHint(t, CloseInherited([]int{1 << 20}), decision.Usage, "--keep-fd 1048576")
}

// TestMakeTempDir: the private TMPDIR is a new directory in TMPDIR.
func TestMakeTempDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	d, err := MakeTempDir()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() || filepath.Dir(d) != tmp || !strings.HasPrefix(filepath.Base(d), "wt-exec-tmp-") {
		t.Errorf("MakeTempDir: %s %v", d, err)
	}
	t.Setenv("TMPDIR", filepath.Join(tmp, "none"))
	if _, err := MakeTempDir(); decision.CodeOf(err) != decision.Internal {
		t.Errorf("MakeTempDir in a missing TMPDIR: %v", err)
	}
}

// TestHelperEnv: only a process started with the helper's variable is the
// helper.
func TestHelperEnv(t *testing.T) {
	t.Setenv(helperEnv, "")
	os.Unsetenv(helperEnv)
	if IsHelper() {
		t.Error("IsHelper without the variable")
	}
	t.Setenv(helperEnv, "7")
	if !IsHelper() {
		t.Error("not IsHelper with the variable")
	}
	if !strings.Contains(NoViewWhy(), "max_user_namespaces") {
		t.Errorf("NoViewWhy: %q", NoViewWhy())
	}
}
