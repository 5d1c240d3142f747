package gitrepo

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/shell"
)

// A governed worktree's own files are the agent's to write: its .git
// file, and in its admin dir (which must stay writable for HEAD, the index
// and rebase state) the commondir and gitdir files and config.worktree.
// None of them is evidence wt trusts. A git command wt runs on a governed
// worktree takes its git dir and common dir from wt's records (GitIn), and
// runs only after VerifyMetadata found those files saying what the records
// say; otherwise an agent could point the operator's git at a directory of
// its own whose config starts its program (core.fsmonitor, a filter, a
// hook).

// worktreeConfigAllowed are the only keys a governed worktree's
// config.worktree may set (lower case, as git compares them): sparse
// checkout and identity, and core.hooksPath (where git older than 2.54
// finds wt's gate for that worktree, and only wt's own hooks dir: every
// git wt runs on a governed worktree has it set to /dev/null on its
// command line, HooksOff, but the operator's own git does not), nothing
// that names a program wt's git would run; and the inert data keys worktree
// managers keep there (ccmanager's parent branch), which git never reads.
var worktreeConfigAllowed = map[string]bool{
	"core.sparsecheckout": true, "core.sparsecheckoutcone": true,
	"user.name": true, "user.email": true, "core.hookspath": true,
	"ccmanager.parentbranch": true,
}

// OwnHooksDirName is wt's own hooks dir in the common dir (install's): the
// only core.hooksPath a governed worktree's config.worktree may name.
const OwnHooksDirName = "wt-hooks"

// OwnHooksDir is wt's own hooks dir of the repository with common dir
// commonDir.
func OwnHooksDir(commonDir string) string { return filepath.Join(commonDir, OwnHooksDirName) }

// hooksPathAllowed reports whether a governed worktree's own
// core.hooksPath may be hp: wt's own hooks dir (own), or /dev/null, which
// runs nothing (it switches the gate off there, which the gate's check
// reports and wt-exec puts back; no program of anyone's runs from it).
func hooksPathAllowed(hp, own string) bool {
	return hp == "/dev/null" || same(hp, own)
}

// VerifyMetadata checks that the linked worktree key of commonDir, whose
// checkout wt records at path, is what git's files say: path/.git is a
// file naming the admin dir commonDir/worktrees/key, the admin dir's
// commondir leads back to commonDir and its gitdir to path/.git, and its
// config.worktree sets nothing but worktreeConfigAllowed. A checkout that
// is gone is not checked here (its callers report it). Anything else is
// GIT_METADATA_UNTRUSTED, with the commands that repair it.
func VerifyMetadata(commonDir, key, path string) error {
	admin := AdminDir(commonDir, key)
	dotgit := filepath.Join(path, ".git")
	untrusted := func(key string, args ...any) error {
		return decision.Say(decision.GitMetadataUntrusted, "worktree", path, decision.Words(decision.GitMetadataUntrusted, key, args...)).
			WithHint("printf '%%s\\n' ../.. > %s && git -C %s worktree repair %s",
				shell.Word(filepath.Join(admin, "commondir")), shell.Word(filepath.Dir(commonDir)), shell.Word(path))
	}
	if fi, err := os.Lstat(dotgit); err == nil {
		if !fi.Mode().IsRegular() {
			return untrusted("git-not")
		}
		gd, err := gitdirOf(dotgit)
		if err != nil || !same(gd, admin) {
			return untrusted("git-file", gd, admin)
		}
	}
	b, err := readGitFile(filepath.Join(admin, "commondir"))
	if err != nil {
		return untrusted("admin-dir", err)
	}
	cd := strings.TrimRight(string(b), "\r\n")
	if !filepath.IsAbs(cd) {
		cd = filepath.Join(admin, cd)
	}
	if !same(cd, commonDir) {
		return untrusted("admin-dir-commondir", cd, commonDir)
	}
	if back, err := CheckoutOf(commonDir, key); err != nil || !same(back, path) {
		return untrusted("admin-dir-gitdir", filepath.Join(back, ".git"), dotgit)
	}
	if hp, ok := worktreeHooksPath(filepath.Join(admin, "config.worktree")); ok && !hooksPathAllowed(hp, OwnHooksDir(commonDir)) {
		return decision.Say(decision.GitMetadataUntrusted, "worktree-config", path, hp, OwnHooksDir(commonDir)).
			WithHint("git config --file %s core.hooksPath %s", shell.Word(filepath.Join(admin, "config.worktree")), shell.Word(OwnHooksDir(commonDir)))
	}
	if bad, err := worktreeConfigKeys(filepath.Join(admin, "config.worktree")); err != nil {
		return untrusted("config-worktree", err)
	} else if bad != "" {
		d := decision.Say(decision.GitMetadataUntrusted, "worktree-config-worktree", path, bad)
		file := shell.Word(filepath.Join(admin, "config.worktree"))
		if sec, ok := sectionName(bad); ok {
			return d.WithHint("git config --file %s --remove-section %s", file, shell.Word(sec))
		}
		return d.WithHint("git config --file %s --unset-all %s", file, shell.Word(bad))
	}
	return nil
}

// sectionName is the name git config --remove-section takes for a
// section header line with a subsection ([hook "x"] is hook.x); ok is
// false for anything else.
func sectionName(line string) (string, bool) {
	inner, ok := strings.CutPrefix(strings.TrimSpace(line), "[")
	if !ok {
		return "", false
	}
	inner, _, ok = strings.Cut(inner, "]")
	sec, sub, spaced := strings.Cut(inner, " ")
	sub = strings.TrimSpace(sub)
	if !ok || !spaced || len(sub) < 2 || sub[0] != '"' || sub[len(sub)-1] != '"' || strings.ContainsAny(sub[1:len(sub)-1], "\"\\") {
		return "", false
	}
	return strings.ToLower(sec) + "." + sub[1:len(sub)-1], true
}

// worktreeConfigKeys reads a config.worktree and returns the first key it
// sets that is not allowed ("" when none; a missing file sets none). A
// line it cannot read as git's config syntax (an include, a continued
// value, a section it cannot parse) counts as not allowed.
func worktreeConfigKeys(p string) (string, error) {
	b, err := readGitFile(p)
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				return line, nil
			}
			if strings.ContainsAny(line[1:end], "\" ") {
				sec, ok := sectionName(line)
				if !ok || !wtHookSwitch(sec) {
					return line, nil // a subsection ("filter \"x\"", "includeIf ..."): never allowed
				}
				section = sec // [hook "wt-..."]: only its enabled switch is allowed, below
			} else {
				section = strings.ToLower(line[1:end])
			}
			if rest := strings.TrimSpace(line[end+1:]); rest == "" {
				continue
			} else {
				line = rest
			}
		}
		name, _, _ := strings.Cut(line, "=")
		key := section + "." + strings.ToLower(strings.TrimSpace(name))
		allowed := worktreeConfigAllowed[key] || (wtHookSwitch(section) && strings.EqualFold(strings.TrimSpace(name), "enabled"))
		if !allowed || strings.HasSuffix(strings.TrimSpace(line), "\\") {
			return key, nil
		}
	}
	return "", sc.Err()
}

// wtHookSwitch reports whether sec (as sectionName gives it) is one of
// wt's own hook sections, hook.wt-<hook>. Its enabled key only switches
// a hook of wt's on or off and runs nothing; whether the gate is on is
// the gate check's business (HOOKS_INSTALLED), not the admin dir's.
func wtHookSwitch(sec string) bool {
	name, ok := strings.CutPrefix(sec, "hook.wt-")
	return ok && name != "" && !strings.ContainsAny(name, ". \t")
}
