package wrapper

import (
	"bytes"
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

// A confined command's git must be able to write its own task branch, its
// reflog, the remote-tracking refs, the stash and the objects it makes, and
// must not be able to write any other ref: the publication branch, other
// branches, tags, refs/replace, refs/notes, wt's archive refs or
// packed-refs. Landlock alone cannot draw that line: its rights cover a
// whole directory tree and only allow, git updates a ref by creating
// <ref>.lock in the ref's own directory, the stash is refs/stash (in refs/
// itself), and deleting any ref (cherry-pick's CHERRY_PICK_HEAD included)
// takes packed-refs.lock in the common dir's root.
//
// Where wt-exec may make a mount namespace (CAP_SYS_ADMIN: root), the
// command runs in one of its own in which the common dir is a private view
// (a tmpfs over it) holding bind mounts of the real one's parts: objects, refs and logs writable, the command's own
// admin dir writable, everything else read-only, and inside refs/ and
// logs/ the heads, tags, replace, notes and every other ref directory
// read-only again except the directory of the task's branch. Lock files
// the command makes in the view's root (packed-refs.lock) are its own and
// vanish with it; config and packed-refs are read-only mounts, so writing
// them fails as it did before. Landlock's own rules, and its ban on
// mounting and unmounting, keep the command from undoing any of it.
//
// Without a mount namespace (not root) only Landlock draws the line: the
// task branch's directory and refs/remotes are writable, refs/ itself and
// the common dir's root are not, so the stash and every ref deletion fail
// with "Permission denied" (docs/design.md, "Refs under confinement").

// refGuardNS and refGuardLandlock name the two ways refs are guarded.
const (
	refGuardNS       = "mount namespace"
	refGuardLandlock = "landlock only"
)

// mountStep is one bind mount of the command's namespace: the common
// dir's part rel, from the real common dir onto the same place in the
// command's view of it, read-only when ro; point when its mount point is
// made first (an entry of the common dir's root; dir when a directory).
type mountStep struct {
	rel            string
	ro, point, dir bool
}

// refGuard is how a confined command's refs are guarded.
type refGuard struct {
	mode string
	// common is the common dir the namespace's view covers, with the
	// real one's mode and owner (mount namespace only).
	common           string
	rootMode         uint32
	rootUID, rootGID uint32
	// steps are the mounts, in order (mount namespace only).
	steps []mountStep
	// branchDir is the ref directory of the task's branch ("" for a
	// detached worktree), relative to the common dir.
	branchDir string
	// ownDir is true when branchDir is the task's own (task-dir layout).
	ownDir bool
	// agent is the agent profile's plan, whose protected and private
	// files are mounts of the namespace.
	agent *agentPlan
	// readOnly lists what stays read-only, for --explain.
	readOnly []string
	// reftable is set in a reftable repository: every ref is in one
	// table stack (reftable/), which git rewrites whole for any update,
	// so no path rule can keep one ref from the command and give it
	// another; the stack is writable as a whole.
	reftable bool
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

// checkBranchDir refuses a confinement whose writable ref directory would
// hold the publication branch (a task branch with no directory of its own,
// such as "feature" beside "main"): the kernel grants directories, so the
// publication branch would be writable.
func checkBranchDir(branch, publication string) error {
	dir := taskRefDir(branch)
	if dir == "" || publication == "" || !strings.HasPrefix("refs/heads/"+publication, dir+"/") {
		return nil
	}
	return decision.New(decision.ConfinementConflict, "branch %s keeps its ref in %s/, which also holds the publication branch %s: a confined command could move %s", branch, dir, publication, publication).
		WithHint("allocate the task on a branch in a directory of its own: wt-admin allocate --task KEY --owner NAME --branch wt/KEY/work PATH")
}

// ownRefDir reports whether branch has a ref directory no other task's
// default branch shares: the task-dir layout's wt/<task>/work.
func ownRefDir(branch string) bool {
	return strings.HasPrefix(branch, "wt/") && strings.HasSuffix(branch, "/work") && len(branch) > len("wt//work")
}

// canonicalOnly are the entries of a common dir's root that are the
// canonical checkout's own state (its index, messages, fetch and merge
// heads) or that only gitweb and old remotes read: no git in a linked
// worktree reads them, so the command's view of the common dir leaves
// them out (one mount fewer each, and the operator's index unseen).
var canonicalOnly = map[string]bool{"index": true, "COMMIT_EDITMSG": true, "FETCH_HEAD": true, "ORIG_HEAD": true,
	"MERGE_MSG": true, "MERGE_MODE": true, "SQUASH_MSG": true, "AUTO_MERGE": true, "description": true, "branches": true, "gitk.cache": true}

// guardedRefDirs are the ref directories made read-only inside refs/ (and
// logs/refs/), made if missing so that a command cannot create them: a
// replace or notes ref made by the command would change what every
// checkout sees.
var guardedRefDirs = []string{"heads", "tags", "replace", "notes"}

// planRefGuard plans how the refs of common are guarded for a command in
// the worktree whose admin dir is gitDir, on branch (its allocation's
// branch, "" when detached), ns when in a mount namespace. It makes the
// directories the plan needs in the real common dir (missing guarded ref
// directories and the branch's ref and reflog directories, all empty,
// which git ignores); the namespace's mount points are made in it by
// enterMountNS.
func planRefGuard(common, gitDir, branch string, ns bool) (*refGuard, error) {
	g := &refGuard{mode: refGuardLandlock, branchDir: taskRefDir(branch), ownDir: ownRefDir(branch)}
	if gitrepo.Reftable(common) {
		return planTableGuard(g, common, gitDir, ns)
	}
	dirs := []string{filepath.Join(common, "refs", "remotes"), filepath.Join(common, "logs", "refs", "remotes")}
	for _, d := range guardedRefDirs {
		dirs = append(dirs, filepath.Join(common, "refs", d))
	}
	if g.branchDir != "" {
		dirs = append(dirs, filepath.Join(common, g.branchDir), filepath.Join(common, "logs", g.branchDir))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, decision.Wrap(decision.ConfinementUnavailable, err, "make the ref directory %s", d)
		}
	}
	if !ns {
		g.readOnly = []string{"refs/ and the common dir's root: the stash and ref deletions fail (no mount namespace: wt-exec is not root)"}
		return g, nil
	}
	later, err := g.planRoot(common, gitDir, map[string]bool{"objects": true, "refs": true, "logs": true})
	if err != nil {
		return nil, err
	}
	for _, base := range []string{"refs", filepath.Join("logs", "refs")} {
		ents, err := os.ReadDir(filepath.Join(common, base))
		if err != nil {
			continue // no logs/refs yet
		}
		for _, e := range ents {
			if !e.IsDir() || e.Name() == "remotes" {
				continue
			}
			rel := filepath.Join(base, e.Name())
			later = append(later, mountStep{rel: rel, ro: true})
			g.readOnly = append(g.readOnly, rel)
		}
	}
	if g.branchDir != "" {
		// Bound from the real, writable directory, on top of the read-only
		// heads: every source is taken from the real common dir's tree,
		// never from the mounts made before it.
		for _, rel := range []string{g.branchDir, filepath.Join("logs", g.branchDir)} {
			later = append(later, mountStep{rel: rel})
		}
	}
	g.steps = append(g.steps, later...)
	return g, nil
}

// planRoot plans the namespace's view of the common dir's root: each
// entry a mount point, read-only but for those named writable, and the
// command's own admin dir writable inside the read-only worktrees/ (in
// the steps returned, to be made after the root's).
func (g *refGuard) planRoot(common, gitDir string, writable map[string]bool) ([]mountStep, error) {
	g.mode = refGuardNS
	g.common = common
	var st unix.Stat_t
	if err := unix.Stat(common, &st); err != nil {
		return nil, decision.Wrap(decision.ConfinementUnavailable, err, "stat %s", common)
	}
	g.rootMode, g.rootUID, g.rootGID = st.Mode&0o7777, st.Uid, st.Gid
	ents, err := os.ReadDir(common)
	if err != nil {
		return nil, decision.Wrap(decision.ConfinementUnavailable, err, "list %s", common)
	}
	var later []mountStep
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, ".lock") {
			continue // someone's lock of the moment: not the command's to see as a file of its own
		}
		if canonicalOnly[name] {
			continue
		}
		var dir bool
		switch t := e.Type(); {
		case t.IsDir():
			dir = true
		case t.IsRegular():
		default:
			continue // a symlink or special file in a common dir: not git's, not shown
		}
		g.steps = append(g.steps, mountStep{rel: name, ro: !writable[name], point: true, dir: dir})
		if !writable[name] && name != "worktrees" {
			g.readOnly = append(g.readOnly, name)
		}
	}
	// The command's own admin dir, writable inside the read-only worktrees/.
	if rel, err := filepath.Rel(common, gitDir); err == nil && !strings.HasPrefix(rel, "..") {
		later = append(later, mountStep{rel: rel})
		g.readOnly = append(g.readOnly, "worktrees (but its own admin dir)")
	}
	return later, nil
}

// planTableGuard is planRefGuard in a reftable repository: the table
// stack, where every ref lives, is writable as a whole (another task's
// branch, the publication branch, tags: all are the command's to move,
// hooks or no hooks); the rest of the common dir as in the files
// backend. --explain says so (explain).
func planTableGuard(g *refGuard, common, gitDir string, ns bool) (*refGuard, error) {
	g.reftable = true
	if !ns {
		return g, nil
	}
	later, err := g.planRoot(common, gitDir, map[string]bool{"objects": true, "reftable": true})
	if err != nil {
		return nil, err
	}
	g.steps = append(g.steps, later...)
	return g, nil
}

func mkEmpty(p string) error {
	fd, err := unix.Open(p, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &os.PathError{Op: "create", Path: p, Err: err}
	}
	return unix.Close(fd)
}

// enterMountNS puts the calling thread (locked, about to fork the
// command) in a mount namespace of its own and makes the guard's mounts
// there. Mounts propagate into it from the host (slave), never out.
//
// The common dir's view is a tmpfs mounted over it, so that lock files the
// command makes in its root (packed-refs.lock) are its own and vanish with
// the namespace, and nothing is made or removed on disk. Each part of the
// real common dir is cloned from a detached copy of its mount tree
// (open_tree), taken before the tmpfs covers it, and moved onto a mount
// point made in the tmpfs.
func (g *refGuard) enterMountNS() error {
	if g == nil || g.mode != refGuardNS {
		return nil
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare the mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("make the mount namespace a slave: %w", err)
	}
	// Two detached copies of the real common dir's mount tree: one as it
	// is, one read-only throughout, so that a read-only part is a clone of
	// the second and needs no call of its own to be made read-only.
	var trees [2]int
	for i := range trees {
		t, err := unix.OpenTree(unix.AT_FDCWD, g.common, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return fmt.Errorf("clone the mount tree of %s: %w", g.common, err)
		}
		defer unix.Close(t)
		trees[i] = t
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(trees[1], "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("make a read-only copy of %s: %w", g.common, err)
	}
	opts := fmt.Sprintf("mode=%o,uid=%d,gid=%d,size=1m,nr_inodes=4096", g.rootMode, g.rootUID, g.rootGID)
	if err := unix.Mount("wt-common", g.common, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount the command's view of %s: %w", g.common, err)
	}
	for _, s := range g.steps {
		dst := filepath.Join(g.common, s.rel)
		if s.point {
			var err error
			if s.dir {
				err = os.Mkdir(dst, 0o700)
			} else {
				err = mkEmpty(dst)
			}
			if err != nil {
				return fmt.Errorf("make the mount point %s: %w", dst, err)
			}
		}
		tree := trees[0]
		if s.ro {
			tree = trees[1]
		}
		src, err := unix.OpenTree(tree, s.rel, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			continue // gone since the listing
		}
		if err != nil {
			return fmt.Errorf("clone %s: %w", s.rel, err)
		}
		err = unix.MoveMount(src, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH)
		unix.Close(src)
		if err != nil {
			return fmt.Errorf("mount %s on %s: %w", s.rel, dst, err)
		}
	}
	return g.agentMounts()
}

// agentMounts makes the agent profile's mounts: each protected file or
// directory read-only over itself, each private copy over its file.
func (g *refGuard) agentMounts() error {
	if g.agent == nil {
		return nil
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
	if g.reftable {
		return append(out, "  refs     writable: every ref: a reftable repository keeps them in one table stack, which no path rule can divide")
	}
	if g.branchDir != "" {
		out = append(out, "  refs     writable: "+g.branchDir+"/ (its branch's directory), refs/remotes, its own refs and HEAD"+map[bool]string{true: ", refs/stash", false: ""}[g.mode == refGuardNS])
		if !g.ownDir {
			out = append(out, "  refs     shared: other branches in "+g.branchDir+"/ (other tasks' in the flat layout) are writable too; wt-admin policy --branch-layout task-dir gives each new task a directory of its own")
		}
	}
	for _, r := range g.readOnly {
		out = append(out, "  read-only "+r)
	}
	return out
}
