package install

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/safefile"
)

// ViaRepoSpecific is a server hook gitolite runs as one of a repository's
// repo-specific hooks: its multi-hook driver at HOOK runs every
// HOOK.hNN-CODE, each a link to LOCAL_CODE/hooks/repo-specific/CODE.
const ViaRepoSpecific = "gitolite-repo-specific"

// multiHookDriver is the file name of gitolite's driver for repo-specific
// hooks (LOCAL_CODE/hooks/multi-hook-driver, unless the rc's
// MULTI_HOOK_DRIVER names another).
const multiHookDriver = "multi-hook-driver"

// RepoSpecificCode is the name wt's shim for hook has among gitolite's
// repo-specific hooks (LOCAL_CODE/hooks/repo-specific/CODE), the name a
// repository's `option hook.HOOK = ...` line lists.
func RepoSpecificCode(hook string) string { return "wt-fence-" + hook }

// repoSpecificLink parses HOOK.hNN-CODE, gitolite's link to a
// repo-specific hook (NN counts from 00 in the order the option lists the
// codes; gitolite allows pre-receive, post-receive, post-update and
// pre-auto-gc).
func repoSpecificLink(name string) (hook, code string, ok bool) {
	hook, rest, found := strings.Cut(name, ".h")
	if !found {
		return "", "", false
	}
	switch hook {
	case "pre-receive", "post-receive", "post-update", "pre-auto-gc":
	default:
		return "", "", false
	}
	num, code, ok := strings.Cut(rest, "-")
	if !ok || num == "" || code == "" || strings.Trim(num, "0123456789") != "" {
		return "", "", false
	}
	return hook, code, true
}

// Gitolite is what a repository's hooks directory shows of gitolite's
// repo-specific hooks.
type Gitolite struct {
	// LocalCode is the rc's LOCAL_CODE, where repo-specific hooks live
	// (LocalCode/hooks/repo-specific/CODE).
	LocalCode string
	// Codes are, per hook, the repo-specific hooks gitolite runs for this
	// repository now, in its order.
	Codes map[string][]string
}

// GitoliteOf reads gitolite's repo-specific hooks from hooksDir: LOCAL_CODE
// from a hook linked to its multi-hook driver (else localCode, gitolite's
// own answer, "" if none), and each hook's codes from the HOOK.hNN-CODE
// links. ok is false when repo-specific hooks are not enabled there (no
// LOCAL_CODE/hooks/repo-specific directory).
func GitoliteOf(hooksDir, localCode string) (g Gitolite, ok bool) {
	g.Codes = map[string][]string{}
	ents, _ := os.ReadDir(hooksDir)
	var links []string
	for _, e := range ents {
		p := filepath.Join(hooksDir, e.Name())
		target, err := os.Readlink(p)
		if err != nil {
			continue
		}
		if filepath.Base(target) == multiHookDriver && filepath.IsAbs(target) {
			localCode = filepath.Dir(filepath.Dir(target))
		}
		if _, _, ok := repoSpecificLink(e.Name()); ok {
			links = append(links, e.Name())
		}
	}
	if localCode == "" {
		return g, false
	}
	g.LocalCode = localCode
	if fi, err := os.Stat(g.Dir()); err != nil || !fi.IsDir() {
		return g, false
	}
	sort.Strings(links) // gitolite's driver runs $0.* in the shell's order
	for _, name := range links {
		hook, code, _ := repoSpecificLink(name)
		if target, err := os.Readlink(filepath.Join(hooksDir, name)); err == nil {
			if rel, err := filepath.Rel(g.Dir(), target); err == nil && !strings.HasPrefix(rel, "..") {
				code = filepath.ToSlash(rel) // gitolite flattens a code's slashes in the link's name
			}
		}
		g.Codes[hook] = append(g.Codes[hook], code)
	}
	return g, true
}

// Dir is gitolite's directory of repo-specific hooks.
func (g Gitolite) Dir() string { return filepath.Join(g.LocalCode, "hooks", "repo-specific") }

// OptionLines are the conf lines (under the repository's `repo` line) that
// make gitolite run wt's shims for hooks among the repository's
// repo-specific hooks: wt's pre-receive first (a refusal stops the
// driver), every other after the codes it runs now.
func (g Gitolite) OptionLines(hooks []string) []string {
	var lines []string
	for _, h := range hooks {
		var codes []string
		for _, c := range g.Codes[h] {
			if c != RepoSpecificCode(h) {
				codes = append(codes, c)
			}
		}
		if h == "pre-receive" {
			codes = append([]string{RepoSpecificCode(h)}, codes...)
		} else {
			codes = append(codes, RepoSpecificCode(h))
		}
		lines = append(lines, "option hook."+h+" = "+strings.Join(codes, " "))
	}
	return lines
}

// InstallRepoSpecific writes wt's shims for hooks into gitolite's
// repo-specific hooks directory (RepoSpecificCode names them), where
// gitolite links them into each repository whose conf lists them, and
// keeps them across its setup and rebuilds. Gitolite's driver runs them
// from the repository's hooks directory, where the shim finds no chained
// hook: the driver runs the repository's other codes itself.
func InstallRepoSpecific(g Gitolite, bin string, hooks []string) (Result, error) {
	res := Result{HooksDir: g.Dir()}
	if !filepath.IsAbs(bin) {
		return res, decision.Say(decision.Usage, "wt-hook", bin)
	}
	for _, h := range hooks {
		st := HookState{Hook: h, Path: filepath.Join(g.Dir(), RepoSpecificCode(h)), State: "wt", Via: ViaRepoSpecific,
			ShimVersion: CurrentVersion(h), Binary: bin}
		var err error
		if st.Changed, err = writeShimFile(st.Path, h, bin); err != nil {
			return res, err
		}
		res.Hooks = append(res.Hooks, st)
	}
	return res, nil
}

// StatusRepoSpecific is the state of wt's shims for hooks in a repository
// whose hooks gitolite runs as repo-specific ones: "wt" where gitolite
// links the shim into hooksDir, "missing" where it does not (yet: the
// repository's option line is what makes it).
func StatusRepoSpecific(g Gitolite, hooksDir string, hooks []string) Result {
	res := Result{HooksDir: hooksDir}
	for _, h := range hooks {
		st := HookState{Hook: h, Path: filepath.Join(g.Dir(), RepoSpecificCode(h)), State: "missing", Via: ViaRepoSpecific}
		for _, c := range g.Codes[h] {
			if c != RepoSpecificCode(h) {
				continue
			}
			if b, err := safefile.Read(st.Path, 1<<20, safefile.NoFollow); err == nil {
				if v, bin, ok := Recognize(h, b); ok {
					st.State, st.ShimVersion, st.Binary = "wt", v, bin
				}
			}
		}
		if st.State == "missing" {
			st.Changed = "gitolite does not run it for this repository: its conf needs option hook." + h
		}
		res.Hooks = append(res.Hooks, st)
	}
	return res
}
