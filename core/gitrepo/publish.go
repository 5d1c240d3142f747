package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wt-tool/wt/core/safefile"
)

// What wt-exec runs to publish a confined run's branch from its private
// view (wrapper/confine): every git here runs on the repository's real
// common dir, addressed as its git dir (--git-dir), so that it reads the
// repository's own config and nothing of a worktree's or of the view's,
// which the run could have written; and with hooks off (HooksOff).

// gitDirArgs are the arguments that run git on the common dir alone.
func gitDirArgs(common string, args ...string) []string {
	return slices.Concat([]string{"--git-dir=" + common}, HooksOff, args)
}

// unpackLimit is the size of a publication below which its objects are
// written loose (git unpack-objects), as a fetch does (fetch.unpackLimit),
// and at or above which they are kept as a pack (git index-pack).
const unpackLimit = 100

// ImportObjects copies into the repository whose common dir is common
// every object reachable from tips and not from not, reading them from the
// repository's own objects and from the directory from (an objects dir,
// as an alternate): git pack-objects packs them, and git index-pack or
// unpack-objects, in the repository, checks every object against its
// name as it writes it. Nothing existing is replaced or removed. It
// returns how many objects it wrote (0 when every one was there).
func ImportObjects(ctx context.Context, common, from string, tips, not []string) (int, error) {
	var in bytes.Buffer
	for _, t := range tips {
		fmt.Fprintln(&in, t)
	}
	for _, n := range not {
		if n != "" {
			fmt.Fprintln(&in, "^"+n)
		}
	}
	return packInto(ctx, common, from, &in, "--revs")
}

// packInto runs git pack-objects (with args) on the object names or revs
// of in, with from as an alternate, into git index-pack or unpack-objects
// in the repository of common.
func packInto(ctx context.Context, common, from string, in io.Reader, args ...string) (int, error) {
	pack := exec.CommandContext(ctx, "git", slices.Concat(neutral, gitDirArgs(common, append([]string{"pack-objects", "--stdout", "-q", "--delta-base-offset"}, args...)...))...)
	pack.Env = append(gitEnv(true), "GIT_ALTERNATE_OBJECT_DIRECTORIES="+from)
	pack.Stdin = in
	var packErr bytes.Buffer
	pack.Stderr = &packErr
	out, err := pack.StdoutPipe()
	if err != nil {
		return 0, fmt.Errorf("run git pack-objects: %w", err)
	}
	if err := pack.Start(); err != nil {
		return 0, fmt.Errorf("run git pack-objects: %w", err)
	}
	// The pack's header says how many objects follow: "PACK", version,
	// count, each 4 bytes.
	head := make([]byte, 12)
	_, rerr := io.ReadFull(out, head)
	if rerr != nil {
		_, _ = io.Copy(io.Discard, out) // Best effort: let pack-objects end.
		if werr := pack.Wait(); werr != nil {
			return 0, &Error{Args: []string{"pack-objects"}, ExitCode: exitCode(werr), Stderr: packErr.String()}
		}
		return 0, fmt.Errorf("git pack-objects: %w", rerr)
	}
	n := int(head[8])<<24 | int(head[9])<<16 | int(head[10])<<8 | int(head[11])
	writer := []string{"index-pack", "--stdin"}
	if n < unpackLimit {
		writer = []string{"unpack-objects", "-q"}
	}
	write := exec.CommandContext(ctx, "git", slices.Concat(neutral, gitDirArgs(common, writer...))...)
	write.Env = gitEnv(false)
	write.Stdin = io.MultiReader(bytes.NewReader(head), out)
	var writeErr bytes.Buffer
	write.Stderr = &writeErr
	werr := write.Run()
	_, _ = io.Copy(io.Discard, out) // Best effort: what a failed writer left unread.
	perr := pack.Wait()
	if perr != nil {
		return 0, &Error{Args: []string{"pack-objects"}, ExitCode: exitCode(perr), Stderr: packErr.String()}
	}
	if werr != nil {
		return 0, &Error{Args: writer, ExitCode: exitCode(werr), Stderr: writeErr.String()}
	}
	return n, nil
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// Connected reports whether every object reachable from tip and not from
// not is in the repository of common (git rev-list --objects): what must
// hold before a ref names tip.
func Connected(ctx context.Context, common, tip string, not []string) error {
	args := []string{"rev-list", "--objects", "--quiet", tip}
	for _, n := range not {
		if n != "" {
			args = append(args, "^"+n)
		}
	}
	_, err := run(ctx, common, true, gitDirArgs(common, args...)...)
	return err
}

// MoveRef moves ref from old to new in the repository of common, only if
// it is at old (git's compare-and-swap; old "" for a ref that must not
// exist), with msg in its reflog.
func MoveRef(ctx context.Context, common, ref, new, old, msg string) error {
	if old == "" {
		old = strings.Repeat("0", len(new))
	}
	_, err := run(ctx, common, false, gitDirArgs(common, "update-ref", "--no-deref", "-m", msg, ref, new, old)...)
	return err
}

// IsAncestorIn reports whether commit a is an ancestor of (or equal to)
// b in the repository of common.
func IsAncestorIn(ctx context.Context, common, a, b string) (bool, error) {
	_, err := run(ctx, common, true, gitDirArgs(common, "merge-base", "--is-ancestor", "--end-of-options", a, b)...)
	var ge *Error
	if errors.As(err, &ge) && ge.ExitCode == 1 {
		return false, nil
	}
	return err == nil, err
}

// ListRefsOf lists the shared refs (name to object name) that the refs of
// the directory refsDir hold, read by git with the configuration of the
// repository of common: a git dir is made for it in a temporary directory,
// holding a copy of common's config and HEAD, links to refsDir's refs,
// packed-refs and reftable, and to common's objects. This is how wt-exec
// reads a confined run's view of the refs without running git on the
// view's own configuration, which the run could have written.
func ListRefsOf(ctx context.Context, common, refsDir string) (map[string]string, error) {
	list := func(gitDir string) (map[string]string, error) {
		out, err := run(ctx, gitDir, true, gitDirArgs(gitDir, "for-each-ref", "--format=%(objectname) %(refname)")...)
		if err != nil {
			return nil, err
		}
		return parseRefList(out), nil
	}
	if refsDir == common {
		return list(common) // the repository's own refs need no stand-in git dir
	}
	tmp, err := os.MkdirTemp("", "wt-refs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp) // Best effort: a temporary directory of links.
	for _, f := range []string{"config", "HEAD"} {
		b, err := os.ReadFile(filepath.Join(common, f))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o600); err != nil {
			return nil, err
		}
	}
	if err := os.Symlink(filepath.Join(common, "objects"), filepath.Join(tmp, "objects")); err != nil {
		return nil, err
	}
	for _, e := range []string{"refs", "packed-refs", "reftable"} {
		if _, err := os.Lstat(filepath.Join(refsDir, e)); err != nil {
			continue
		}
		if err := os.Symlink(filepath.Join(refsDir, e), filepath.Join(tmp, e)); err != nil {
			return nil, err
		}
	}
	if _, err := os.Lstat(filepath.Join(tmp, "refs")); err != nil {
		if err := os.Mkdir(filepath.Join(tmp, "refs"), 0o700); err != nil {
			return nil, err
		}
	}
	return list(tmp)
}

// ImportAll copies into the repository of common every object of the
// objects dir from that the repository lacks: its loose objects and those
// of its packs (listed by git show-index), each checked against its name
// as git writes it (see ImportObjects). What a confined run's view holds
// and no published ref reaches (its index's blobs, its stash, the commits
// its worktree's HEAD reflog names) is kept this way when the view goes.
func ImportAll(ctx context.Context, common, from string) (int, error) {
	var names []string
	fan, err := os.ReadDir(from)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil // the run made no object
	}
	if err != nil {
		return 0, err
	}
	for _, d := range fan {
		if len(d.Name()) != 2 || !d.IsDir() {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(from, d.Name()))
		if err != nil {
			return 0, err
		}
		for _, e := range ents {
			if n := d.Name() + e.Name(); FullObjectName(n) && e.Type().IsRegular() {
				names = append(names, n)
			}
		}
	}
	idx, _ := filepath.Glob(filepath.Join(from, "pack", "pack-*.idx"))
	for _, f := range idx {
		// A confined run's file: never a blocking read of what it planted.
		b, err := safefile.Read(f, 1<<32, safefile.NoFollow)
		if errors.Is(err, safefile.ErrNotRegular) || errors.Is(err, safefile.ErrSymlink) {
			continue // not a pack's index (a FIFO planted there): nothing of git's
		}
		if err != nil {
			return 0, err
		}
		cmd := exec.CommandContext(ctx, "git", slices.Concat(neutral, []string{"show-index"})...)
		cmd.Env = gitEnv(true)
		cmd.Stdin = bytes.NewReader(b)
		out, err := cmd.Output()
		if err != nil {
			return 0, fmt.Errorf("git show-index %s: %w", f, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && FullObjectName(f[1]) {
				names = append(names, f[1])
			}
		}
	}
	if len(names) == 0 {
		return 0, nil
	}
	// Those the repository has already are not copied again.
	absent, err := batchAbsent(ctx, slices.Concat(neutral, gitDirArgs(common, "cat-file", "--batch-check=%(objectname)")), names)
	if err != nil {
		return 0, err
	}
	var missing bytes.Buffer
	for _, n := range absent {
		fmt.Fprintln(&missing, n)
	}
	if missing.Len() == 0 {
		return 0, nil
	}
	return packInto(ctx, common, from, &missing, "--missing=allow-any")
}
