package gitrepo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/wt-tool/wt/core/gitrepo/reftable"
	"github.com/wt-tool/wt/core/safefile"
)

// Refs live in one of git's two ref backends (git's "ref storage
// format"): the files backend (a loose file per ref under refs/, and
// packed-refs; reflogs under logs/) or reftable (git 2.45 and later:
// every ref and reflog in the table stack under reftable/, per-worktree
// refs such as HEAD in the worktree's own reftable/; HEAD and refs/heads
// left as stubs that older gits recognise). wt reads both itself, without
// a git process: the commit gate reads a worktree's HEAD and one branch on
// every commit, where starting git would cost more than the whole judgement
// (docs/design.md, "Reading refs"). Nothing here writes a ref.

// Reftable reports whether the repository with common dir commonDir keeps
// its refs in reftable: git's reftable backend keeps its stack in
// <common-dir>/reftable, which the files backend never makes.
func Reftable(commonDir string) bool {
	fi, err := os.Stat(filepath.Join(commonDir, "reftable"))
	return err == nil && fi.IsDir()
}

// RefValues are where a shared ref stands. In the files backend: its loose
// file and its packed-refs entry, each "" when absent. Reading them lets
// the reference-transaction gate tell a transaction that changes what a ref
// resolves to from one that only moves it between the two stores (git
// pack-refs reports packing as creations in packed-refs and then deletions
// of the loose files, with the same object name). In reftable, which has
// one store, the value is Loose and Packed is "".
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
// without running git. A ref that is symbolic is returned as
// "ref:<target>". Errors other than absence are returned: an unreadable
// ref is never taken for a missing one.
func ReadRefValues(commonDir, ref string) (RefValues, error) {
	var v RefValues
	if err := checkSharedRef(ref); err != nil {
		return v, err
	}
	var err error
	if Reftable(commonDir) {
		v.Loose, err = readTableRef(commonDir, ref)
		return v, err
	}
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
	if err := checkSharedRef(ref); err != nil {
		return "", err
	}
	if Reftable(commonDir) {
		return readTableRef(commonDir, ref)
	}
	v, err := readLoose(commonDir, ref)
	if err != nil || v != "" {
		return v, err
	}
	return readPacked(commonDir, ref)
}

func checkSharedRef(ref string) error {
	if !strings.HasPrefix(ref, "refs/") || strings.Contains(ref, "..") {
		return errors.New("not a shared ref name: " + ref)
	}
	return nil
}

// readTableRef reads name from the reftable stack in dir's reftable/: its
// object name, "ref:<target>" when symbolic, "" when absent.
func readTableRef(dir, name string) (string, error) {
	s, err := reftable.Open(filepath.Join(dir, "reftable"))
	if err != nil {
		return "", err
	}
	defer s.Close()
	return tableRef(s, name)
}

// tableRef is name in stack s as readTableRef gives it.
func tableRef(s *reftable.Stack, name string) (string, error) {
	r, ok, err := s.Ref(name)
	switch {
	case err != nil || !ok:
		return "", err
	case r.Target != "":
		return "ref:" + r.Target, nil
	default:
		return r.OID, nil
	}
}

// readLoose is ref's loose value, "" when it has no loose file.
func readLoose(commonDir, ref string) (string, error) {
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

// Head is where a checkout's HEAD points: a ref (symbolic) or a commit
// (detached).
type Head struct {
	// Target is the full name of the ref HEAD names ("" when detached).
	Target string
	// OID is the commit of a detached HEAD.
	OID string
}

// Branch is the short name of the branch HEAD is on, "" when it is
// detached or names something other than a branch.
func (h Head) Branch() string {
	if b, ok := strings.CutPrefix(h.Target, "refs/heads/"); ok {
		return b
	}
	return ""
}

// reftableStub is what the reftable backend writes in a HEAD file, for
// older gits to recognise the directory as a repository: never a branch
// (a ref name component cannot start with a dot).
const reftableStub = "ref: refs/heads/.invalid"

// ReadHead reads the HEAD of the checkout whose git dir is gitDir, without
// running git: from the HEAD file in the files backend, from the
// checkout's own table stack in reftable (gitDir/reftable: a linked
// worktree's per-worktree refs, or the shared stack for the main
// checkout). A HEAD that is the reftable stub in a repository without a
// stack is an error, never a branch named ".invalid".
func ReadHead(gitDir, commonDir string) (Head, error) {
	b, err := readGitFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return Head{}, err
	}
	head := strings.TrimRight(string(b), "\r\n")
	if head == reftableStub {
		if !Reftable(commonDir) {
			return Head{}, fmt.Errorf("HEAD of %s is the reftable stub, but %s has no reftable stack", gitDir, commonDir)
		}
		return readTableHead(gitDir)
	}
	if ref, ok := strings.CutPrefix(head, "ref: "); ok {
		return Head{Target: strings.TrimSpace(ref)}, nil
	}
	return Head{OID: strings.TrimSpace(head)}, nil
}

func readTableHead(gitDir string) (Head, error) {
	v, err := readTableRef(gitDir, "HEAD")
	switch {
	case err != nil:
		return Head{}, err
	case v == "":
		return Head{}, fmt.Errorf("the reftable stack of %s has no HEAD", gitDir)
	}
	if t, ok := strings.CutPrefix(v, "ref:"); ok {
		return Head{Target: t}, nil
	}
	return Head{OID: v}, nil
}

// HeadCommit is the commit the checkout whose git dir is gitDir has
// checked out, read from its HEAD (a branch through the common dir's
// refs) without running git; "" for a branch with no commit yet.
func HeadCommit(gitDir, commonDir string) (string, error) {
	h, err := ReadHead(gitDir, commonDir)
	if err != nil || h.Target == "" {
		return h.OID, err
	}
	return ReadRef(commonDir, h.Target)
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
