package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wt-tool/wt/core/decision"
)

// Repo is a non-bare repository, seen from one of its worktrees.
type Repo struct {
	// CommonDir is the absolute git common dir, shared by every worktree.
	CommonDir string
	// GitDir is the git dir of the worktree Dir is in (equal to CommonDir
	// in the main checkout).
	GitDir string
	// TopLevel is the root of the worktree Dir is in.
	TopLevel string
}

// Discover finds the repository containing dir with one git call.
// A directory outside any repository is NOT_A_GIT_REPOSITORY; a bare
// repository is BARE_REPOSITORY (wt governs worktrees of a repository that has
// a canonical checkout).
func Discover(ctx context.Context, dir string) (*Repo, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, decision.Say(decision.NotAGitRepository, "not-directory", dir).
			WithHint("pass --repo DIR naming a checkout of the repository")
	}
	out, err := run(ctx, dir, true, "rev-parse", "--path-format=absolute",
		"--git-common-dir", "--git-dir", "--is-bare-repository", "--show-toplevel")
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) >= 3 && lines[2] == "true" {
		return nil, decision.Say(decision.BareRepository, "bare-repository", dir).
			WithHint("run wt-admin from a repository with a checkout (git clone, not git clone --bare)")
	}
	if err != nil || len(lines) != 4 {
		var ge *Error
		if errors.As(err, &ge) {
			if len(lines) >= 3 && lines[2] == "false" {
				return nil, decision.Say(decision.NotAGitRepository, "inside-git", dir).
					WithHint("run it from a checkout of the repository")
			}
			if d := DiagnoseCheckout(dir); d != nil {
				return nil, d
			}
			return nil, decision.Say(decision.NotAGitRepository, "not-git-repository", dir).
				WithHint("pass --repo DIR naming a checkout of the repository, or run git init first")
		}
		if err == nil {
			err = fmt.Errorf("unexpected rev-parse output %q", out)
		}
		return nil, decision.SayWrap(decision.GitFailed, err, "discover-repository")
	}
	return &Repo{CommonDir: filepath.Clean(lines[0]), GitDir: filepath.Clean(lines[1]), TopLevel: filepath.Clean(lines[3])}, nil
}

// Git runs a git command in the repository's current worktree and returns
// its stdout. readOnly commands run with GIT_OPTIONAL_LOCKS=0.
func (r *Repo) Git(ctx context.Context, readOnly bool, args ...string) ([]byte, error) {
	return run(ctx, r.TopLevel, readOnly, args...)
}

// GitEnv runs a git command as Git does, with env added to its
// environment (and so to the hooks it runs).
func (r *Repo) GitEnv(ctx context.Context, env []string, args ...string) ([]byte, error) {
	return runEnv(ctx, r.TopLevel, false, env, args...)
}

// GitUnhooked runs a git command as Git does, with git's hooks off
// (core.hooksPath=/dev/null), for the few ref updates wt makes itself while
// it holds its store's exclusive lock (recovering an interrupted allocate):
// wt's own reference-transaction hook would wait for that lock.
func (r *Repo) GitUnhooked(ctx context.Context, args ...string) ([]byte, error) {
	return run(ctx, r.TopLevel, false, slices.Concat(HooksOff, args)...)
}

// HooksOff are the settings that switch off every hook a git command of
// wt's could run: the hooks dir (core.hooksPath) and, in git 2.54 and
// later, the hooks defined in configuration, wt's own among them, for
// each event such a command meets (git before 2.54 ignores the keys).
var HooksOff = []string{"-c", "core.hooksPath=/dev/null",
	"-c", "hook.reference-transaction.enabled=false", "-c", "hook.post-checkout.enabled=false",
	"-c", "hook.pre-commit.enabled=false", "-c", "hook.pre-push.enabled=false",
	"-c", "hook.post-index-change.enabled=false", "-c", "hook.pre-auto-gc.enabled=false"}

// ResolveCommit returns the full object name of the commit rev names, or
// false when rev names no commit.
func (r *Repo) ResolveCommit(ctx context.Context, rev string) (string, bool, error) {
	out, err := r.Git(ctx, true, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	var ge *Error
	if errors.As(err, &ge) && ge.ExitCode == 1 {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return string(bytes.TrimSpace(out)), true, nil
}

// BranchExists reports whether refs/heads/name exists.
func (r *Repo) BranchExists(ctx context.Context, name string) (bool, error) {
	_, err := r.Git(ctx, true, "show-ref", "--verify", "--quiet", "refs/heads/"+name)
	var ge *Error
	if errors.As(err, &ge) && ge.ExitCode == 1 {
		return false, nil
	}
	return err == nil, err
}

// ValidBranchName reports whether name is acceptable as a new branch name.
func (r *Repo) ValidBranchName(ctx context.Context, name string) bool {
	if name == "" || strings.HasPrefix(name, "-") {
		return false
	}
	_, err := r.Git(ctx, true, "check-ref-format", "refs/heads/"+name)
	return err == nil
}

// IsAncestor reports whether commit a is an ancestor of (or equal to) b.
func (r *Repo) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := r.Git(ctx, true, "merge-base", "--is-ancestor", "--end-of-options", a, b)
	var ge *Error
	if errors.As(err, &ge) && ge.ExitCode == 1 {
		return false, nil
	}
	return err == nil, err
}

// AddWorktree runs `git worktree add`: on a new branch created at base
// without upstream tracking, or detached at base when branch is "".
//
// marker ("NAME=VALUE") goes into git's environment, so that whoever finds
// the operation interrupted can tell whether this git still runs (see
// proc.Scan.CarryingEnv): a git outlives a killed caller. Its stderr goes
// to a temporary file, not a pipe, so a caller's death does not kill git
// with SIGPIPE half-way (git then removes what it had made, after the
// caller's journal may already have been judged).
func (r *Repo) AddWorktree(ctx context.Context, path, branch, base, marker string) error {
	args := []string{"worktree", "add", "--quiet"}
	if branch == "" {
		args = append(args, "--detach", path, base)
	} else {
		args = append(args, "--no-track", "-b", branch, path, base)
	}
	return runDetached(ctx, r.TopLevel, marker, args...)
}

// DeleteBranchAt deletes refs/heads/name only if it still points at commit
// (git's compare-and-delete), so a branch that gained work is never touched.
func (r *Repo) DeleteBranchAt(ctx context.Context, name, commit string) error {
	_, err := r.GitUnhooked(ctx, "update-ref", "-d", "refs/heads/"+name, commit)
	return err
}

// Refs returns every ref of the repository with the object it names
// (git for-each-ref): the snapshot that proves an operation moved no ref.
func (r *Repo) Refs(ctx context.Context) (map[string]string, error) {
	out, err := r.Git(ctx, true, "for-each-ref", "--format=%(objectname) %(refname)")
	if err != nil {
		return nil, err
	}
	return parseRefList(out), nil
}

// Symrefs returns every symbolic ref under refs/ with the ref it names
// (git for-each-ref's %(symref)); refs/remotes/*/HEAD among them.
func (r *Repo) Symrefs(ctx context.Context) (map[string]string, error) {
	out, err := r.Git(ctx, true, "for-each-ref", "--format=%(symref) %(refname)")
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if target, name, ok := strings.Cut(line, " "); ok && target != "" {
			refs[name] = target
		}
	}
	return refs, nil
}

// parseRefList reads for-each-ref's "%(objectname) %(refname)" lines.
func parseRefList(out []byte) map[string]string {
	refs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if oid, name, ok := strings.Cut(line, " "); ok {
			refs[name] = oid
		}
	}
	return refs
}

// RemoveWorktree runs `git worktree remove PATH`, never with --force: git
// refuses a worktree that is locked or holds changes. git checks the
// worktree's status with a git of its own that finds the common dir
// through the worktree's files, so they are verified first (key is the
// worktree's admin dir name; VerifyMetadata).
func (r *Repo) RemoveWorktree(ctx context.Context, key, path string) error {
	if err := VerifyMetadata(r.CommonDir, key, path); err != nil {
		return err
	}
	_, err := r.Git(ctx, false, "worktree", "remove", "--end-of-options", path)
	return err
}

// GitIn runs a git command in the governed linked worktree key, whose
// checkout is at path, with its git dir, common dir and work tree taken
// from the repository's own records (GIT_DIR, GIT_COMMON_DIR,
// GIT_WORK_TREE), never from the worktree's .git file or its admin dir's
// commondir, and only once VerifyMetadata has found them agreeing.
func (r *Repo) GitIn(ctx context.Context, key, path string, readOnly bool, args ...string) ([]byte, error) {
	if err := VerifyMetadata(r.CommonDir, key, path); err != nil {
		return nil, err
	}
	env := []string{"GIT_DIR=" + AdminDir(r.CommonDir, key), "GIT_COMMON_DIR=" + r.CommonDir, "GIT_WORK_TREE=" + path}
	return runEnv(ctx, path, readOnly, env, slices.Concat(HooksOff, args)...)
}

// Changes lists what `git status` reports in the governed worktree key at
// path (see GitIn): modified, staged, deleted and untracked files (ignored
// files are not listed; git worktree remove deletes them with the
// checkout), its submodules' own changes among them.
//
// A submodule's git dir lives in the worktree's admin dir, which a
// confined agent may write, and git status run into it would run the
// filters its config names (a clean filter is a program). So the
// superproject's status looks at its submodules' commits only
// (--ignore-submodules=dirty), and each populated submodule gets a status
// of its own with every filter driver its config names switched off on
// the command line (submoduleChanges).
func (r *Repo) Changes(ctx context.Context, key, path string) ([]string, error) {
	out, err := r.GitIn(ctx, key, path, true, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=dirty")
	if err != nil {
		return nil, err
	}
	changes := parseStatusZ(out)
	subs, err := r.GitIn(ctx, key, path, true, "ls-files", "-s", "-z")
	if err != nil {
		return nil, err
	}
	more, err := submoduleChanges(ctx, path, subs, 0)
	return append(changes, more...), err
}

// parseStatusZ reads git status --porcelain=v1 -z: an entry a change (a
// rename's or copy's source path is skipped).
func parseStatusZ(out []byte) []string {
	var changes []string
	fields := strings.Split(string(out), "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		changes = append(changes, f)
		if f[0] == 'R' || f[0] == 'C' {
			i++ // a rename's or copy's source path follows
		}
	}
	return changes
}

// submoduleChanges are the changes inside the populated submodules of the
// checkout at top (gitlinks of ls-files -s -z output), each path given
// from top, nested submodules too (depth bounds the nesting).
func submoduleChanges(ctx context.Context, top string, lsFiles []byte, depth int) ([]string, error) {
	if depth > 8 {
		return nil, fmt.Errorf("%s: submodules nested more than 8 deep", top)
	}
	var out []string
	for _, e := range strings.Split(string(lsFiles), "\x00") {
		meta, p, ok := strings.Cut(e, "\t")
		if !ok || !strings.HasPrefix(meta, "160000 ") {
			continue
		}
		sub := filepath.Join(top, p)
		if _, err := os.Lstat(filepath.Join(sub, ".git")); err != nil {
			continue // not populated: nothing of it to lose
		}
		off, err := filtersOff(ctx, sub)
		if err != nil {
			return nil, err
		}
		st, err := run(ctx, sub, true, slices.Concat(HooksOff, off, []string{"status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=all"})...)
		if err != nil {
			return nil, err
		}
		for _, c := range parseStatusZ(st) {
			out = append(out, c[:3]+filepath.Join(p, c[3:]))
		}
		ls, err := run(ctx, sub, true, slices.Concat(HooksOff, off, []string{"ls-files", "-s", "-z"})...)
		if err != nil {
			return nil, err
		}
		nested, err := submoduleChanges(ctx, sub, ls, depth+1)
		if err != nil {
			return nil, err
		}
		for _, c := range nested {
			out = append(out, c[:3]+filepath.Join(p, c[3:]))
		}
	}
	return out, nil
}

// filtersOff are the -c settings that switch off every filter driver the
// configuration of the repository at dir names (git config --list, its
// includes followed): an empty clean, smudge and process, not required.
func filtersOff(ctx context.Context, dir string) ([]string, error) {
	keys, err := run(ctx, dir, true, "config", "--list", "--name-only", "-z")
	if err != nil {
		return nil, err
	}
	var off []string
	seen := map[string]bool{}
	for _, k := range strings.Split(string(keys), "\x00") {
		rest, ok := strings.CutPrefix(strings.ToLower(k), "filter.")
		if !ok {
			continue
		}
		i := strings.LastIndex(rest, ".")
		if i < 0 {
			continue
		}
		name := k[len("filter.") : len("filter.")+i]
		if seen[name] {
			continue
		}
		seen[name] = true
		for _, v := range []string{"clean=", "smudge=", "process=", "required=false"} {
			off = append(off, "-c", "filter."+name+"."+v)
		}
	}
	return off, nil
}

// CreateRef creates ref at commit, only if ref does not exist yet (git's
// compare-and-swap against the null object), with hooks off: wt writes its
// own refs under its store's exclusive lock.
func (r *Repo) CreateRef(ctx context.Context, ref, commit string) error {
	_, err := r.GitUnhooked(ctx, "update-ref", "--no-deref", "-m", "wt: archive", ref, commit, strings.Repeat("0", len(commit)))
	return err
}

// CountOnly counts the commits reachable from tip and not from other.
func (r *Repo) CountOnly(ctx context.Context, tip, other string) (int, error) {
	out, err := r.Git(ctx, true, "rev-list", "--count", tip, "--not", other)
	if err != nil {
		return 0, err
	}
	n := 0
	_, err = fmt.Sscanf(strings.TrimSpace(string(out)), "%d", &n)
	return n, err
}

// ValidRefName reports whether name is a well-formed full ref name.
func (r *Repo) ValidRefName(ctx context.Context, name string) bool {
	_, err := r.Git(ctx, true, "check-ref-format", name)
	return err == nil
}

// Short abbreviates an object name for messages (12 hex digits).
func Short(oid string) string { return oid[:min(12, len(oid))] }

// MissingSince walks the objects tips reach that bases do not (git
// rev-list --objects --missing=print TIPS --not BASES: the history the
// governed branches added over their recorded bases, not the whole
// history) and returns those missing from the object store ("object
// <oid>"), and how many objects it walked. A tip that is itself missing is
// reported; a base that is missing bounds nothing and is not reported (a
// base a branch was rebased away from may be pruned: what the tips reach
// is what is walked).
func (r *Repo) MissingSince(ctx context.Context, tips, bases []string) (missing []string, walked int, err error) {
	if len(tips) == 0 {
		return nil, 0, nil
	}
	absent, err := r.absentObjects(ctx, append(append([]string{}, tips...), bases...))
	if err != nil {
		return nil, 0, err
	}
	var present []string
	for _, t := range tips {
		if absent[t] {
			missing = append(missing, "object "+t)
		} else {
			present = append(present, t)
		}
	}
	args := append([]string{"rev-list", "--objects", "--missing=print"}, present...)
	not := false
	for _, b := range bases {
		if absent[b] {
			continue // gone (a base commit no governed ref reaches, pruned): it bounds nothing
		}
		if !not {
			args, not = append(args, "--not"), true
		}
		args = append(args, b)
	}
	if len(present) == 0 {
		return missing, 0, nil
	}
	out, err := r.Git(ctx, true, args...)
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case line == "":
		case line[0] == '?':
			missing = append(missing, "object "+line[1:])
		default:
			walked++
		}
	}
	var ge *Error
	if errors.As(err, &ge) {
		// A commit that is missing ends the walk (git before 2.43):
		// "error: Could not read <oid>".
		found := false
		for _, line := range strings.Split(ge.Stderr, "\n") {
			for _, p := range []string{"error: Could not read ", "fatal: bad object ", "error: unable to read "} {
				if oid, ok := strings.CutPrefix(line, p); ok && FullObjectName(strings.TrimSpace(oid)) {
					missing, found = append(missing, "object "+strings.TrimSpace(oid)), true
				}
			}
		}
		if found {
			err = nil
		}
	}
	return missing, walked, err
}

// absentObjects tells which of oids the object store lacks (ref names
// are resolved as git resolves them).
func (r *Repo) absentObjects(ctx context.Context, oids []string) (map[string]bool, error) {
	names, err := batchAbsent(ctx, append(append([]string{"-C", r.TopLevel}, neutral...), "cat-file", "--batch-check"), oids)
	absent := map[string]bool{}
	for _, n := range names {
		absent[n] = true
	}
	return absent, err
}
