package gitrepo

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitversion"
)

var versionOnce struct {
	sync.Mutex
	v   gitversion.Version
	err error
	ok  bool
}

// GitVersion is the version of the git on PATH, the git wt runs (asked
// once a process).
func GitVersion(ctx context.Context) (gitversion.Version, error) {
	versionOnce.Lock()
	defer versionOnce.Unlock()
	if versionOnce.ok {
		return versionOnce.v, versionOnce.err
	}
	out, err := run(ctx, "/", true, "version")
	if err != nil {
		return gitversion.Version{}, decision.SayWrap(decision.GitFailed, err, "git-version")
	}
	versionOnce.v, versionOnce.err = gitversion.Parse(string(out))
	versionOnce.ok = true
	return versionOnce.v, versionOnce.err
}

// ConfigEntry is one value of git's configuration as git reads it.
type ConfigEntry struct {
	// Scope is git's name for where it comes from: system, global, local,
	// worktree or command (-c, GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT).
	Scope string
	// Origin is the file ("file:PATH") or "command line:".
	Origin string
	// Key is lower-cased in its section and variable name, as git prints
	// it (a subsection keeps its case).
	Key string
	// Value is "" for a key given without "=" (HasValue false).
	Value    string
	HasValue bool
}

// Config lists the configuration git reads in the checkout at dir (every
// scope, in git's order: later entries override earlier ones), with the
// extra environment env (nil: this process's).
func Config(ctx context.Context, dir string, env []string) ([]ConfigEntry, error) {
	out, err := runEnv(ctx, dir, true, env, "config", "--list", "--show-scope", "--show-origin", "-z")
	if err != nil {
		return nil, decision.SayWrap(decision.GitFailed, err, "read-git", dir)
	}
	return ParseConfigList(out)
}

// ParseConfigList parses `git config --list --show-scope --show-origin -z`:
// "SCOPE\0ORIGIN\0KEY\nVALUE\0", or "SCOPE\0ORIGIN\0KEY\0" for a key
// without a value.
func ParseConfigList(b []byte) ([]ConfigEntry, error) {
	var out []ConfigEntry
	field := func() (string, bool) {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return "", false
		}
		f := string(b[:i])
		b = b[i+1:]
		return f, true
	}
	for len(b) > 0 {
		scope, ok1 := field()
		origin, ok2 := field()
		kv, ok3 := field()
		if !ok1 || !ok2 || !ok3 {
			return nil, fmt.Errorf("git config --list: truncated entry")
		}
		e := ConfigEntry{Scope: scope, Origin: origin}
		e.Key, e.Value, e.HasValue = strings.Cut(kv, "\n")
		out = append(out, e)
	}
	return out, nil
}
