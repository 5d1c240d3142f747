package confine

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/proc"
)

// What a confined command does to the repository reaches everyone else
// only through wt (docs/design.md, "Confinement: a private view"). Where
// wt-exec may make a mount namespace (CAP_SYS_ADMIN: root), the command
// runs in one of its own in which the repository's common dir is an
// overlay: the real common dir its lower layer, read-only, and an upper
// layer of the run's own (in a directory of wt-exec's, View.Dir) that takes
// every write. Every ref, reflog, object, config byte, hook and record the
// command writes, deletes, packs or rewrites, whatever git it runs and
// with hooks or without, lands in the upper layer; the real files stay as
// they were. Only the command's own admin dir (its HEAD, index and
// per-worktree refs) is the real one, bound over the view, as before.
//
// The command's task branch leaves the view through wt-exec, which
// publishes it (publish.go): the new objects it needs, checked by git's
// index-pack, then the branch moved by compare-and-swap from the last
// tip published. Landlock forbids the command every mount and unmount,
// so it cannot take the overlay away.
//
// Without a mount namespace (not root) only Landlock draws the line, as
// in wt's first confinement: the task branch's ref directory and
// refs/remotes are writable, refs/ itself and the common dir's root are
// not (the stash and every ref deletion fail, and other branches in the
// task branch's directory are writable), and objects are writable.

// Guard names: how a run's refs are guarded.
const (
	GuardView     = "private view"
	GuardLandlock = "landlock only"
)

// View is a confined run's private copy-on-write view of the common dir.
type View struct {
	// Common is the real common dir the view covers.
	Common string
	// GitDir is the run's admin dir, the real one bound into the view.
	GitDir string
	// Branch is the task branch ("" for none), whose ref directory the
	// view keeps apart (seed).
	Branch string
	// userNS is set when the view is made in a user namespace of the
	// run's own (wt-exec is not root: userns.go).
	userNS bool
	// sandbox is set for a run with no authority (Input.Sandbox): its own
	// admin dir is in the view too (nothing of git's it writes outlives
	// the run), it gets a network namespace of its own with loopback
	// alone, and nothing of the view is ever published.
	sandbox bool
	// record and unrecord keep the view's record in the store (Record),
	// nil when it has none.
	record   func(published string) error
	unrecord func() error
	// workDirs are overlayfs work dirs of the run's agent profile layers
	// (agents.go), removed with the view.
	workDirs []string
	// seeded are the loose refs seed copied into the upper layer, with
	// their contents: copies, not the run's writes.
	seeded map[string]string
	// Dir holds the upper layer (upper/) and overlayfs's work dir (work/):
	// wt-exec's, outside the repository and every rule of the command.
	Dir string
	// fd is an O_PATH descriptor of the view's root once it is mounted
	// (-1 before): wt-exec reads the view through it (Root) from outside
	// the command's mount namespace.
	fd int
}

// Upper is the view's upper layer: what the run wrote.
func (v *View) Upper() string { return filepath.Join(v.Dir, "upper") }

// Root is a path by which wt-exec reads the view as the command sees it,
// "" before it is mounted.
func (v *View) Root() string {
	if v == nil || v.fd < 0 {
		return ""
	}
	return "/proc/self/fd/" + strconv.Itoa(v.fd)
}

// Close lets the view go: the overlay stays mounted while a process of
// the command's namespace lives.
func (v *View) Close() {
	if v != nil && v.fd >= 0 {
		_ = unix.Close(v.fd) // Best effort: an O_PATH descriptor.
		v.fd = -1
	}
}

// Remove closes the view and removes its layers. Only once the command
// and everything it started have ended and the view is published.
func (v *View) Remove() error {
	if v == nil {
		return nil
	}
	v.Close()
	// overlayfs makes the directories of its work dir with no
	// permissions: only root gets in without giving them back. (A
	// sandbox's work dirs of its home's layers are inside v.Dir.)
	openTree(filepath.Join(v.Dir, "work"))
	for _, w := range v.workDirs {
		openTree(w)
	}
	if err := os.RemoveAll(v.Dir); err != nil {
		return err
	}
	for _, w := range v.workDirs {
		if err := os.RemoveAll(w); err != nil {
			return err
		}
	}
	if v.unrecord != nil {
		return v.unrecord()
	}
	return nil
}

// openTree gives the owner back its permissions on dir and every
// directory beneath it. Best effort: RemoveAll says what is left.
func openTree(dir string) {
	if os.Chmod(dir, 0o700) != nil {
		return
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			openTree(filepath.Join(dir, e.Name()))
		}
	}
}

// refGuard is how a confined command's refs are guarded: a view, or
// Landlock's rules alone.
type refGuard struct {
	mode string
	view *View
	// branchDir is the ref directory of the task's branch ("" for a
	// detached worktree), relative to the common dir: writable under
	// Landlock alone.
	branchDir string
	// ownDir is true when branchDir is the task's own (task-dir layout).
	ownDir bool
	// reftable is set in a reftable repository.
	reftable bool
	// agent is the agent profile's plan, whose protected and private
	// files are mounts of the namespace.
	agent *agentPlan
	// home are the run's private layers over the home directory's caches
	// (homeLayer), mounted before the profile's own layers.
	home []agentOverlay
	// hide are the sockets covered in the namespace (sockets.go).
	hide []string
}

// mountNSAllowed and userNSAllowed say which view a run can get (tests
// pretend otherwise).
var mountNSAllowed, userNSAllowed = canMountNS, canUserNS

// NoViewWhy says why a run gets no private view here: what is missing.
func NoViewWhy() string {
	return "wt-exec is not root, and this kernel lets no ordinary user make a user namespace (/proc/sys/user/max_user_namespaces is 0, or kernel.unprivileged_userns_clone or AppArmor's apparmor_restrict_unprivileged_userns forbids it)"
}

// canMountNS reports whether this process may make a mount namespace:
// CAP_SYS_ADMIN in its effective set.
func canMountNS() bool {
	b, err := proc.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("CapEff:")); ok {
			caps, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 16, 64)
			return err == nil && caps&(1<<unix.CAP_SYS_ADMIN) != 0
		}
	}
	return false
}

// taskRefDir is the directory, relative to a git dir, holding the lock
// files of branch's ref (refs/heads/wt for wt/T-1), "" for no branch.
func taskRefDir(branch string) string {
	if branch == "" {
		return ""
	}
	return path.Dir("refs/heads/" + branch)
}

// checkBranchDir refuses a Landlock-only confinement whose writable ref
// directory would hold the publication branch (a task branch with no
// directory of its own, such as "feature" beside "main").
func checkBranchDir(branch, publication string) error {
	dir := taskRefDir(branch)
	if dir == "" || publication == "" || !strings.HasPrefix("refs/heads/"+publication, dir+"/") {
		return nil
	}
	return decision.Say(decision.ConfinementConflict, "branch-keeps", branch, dir, publication, publication).
		WithHint("allocate the task on a branch in a directory of its own: wt-admin allocate --task KEY --owner NAME --branch wt/KEY/work PATH")
}

// ownRefDir reports whether branch has a ref directory no other task's
// default branch shares: the task-dir layout's wt/<task>/work.
func ownRefDir(branch string) bool {
	return strings.HasPrefix(branch, "wt/") && strings.HasSuffix(branch, "/work") && len(branch) > len("wt//work")
}

// planGuard plans how the refs of the checkout are guarded: a private
// view where wt-exec may mount one, else Landlock's rules. Unless dryRun
// it makes the view's layers (Landlock only: the ref directories the
// rules name, empty, which git ignores).
func planGuard(c gitrepo.Checkout, branch, publication string, dryRun bool, onView func(dir string) error) (*refGuard, error) {
	g := &refGuard{mode: GuardLandlock, branchDir: taskRefDir(branch), ownDir: ownRefDir(branch), reftable: gitrepo.Reftable(c.CommonDir)}
	if root := mountNSAllowed(); root || userNSAllowed() {
		g.mode = GuardView
		g.view = &View{Common: c.CommonDir, GitDir: c.GitDir, Branch: branch, userNS: !root, fd: -1}
		if dryRun {
			g.view.Dir = filepath.Join(os.TempDir(), "wt-view-XXXXXXXX")
			return g, nil
		}
		// The name is recorded (onView) before anything is made there: a
		// wt-exec killed from then on leaves a record that finds it.
		d := filepath.Join(os.TempDir(), "wt-view-"+rand.Text()[:16])
		if onView != nil {
			if err := onView(d); err != nil {
				return nil, decision.SayWrap(decision.ConfinementUnavailable, err, "record-run")
			}
		}
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, decision.SayWrap(decision.ConfinementUnavailable, err, "make-run")
		}
		for _, sub := range []string{"upper", "work"} {
			if err := os.Mkdir(filepath.Join(d, sub), 0o700); err != nil {
				_ = os.RemoveAll(d) // Best effort: an empty directory of ours.
				return nil, decision.SayWrap(decision.ConfinementUnavailable, err, "make-run")
			}
		}
		g.view.Dir = d
		if err := os.WriteFile(g.view.hiderFile(), nil, 0o444); err != nil {
			_ = os.RemoveAll(d) // Best effort: the layers just made.
			return nil, decision.SayWrap(decision.ConfinementUnavailable, err, "make-run")
		}
		if err := g.view.seed(); err != nil {
			_ = os.RemoveAll(d) // Best effort: the layers just made.
			return nil, decision.SayWrap(decision.ConfinementUnavailable, err, "make-run")
		}
		return g, nil
	}
	if err := checkBranchDir(branch, publication); err != nil {
		return nil, err
	}
	if dryRun || g.reftable {
		return g, nil
	}
	dirs := []string{filepath.Join(c.CommonDir, "refs", "remotes"), filepath.Join(c.CommonDir, "logs", "refs", "remotes")}
	if g.branchDir != "" {
		dirs = append(dirs, filepath.Join(c.CommonDir, g.branchDir), filepath.Join(c.CommonDir, "logs", g.branchDir))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, decision.SayWrap(decision.ConfinementUnavailable, err, "make-ref", d)
		}
	}
	return g, nil
}

// rules are what the guard makes writable beneath the common dir.
func (g *refGuard) rules(common string) []Rule {
	if g.mode == GuardView {
		if g.view.sandbox {
			return []Rule{{common, "the run's private view of the common dir: every write lands in " + g.view.Upper() + ", thrown away when it ends"}}
		}
		return []Rule{{common, "the run's private view of the common dir: every write lands in " + g.view.Upper() + ", wt-exec publishes its branch"}}
	}
	out := []Rule{{filepath.Join(common, "objects"), "objects a commit or fetch adds"}}
	if g.reftable {
		return append(out, Rule{filepath.Join(common, "reftable"), "every ref: a reftable repository keeps them in one table stack"})
	}
	if g.branchDir != "" {
		out = append(out, Rule{filepath.Join(common, g.branchDir), "its branch's ref directory"},
			Rule{filepath.Join(common, "logs", g.branchDir), "its branch's reflogs"})
	}
	return append(out, Rule{filepath.Join(common, "refs", "remotes"), "remote-tracking refs"},
		Rule{filepath.Join(common, "logs", "refs", "remotes"), "remote-tracking reflogs"})
}

// overlayEscape escapes a path for overlayfs's mount options, which
// separate options with commas and lower layers with colons.
func overlayEscape(p string) string {
	return strings.NewReplacer(`\`, `\\`, `,`, `\,`, `:`, `\:`).Replace(p)
}

// enterMountNS puts the calling thread (locked, about to fork the
// command) in a mount namespace of its own and makes the view there
// (mountView). As root only: without, the helper makes it (userns.go).
func (g *refGuard) enterMountNS() error {
	if g == nil || g.mode != GuardView {
		return nil
	}
	g.view.Close() // a view of an earlier attempt to start the command
	flags := unix.CLONE_NEWNS
	if g.view.sandbox {
		flags |= unix.CLONE_NEWNET
	}
	if err := unix.Unshare(flags); err != nil {
		return fmt.Errorf("unshare the mount namespace: %w", err)
	}
	if g.view.sandbox {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	return g.mountView()
}

// loopbackUp brings up the loopback interface of the network namespace the
// calling thread is in (a new one: it starts down), so that a sandboxed
// run reaches what it serves itself on 127.0.0.1 and ::1, and nothing else.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open a socket to bring the loopback interface up: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("read the loopback interface's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring the loopback interface up: %w", err)
	}
	return nil
}

// mountView makes the guard's mounts in the mount namespace the caller is
// in (new, its own): the overlay over the common dir, the command's own
// admin dir bound into it, then the agent profile's mounts. Mounts
// propagate into the namespace from the host (slave), never out.
func (g *refGuard) mountView() error {
	v := g.view
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("make the mount namespace a slave: %w", err)
	}
	// The admin dir's mount tree, taken before the overlay covers it.
	admin, err := unix.OpenTree(unix.AT_FDCWD, v.GitDir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("clone the mount tree of %s: %w", v.GitDir, err)
	}
	defer unix.Close(admin)
	// index=off and redirect_dir=off: the view is thrown away, never
	// moved or mounted again; xino and metacopy off keep copy-up whole;
	// volatile: nothing of it needs to reach the disk.
	// In a user namespace (userxattr) overlayfs refuses those options
	// and keeps redirect_dir and metacopy off by itself.
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,volatile",
		overlayEscape(v.Common), overlayEscape(v.Upper()), overlayEscape(filepath.Join(v.Dir, "work")))
	if v.userNS {
		opts += ",userxattr"
	} else {
		opts += ",index=off,redirect_dir=off,metacopy=off,xino=off"
	}
	if err := unix.Mount("wt-view", v.Common, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount the run's view of %s: %w", v.Common, err)
	}
	fd, err := unix.Open(v.Common, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the run's view of %s: %w", v.Common, err)
	}
	v.fd = fd
	if rel, err := filepath.Rel(v.Common, v.GitDir); err == nil && !strings.HasPrefix(rel, "..") && rel != "." && !v.sandbox {
		if err := unix.MoveMount(admin, "", unix.AT_FDCWD, v.GitDir, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("mount %s in the view: %w", v.GitDir, err)
		}
	}
	if err := g.agentMounts(); err != nil {
		return err
	}
	return g.coverSockets()
}

// overlay mounts layer o over its directory in the run's namespace; a
// volatile one (thrown away with the run) is never synced to disk, which
// an overlay otherwise does when its namespace goes.
func (g *refGuard) overlay(source string, o agentOverlay, volatile bool) error {
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", overlayEscape(o.path), overlayEscape(o.upper), overlayEscape(o.work))
	if volatile {
		opts += ",volatile"
	}
	if g.view.userNS {
		opts += ",userxattr"
	} else {
		opts += ",index=off,redirect_dir=off,metacopy=off,xino=off"
	}
	return unix.Mount(source, o.path, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts)
}

// coverSockets binds the view's empty file, read-only, over each socket
// the run may not reach. One gone meanwhile needs no cover.
func (g *refGuard) coverSockets() error {
	if len(g.hide) == 0 {
		return nil
	}
	t, err := unix.OpenTree(unix.AT_FDCWD, g.view.hiderFile(), unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("clone %s: %w", g.view.hiderFile(), err)
	}
	defer unix.Close(t)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC}
	if err := unix.MountSetattr(t, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fmt.Errorf("make %s read-only: %w", g.view.hiderFile(), err)
	}
	for _, p := range g.hide {
		c, err := unix.OpenTree(t, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
		if err != nil {
			return fmt.Errorf("clone %s: %w", g.view.hiderFile(), err)
		}
		err = unix.MoveMount(c, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH)
		unix.Close(c)
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("cover the socket %s: %w", p, err)
		}
	}
	return nil
}

// agentMounts makes the agent profile's mounts: each protected file or
// directory read-only over itself, each private copy over its file.
func (g *refGuard) agentMounts() error {
	// The run's own layers over the home caches first: a profile's own
	// layer over a directory inside one (~/.cache/opencode) goes on top.
	for _, o := range g.home {
		if err := g.overlay("wt-home", o, true); err != nil {
			return fmt.Errorf("mount the run's own layer over %s: %w", o.path, err)
		}
	}
	if g.agent == nil {
		return nil
	}
	// The profile's own layers first: protect's read-only binds go on
	// top of them.
	for _, o := range g.agent.overlays {
		if err := g.overlay("wt-agent", o, false); err != nil {
			return fmt.Errorf("mount the profile's own %s: %w", o.path, err)
		}
	}
	bind := func(src, dst string, ro bool) error {
		t, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
		if err != nil {
			return fmt.Errorf("clone %s: %w", src, err)
		}
		defer unix.Close(t)
		if ro {
			attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
			if err := unix.MountSetattr(t, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
				return fmt.Errorf("make %s read-only: %w", src, err)
			}
		}
		if err := unix.MoveMount(t, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("mount %s on %s: %w", src, dst, err)
		}
		return nil
	}
	for _, p := range g.agent.protect {
		if err := bind(p, p, true); err != nil {
			return err
		}
	}
	for _, c := range g.agent.private {
		if err := bind(c.copy, c.path, false); err != nil {
			return err
		}
	}
	return nil
}

// explain is the guard in words.
func (g *refGuard) explain() []string {
	if g == nil {
		return nil
	}
	out := []string{"  refs     guarded by " + g.mode}
	if g.mode == GuardView {
		if g.view.userNS {
			out = append(out, "  view     made in a user namespace of the run's own (wt-exec is not root)")
		}
		if g.view.sandbox {
			return append(out,
				"  view     "+g.view.Common+" is an overlay: every ref, reflog, object, config, hook and record the command writes, deletes or packs stays in "+g.view.Upper()+", thrown away when it ends",
				"  view     its own admin dir ("+g.view.GitDir+") is in the view too: its HEAD, index and config.worktree stay as they were",
				"  publish  nothing: no ref, object or record of the run leaves it (a sandbox has no authority)",
				"  network  loopback only: a network namespace of its own (no remote, no other machine, no server of the host's)")
		}
		return append(out,
			"  view     "+g.view.Common+" is an overlay: every ref, reflog, object, config, hook and record the command writes, deletes or packs stays in "+g.view.Upper(),
			"  view     its own admin dir ("+g.view.GitDir+") is the real one",
			"  publish  wt-exec publishes its branch: new objects checked by git index-pack, then the branch moved from the last tip it published; every other ref it moved is listed when it ends")
	}
	if g.reftable {
		return append(out, "  refs     writable: every ref: a reftable repository keeps them in one table stack, which no path rule can divide (no private view: wt-exec is not root and cannot make a user namespace here)")
	}
	if g.branchDir != "" {
		out = append(out, "  refs     writable: "+g.branchDir+"/ (its branch's directory), refs/remotes, its own refs and HEAD")
		if !g.ownDir {
			out = append(out, "  refs     shared: other branches in "+g.branchDir+"/ (other tasks' in the flat layout) are writable too; wt-admin policy --branch-layout task-dir gives each new task a directory of its own")
		}
	}
	return append(out, "  read-only refs/ and the common dir's root: the stash and ref deletions fail (no private view: wt-exec is not root and cannot make a user namespace here)",
		"  objects  writable: a confined command can delete or rewrite objects (no private view: wt-exec is not root and cannot make a user namespace here)")
}

// errNoView is a publication asked of a run without a view.
var errNoView = errors.New("the run has no private view")

// seed makes the upper layer's directories that must not show the real
// repository as it changes under the view: the task branch's ref
// directory and its reflog directory (files backend), or the whole table
// stack (reftable), each opaque (trusted.overlay.opaque: nothing of the
// lower layer shows in it) and holding a copy of what it holds now.
//
// An overlay's lower layer must not change under it: a name the view
// looked up keeps pointing at what it found (once the view has seen
// <ref>.lock of a publication, it sees it after the publication renamed
// it away, and the run's next commit fails with "File exists"). The
// directories wt-exec's publication writes are therefore the run's own
// from the start; in the flat layout the run sees no other task's branch.
func (v *View) seed() error {
	up := v.Upper()
	if gitrepo.Reftable(v.Common) {
		dst := filepath.Join(up, "reftable")
		if err := v.opaqueDir(dst); err != nil {
			return err
		}
		if err := copyStack(filepath.Join(v.Common, "reftable"), dst); err != nil {
			return err
		}
		// The stack as the run starts with it, kept apart (links): what
		// the run moved is told from it when it ends.
		start := filepath.Join(v.Dir, "start", "reftable")
		if err := os.MkdirAll(start, 0o700); err != nil {
			return err
		}
		return copyStack(dst, start)
	}
	if v.Branch == "" {
		return nil
	}
	// The branch's ref directory with every loose ref it holds now (in
	// the flat layout, other tasks' branches: the run sees them as they
	// were when it started), and its own reflog.
	ref := "refs/heads/" + v.Branch
	dir := filepath.Dir(ref)
	if err := v.opaqueDir(filepath.Join(up, dir)); err != nil {
		return err
	}
	v.seeded = map[string]string{}
	err := filepath.WalkDir(filepath.Join(v.Common, dir), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		rel, rerr := filepath.Rel(v.Common, p)
		if rerr != nil {
			return rerr
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(filepath.Join(up, rel), 0o755)
		case !d.Type().IsRegular() || strings.HasSuffix(p, ".lock"):
			return nil
		}
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			return nil // moved away meanwhile: the view reads packed-refs
		}
		if err != nil {
			return err
		}
		v.seeded[filepath.ToSlash(rel)] = string(b)
		return os.WriteFile(filepath.Join(up, rel), b, 0o644)
	})
	if err != nil {
		return err
	}
	log := filepath.Join("logs", ref)
	if err := v.opaqueDir(filepath.Join(up, filepath.Dir(log))); err != nil {
		return err
	}
	return copyFile(filepath.Join(v.Common, log), filepath.Join(up, log))
}

// opaqueDir makes dir (and its parents) in the upper layer, dir opaque:
// overlayfs reads trusted.overlay.opaque, or, mounted in a user namespace
// (userxattr), user.overlay.opaque.
func (v *View) opaqueDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	attr := "trusted.overlay.opaque"
	if v.userNS {
		attr = "user.overlay.opaque"
	}
	if err := unix.Setxattr(dir, attr, []byte("y"), 0); err != nil {
		return fmt.Errorf("mark %s opaque: %w", dir, err)
	}
	return nil
}

// copyFile copies src to dst, with src's mode; a missing src is nothing
// to copy.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// copyStack copies a reftable stack: its tables.list and the tables it
// names, each linked where the two are on one file system (a table is
// never written again once in the list) and copied where not. A table
// compacted away meanwhile makes it read the list again.
func copyStack(src, dst string) error {
	for range 5 {
		list, err := os.ReadFile(filepath.Join(src, "tables.list"))
		if err != nil {
			return err
		}
		gone := false
		for _, name := range strings.Fields(string(list)) {
			if strings.Contains(name, "/") {
				return fmt.Errorf("%s: a table named %q", filepath.Join(src, "tables.list"), name)
			}
			from, to := filepath.Join(src, name), filepath.Join(dst, name)
			err := os.Link(from, to)
			if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EPERM) {
				var b []byte
				if b, err = os.ReadFile(from); err == nil {
					err = os.WriteFile(to, b, 0o444)
				}
			}
			if errors.Is(err, os.ErrNotExist) {
				gone = true
				break
			}
			if err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
		}
		if !gone {
			return os.WriteFile(filepath.Join(dst, "tables.list"), list, 0o644)
		}
	}
	return fmt.Errorf("%s changed five times while it was copied", src)
}
