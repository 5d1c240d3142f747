package install

import (
	"embed"
	"fmt"
	"strings"

	"github.com/wt-tool/wt/core/hookspec"
	"github.com/wt-tool/wt/core/shell"
)

// The shim templates, one per hook and shim version. Every version ever
// shipped stays here, so install and uninstall recognise old shims by their
// exact content (git-lfs's lfs/hook.go). @BIN@ stands for the recorded
// absolute path of wt-hook, single-quoted for sh.
//
//go:embed shims
var shims embed.FS

// Hooks are the hooks wt installs: hookspec.Client's names, the one
// table of them.
var Hooks = func() []string {
	var names []string
	for _, f := range hookspec.Client {
		names = append(names, f.Name)
	}
	return names
}()

// ServerHooks are the hooks wt installs in a remote that fences task
// branches (wt-hook install --server; shim v3 on).
var ServerHooks = []string{"pre-receive", "post-receive"}

// Version is the newest shim version. Since v4 the shims of the client
// hooks run wt-gate when it is an executable file beside the recorded
// wt-hook, and wt-hook run otherwise: the same judgement
// (cmd/internal/gate), without a command-line library to start at every
// commit. v5 changes only how the reference-transaction shim finds the
// fields of /proc/PPID/stat: the same check, without a pattern match at
// every byte of the line (docs/performance.md). v6 finds the hook it
// chains in wt's own hooks dir (core.hooksPath taken from a hook manager,
// owned.go): the manager's hook of the same name in the dir named by
// wt-chain-dir, run by the path git would run it by. v7 runs, from wt's
// own hooks dir, the hook a wt shim in the dir named by wt-chain-dir keeps
// (HOOK.wt-chained) rather than that shim: governed worktrees use wt's own
// dir through their own core.hooksPath while the main checkout keeps the
// shims in the common dir's hooks (docs/hook-managers.md). v8's
// reference-transaction reads pre-commit's pass v2 (which names the lease
// and the task's branch ledger) and appends the move it lets through to
// that ledger: wt's record of the tip it approved (docs/format.md). v9
// adds the fenced remote's post-receive, which records a push's fencing
// tokens in local mode once the push has landed.
//
// A version's directory holds only the hooks that changed in it; a hook's
// current version is the newest directory that holds it (CurrentVersion).
const Version = 9

// versions lists every shim version shipped, newest first.
var versions = []int{9, 8, 7, 6, 5, 4, 3, 2, 1}

const binMark = "@BIN@"

func template(hook string, version int) (string, error) {
	b, err := shims.ReadFile(fmt.Sprintf("shims/v%d/%s", version, hook))
	return string(b), err
}

// CurrentVersion is the version of hook's shim that install writes: the
// newest version that changed it (0 for a hook wt has no shim for).
func CurrentVersion(hook string) int {
	for _, v := range versions {
		if _, err := template(hook, v); err == nil {
			return v
		}
	}
	return 0
}

// Render returns the shim for hook with the wt-hook binary at bin.
func Render(hook, bin string) (string, error) {
	t, err := template(hook, CurrentVersion(hook))
	if err != nil {
		return "", err
	}
	return strings.Replace(t, binMark, shell.Quote(bin), 1), nil
}

// Recognize reports whether content is a wt shim for hook, of any shipped
// version, and which version and binary it records.
func Recognize(hook string, content []byte) (version int, bin string, ok bool) {
	for _, v := range versions {
		t, err := template(hook, v)
		if err != nil {
			continue
		}
		pre, post, found := strings.Cut(t, binMark)
		s := string(content)
		if !found || !strings.HasPrefix(s, pre) || !strings.HasSuffix(s, post) || len(s) < len(pre)+len(post) {
			continue
		}
		if b, ok := shell.Unquote(s[len(pre) : len(s)-len(post)]); ok {
			return v, b, true
		}
	}
	return 0, "", false
}
