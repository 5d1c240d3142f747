package wrapper

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
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
// command runs in one of its own in which the common dir is a private
// directory (the shadow, in its private TMPDIR) holding bind mounts of the
// real one's parts: objects, refs and logs writable, the command's own
// admin dir writable, everything else read-only, and inside refs/ and
// logs/ the heads, tags, replace, notes and every other ref directory
// read-only again except the directory of the task's branch. Lock files
// the command makes in the shadow's root (packed-refs.lock) are its own and
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

// mountStep is one bind mount of the command's namespace: src on dst,
// read-only when ro.
type mountStep struct {
	src, dst string
	ro       bool
}

// refGuard is how a confined command's refs are guarded.
type refGuard struct {
	mode string
	// shadow is the private common dir mounted over the real one (mount
	// namespace only).
	shadow string
	// steps are the mounts, in order (mount namespace only).
	steps []mountStep
	// branchDir is the ref directory of the task's branch ("" for a
	// detached worktree), relative to the common dir.
	branchDir string
	// ownDir is true when branchDir is the task's own (task-dir layout).
	ownDir bool
	// readOnly lists what stays read-only, for --explain.
	readOnly []string
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

// guardedRefDirs are the ref directories made read-only inside refs/ (and
// logs/refs/), made if missing so that a command cannot create them: a
// replace or notes ref made by the command would change what every
// checkout sees.
var guardedRefDirs = []string{"heads", "tags", "replace", "notes"}

// planRefGuard plans how the refs of common are guarded for a command in
// the worktree whose admin dir is gitDir, on branch (its allocation's
// branch, "" when detached), with shadowParent as the directory the
// shadow common dir is made in. It makes the directories the plan needs
// (the shadow and its mount points; missing guarded ref directories and
// the branch's ref and reflog directories in the real common dir, all
// empty, which git ignores).
func planRefGuard(common, gitDir, branch, shadowParent string, ns bool) (*refGuard, error) {
	g := &refGuard{mode: refGuardLandlock, branchDir: taskRefDir(branch), ownDir: ownRefDir(branch)}
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
	g.mode = refGuardNS
	g.shadow = filepath.Join(shadowParent, ".wt-common")
	if err := os.Mkdir(g.shadow, 0o700); err != nil {
		return nil, decision.Wrap(decision.ConfinementUnavailable, err, "make the command's private common dir")
	}
	ents, err := os.ReadDir(common)
	if err != nil {
		return nil, decision.Wrap(decision.ConfinementUnavailable, err, "list %s", common)
	}
	writable := map[string]bool{"objects": true, "refs": true, "logs": true}
	var later []mountStep
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, ".lock") {
			continue // someone's lock of the moment: not the command's to see as a file of its own
		}
		src, dst := filepath.Join(common, name), filepath.Join(g.shadow, name)
		fi, err := os.Lstat(src)
		if err != nil {
			continue // gone since the listing
		}
		switch {
		case fi.IsDir():
			err = os.Mkdir(dst, 0o700)
		case fi.Mode().IsRegular():
			err = mkEmpty(dst)
		default:
			continue // a symlink or special file in a common dir: not git's, not shown
		}
		if err != nil {
			return nil, decision.Wrap(decision.ConfinementUnavailable, err, "make the mount point %s", dst)
		}
		g.steps = append(g.steps, mountStep{src: src, dst: dst, ro: !writable[name]})
		if !writable[name] && name != "worktrees" {
			g.readOnly = append(g.readOnly, name)
		}
	}
	// The command's own admin dir, writable inside the read-only worktrees/.
	if rel, err := filepath.Rel(common, gitDir); err == nil && !strings.HasPrefix(rel, "..") {
		later = append(later, mountStep{src: gitDir, dst: filepath.Join(g.shadow, rel)})
		g.readOnly = append(g.readOnly, "worktrees (but its own admin dir)")
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
			later = append(later, mountStep{src: filepath.Join(common, rel), dst: filepath.Join(g.shadow, rel), ro: true})
			g.readOnly = append(g.readOnly, rel)
		}
	}
	if g.branchDir != "" {
		// Bound from the real, writable directory, on top of the read-only
		// heads (its source is read before the read-only mounts hide it:
		// the steps run in order, but each src is a real path).
		for _, rel := range []string{g.branchDir, filepath.Join("logs", g.branchDir)} {
			later = append(later, mountStep{src: filepath.Join(common, rel), dst: filepath.Join(g.shadow, rel)})
		}
	}
	g.steps = append(g.steps, later...)
	// Last: the shadow over the real common dir.
	g.steps = append(g.steps, mountStep{src: g.shadow, dst: common})
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
	for _, s := range g.steps {
		if err := unix.Mount(s.src, s.dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s on %s: %w", s.src, s.dst, err)
		}
		if !s.ro {
			continue // every writable source is a real path, bound before the shadow covers the common dir: writable as it is
		}
		if err := unix.Mount("", s.dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
			return fmt.Errorf("remount %s read-only: %w", s.dst, err)
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
