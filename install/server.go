package install

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/safefile"
)

// ViaDispatchDir is a server hook installed in HOOK.d/, which a forge's
// own HOOK runs (NameDispatcher).
const ViaDispatchDir = "dispatch-dir"

// NameDispatcher reports whether a hook's content is a dispatcher that
// runs every executable of HOOK.d/ and finds that directory by its own
// file name ($(basename $0)): Gitea's and Forgejo's pre-receive, update
// and post-receive. Such a hook cannot be chained by renaming it: renamed
// HOOK.wt-chained, it looks for HOOK.wt-chained.d/, finds nothing and
// passes every push, the forge's own branch protection with it. wt's shim
// goes into HOOK.d/ instead, beside the forge's, where the forge's
// regeneration of its hooks (gitea admin regenerate hooks rewrites HOOK and
// HOOK.d/gitea) leaves it.
func NameDispatcher(content []byte) bool {
	return bytes.Contains(content, []byte("basename")) && bytes.Contains(content, []byte(".d/"))
}

// serverTarget is where server hook goes in hooksDir: HOOK.d/ when HOOK
// is a name dispatcher, else hooksDir itself.
func serverTarget(hooksDir, hook string) (dir, dispatcher string) {
	p := filepath.Join(hooksDir, hook)
	if b, err := safefile.Read(p, 1<<20, safefile.Follows); err == nil && NameDispatcher(b) {
		return p + ".d", p
	}
	return hooksDir, ""
}

// repairDispatcher undoes an install of an older wt that chained a name
// dispatcher (HOOK.wt-chained) behind its shim at HOOK, switching the
// forge's hooks off: the dispatcher goes back in its place. It reports
// whether it did.
func repairDispatcher(hooksDir, hook string) (bool, error) {
	p := filepath.Join(hooksDir, hook)
	kept, err := safefile.Read(p+ChainSuffix, 1<<20, safefile.NoFollow)
	if err != nil || !NameDispatcher(kept) {
		return false, nil
	}
	cur, err := safefile.Read(p, 1<<20, safefile.NoFollow)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			cur = nil
		} else {
			return false, nil
		}
	}
	if _, _, ok := Recognize(hook, cur); cur != nil && !ok {
		return false, nil // someone else's hook sits there: not wt's to touch
	}
	if err := os.Rename(p+ChainSuffix, p); err != nil {
		return false, decision.SayWrap(decision.Internal, err, "put-forge", p)
	}
	return true, nil
}

// serverEach runs fn (InstallOf, UninstallOf or StatusOf for one hook)
// for each of ServerHooks where it goes in hooksDir, and gathers them.
func serverEach(hooksDir string, hooks []string, repair bool, fn func(dir, hook string) (Result, error)) (Result, error) {
	res := Result{HooksDir: hooksDir}
	for _, h := range hooks {
		repaired := false
		if repair {
			var err error
			if repaired, err = repairDispatcher(hooksDir, h); err != nil {
				return res, err
			}
		}
		dir, dispatcher := serverTarget(hooksDir, h)
		r, err := fn(dir, h)
		if err != nil {
			return res, err
		}
		for _, st := range r.Hooks {
			if dispatcher != "" {
				st.Via, st.Dispatcher = ViaDispatchDir, dispatcher
			}
			if repaired {
				st.Changed += "; put back the forge's " + h + ", which an older wt had renamed " + h + ChainSuffix + " (it then ran no hook)"
			}
			res.Hooks = append(res.Hooks, st)
		}
		res.Warnings = append(res.Warnings, r.Warnings...)
	}
	return res, nil
}

// ServerHooksFor are the server hooks a fence needs: in local mode both
// (post-receive records the tokens of the pushes that landed); with etcd
// pre-receive alone (etcd is the record), which saves a wt-hook start at
// every push.
func ServerHooksFor(local bool) []string {
	if local {
		return ServerHooks
	}
	return []string{"pre-receive"}
}

// InstallServer installs the server hooks (ServerHooksFor) of a fenced
// remote into hooksDir: into HOOK.d/ where the forge's HOOK dispatches by
// name (Gitea, Forgejo), else as HOOK with any foreign hook chained. A wt
// shim of a server hook the fence does not need (post-receive once the
// fence uses etcd) is removed.
func InstallServer(hooksDir, bin string, local bool) (Result, error) {
	need := ServerHooksFor(local)
	res, err := serverEach(hooksDir, need, true, func(dir, h string) (Result, error) { return InstallOf(dir, bin, []string{h}) })
	if err != nil {
		return res, err
	}
	var extra []string
	for _, h := range ServerHooks {
		if !slices.Contains(need, h) {
			extra = append(extra, h)
		}
	}
	gone, err := serverEach(hooksDir, extra, false, func(dir, h string) (Result, error) { return UninstallOf(dir, []string{h}) })
	res.Hooks = append(res.Hooks, gone.Hooks...)
	return res, err
}

// UninstallServer removes what InstallServer wrote.
func UninstallServer(hooksDir string) (Result, error) {
	return serverEach(hooksDir, ServerHooks, true, func(dir, h string) (Result, error) { return UninstallOf(dir, []string{h}) })
}

// StatusServer is the state of the server hooks a fence needs
// (ServerHooksFor) where InstallServer puts them.
func StatusServer(hooksDir string, local bool) (Result, error) {
	return serverEach(hooksDir, ServerHooksFor(local), false, func(dir, h string) (Result, error) { return StatusOf(dir, []string{h}) })
}
