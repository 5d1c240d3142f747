package gitrepo

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/wt-tool/wt/core/safefile"
)

// RefValues are where a shared ref stands in the files backend: its loose
// file and its packed-refs entry, each "" when absent. Reading them lets
// the reference-transaction gate tell a transaction that changes what a ref
// resolves to from one that only moves it between the two stores (git
// pack-refs reports packing as creations in packed-refs and then deletions
// of the loose files, with the same object name).
type RefValues struct {
	Loose, Packed string
}

// Current is what the ref resolves to now: the loose value wins.
func (v RefValues) Current() string {
	if v.Loose != "" {
		return v.Loose
	}
	return v.Packed
}

// ReadRefValues reads ref (a full name under refs/) from the common dir,
// without running git. A loose ref that is symbolic is returned as
// "ref:<target>". Errors other than absence are returned: an unreadable
// ref is never taken for a missing one.
func ReadRefValues(commonDir, ref string) (RefValues, error) {
	var v RefValues
	var err error
	if v.Loose, err = readLoose(commonDir, ref); err != nil {
		return v, err
	}
	v.Packed, err = readPacked(commonDir, ref)
	return v, err
}

// ReadRef is what ref resolves to now (RefValues.Current), reading
// packed-refs only when there is no loose file: what a gate on every
// commit asks, at the cost of one small file.
func ReadRef(commonDir, ref string) (string, error) {
	v, err := readLoose(commonDir, ref)
	if err != nil || v != "" {
		return v, err
	}
	return readPacked(commonDir, ref)
}

// readLoose is ref's loose value, "" when it has no loose file.
func readLoose(commonDir, ref string) (string, error) {
	if !strings.HasPrefix(ref, "refs/") || strings.Contains(ref, "..") {
		return "", errors.New("not a shared ref name: " + ref)
	}
	b, err := readGitFile(filepath.Join(commonDir, filepath.FromSlash(ref)))
	switch {
	case err == nil:
		s := strings.TrimRight(string(b), "\r\n")
		if t, ok := strings.CutPrefix(s, "ref: "); ok {
			s = "ref:" + t
		}
		return s, nil
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return "", nil // absent (ENOTDIR: refs/heads/a is a file when refs/heads/a/b is asked)
	default:
		return "", err
	}
}

// readPacked is ref's packed-refs entry, "" when it has none.
func readPacked(commonDir, ref string) (string, error) {
	f, _, err := safefile.Open(filepath.Join(commonDir, "packed-refs"), safefile.Follows)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close() // Best effort: read only.
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	suffix := []byte(" " + ref)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] == '#' || line[0] == '^' {
			continue
		}
		if bytes.HasSuffix(line, suffix) && bytes.IndexByte(line, ' ') == len(line)-len(suffix) {
			return string(line[:len(line)-len(suffix)]), nil
		}
	}
	return "", sc.Err()
}

// maxGitFile bounds the admin files wt reads (HEAD, gitdir, commondir, a
// lock's reason, a loose ref): git writes a line into each.
const maxGitFile = 64 << 10

// readGitFile reads one of git's small admin files as a regular file of at
// most maxGitFile bytes, never blocking on a FIFO planted at its path (see
// core/safefile). git follows symlinks there, and so does wt.
func readGitFile(p string) ([]byte, error) {
	return safefile.Read(p, maxGitFile, safefile.Follows)
}

// OnBranch reports whether a checkout (detached or on branch, with git dir
// gitDir) counts as on branch want: checked out, or detached by a rebase of
// it in progress (git's head-name names it), so that its writer can finish
// the rebase.
func OnBranch(detached bool, branch, gitDir, want string) bool {
	if !detached {
		return branch == want
	}
	return RebaseHeadName(gitDir) == "refs/heads/"+want
}

// RebaseHeadName returns the branch ref a rebase in progress in the checkout
// whose git dir is gitDir works on (git keeps it in rebase-merge/head-name
// or rebase-apply/head-name while HEAD is detached), or "".
func RebaseHeadName(gitDir string) string {
	for _, d := range []string{"rebase-merge", "rebase-apply"} {
		b, err := readGitFile(filepath.Join(gitDir, d, "head-name"))
		if err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	return ""
}

// HeadCommit is the commit the checkout whose git dir is gitDir has
// checked out, read from its HEAD (a branch through the common dir's
// refs) without running git; "" for a branch with no commit yet.
func HeadCommit(gitDir, commonDir string) (string, error) {
	b, err := readGitFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", err
	}
	head := strings.TrimSpace(string(b))
	if ref, ok := strings.CutPrefix(head, "ref: "); ok {
		return ReadRef(commonDir, ref)
	}
	return head, nil
}

// FullObjectName reports whether s is a full object name: 40 (SHA-1) or
// 64 (SHA-256) lowercase hex digits.
func FullObjectName(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
