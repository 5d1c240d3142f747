package install

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/wt-tool/wt/core/hookspec"
	"github.com/wt-tool/wt/core/shell"
)

// The shim templates, one per hook, of one version (Version). @BIN@
// stands for the recorded absolute path of wt-hook, single-quoted for sh.
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
// branches (wt-hook install --server).
var ServerHooks = []string{"pre-receive", "post-receive"}

// Version is the version of the shims this wt-hook writes. There is one:
// every hook's shim is rewritten whenever any changes, and the number
// goes up by one. Versions 1 to 9 were written before wt's first release
// (known by their content, preRelease); this one continues their count, so
// that a number an install recorded means one thing.
//
// A shim says what it is: its second line names its version and hook
// ("# wt-hook shim v11 (pre-commit), ..."; the forwarder's, "# wt-hook
// forwarder v11, ...") and its last line is the SHA-256 of everything
// above it ("# wt-hook shim sha256:HEX"). So any version's shim, this
// one's, an older one's or a newer one's, is recognised as wt's, and as
// unedited, without keeping every version's text: install updates it,
// uninstall removes it, and a hook someone edited is theirs (git-lfs's
// lfs/hook.go keeps every version's text instead).
//
// What each earlier version changed is in docs/decisions.md and
// CHANGELOG.md: v3 took out the environment's say in which binary runs and
// added post-checkout and the server's pre-receive; v4 runs wt-gate beside
// the recorded wt-hook for the client hooks; v5 reads /proc/PPID/stat
// without a pattern match; v6 chains a hook manager's hook from wt's own
// hooks dir (owned.go); v7 runs the hook a wt shim in the chained dir
// keeps; v8's reference-transaction appends the move it lets through to
// the task's branch ledger; v9 added the fenced remote's post-receive.
// v10 is the first with the marker lines; v11 judges before the hook it
// chains runs (pre-commit, pre-push, reference-transaction), so that a
// refused commit or push runs no other hook.
const Version = 11

const (
	binMark = "@BIN@"
	sumMark = "# wt-hook shim sha256:"
)

func template(hook string) (string, error) {
	b, err := shims.ReadFile("shims/" + hook)
	return string(b), err
}

// CurrentVersion is the version of hook's shim that install writes
// (Version; 0 for a hook wt has no shim for).
func CurrentVersion(hook string) int {
	if _, err := template(hook); err != nil {
		return 0
	}
	return Version
}

// Render returns the shim for hook with the wt-hook binary at bin.
func Render(hook, bin string) (string, error) {
	t, err := template(hook)
	if err != nil {
		return "", err
	}
	return seal(strings.Replace(t, binMark, shell.Quote(bin), 1)), nil
}

// seal appends the line that makes s recognisable: its SHA-256.
func seal(s string) string {
	return s + sumMark + hexSum([]byte(s)) + "\n"
}

func hexSum(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// sealed returns what content seals when its last line is its own
// SHA-256, and false otherwise (edited, or written before the seal).
func sealed(content []byte) ([]byte, bool) {
	body, last, ok := cutLastLine(content)
	if !ok || !bytes.HasPrefix(last, []byte(sumMark)) {
		return nil, false
	}
	return body, string(last[len(sumMark):]) == hexSum(body)
}

// cutLastLine splits content, which must end in a newline, before its
// last line, and returns that line without its newline.
func cutLastLine(content []byte) (body, last []byte, ok bool) {
	if len(content) == 0 || content[len(content)-1] != '\n' {
		return nil, nil, false
	}
	i := bytes.LastIndexByte(content[:len(content)-1], '\n')
	if i < 0 {
		return nil, nil, false
	}
	return content[:i+1], content[i+1 : len(content)-1], true
}

// marker reads a shim's version from its second line: the number between
// before and after ("# wt-hook shim v" and " (HOOK),").
func marker(body []byte, before, after string) (int, bool) {
	_, rest, ok := bytes.Cut(body, []byte("\n"))
	if !ok {
		return 0, false
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	s, ok := strings.CutPrefix(string(line), before)
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(s, after)
	v, err := strconv.Atoi(num)
	return v, ok && err == nil && v > 0
}

// binLine finds the line that records the wt-hook binary (the first
// "recorded=" or "wt_bin=" whose value is one single-quoted word) and
// returns the offsets of its value.
func binLine(body []byte) (start, end int, bin string, ok bool) {
	for off := 0; off < len(body); {
		line, _, _ := bytes.Cut(body[off:], []byte("\n"))
		for _, p := range []string{"recorded=", "wt_bin="} {
			if v, has := bytes.CutPrefix(line, []byte(p)); has {
				if b, q := shell.Unquote(string(v)); q {
					return off + len(p), off + len(line), b, true
				}
			}
		}
		off += len(line) + 1
	}
	return 0, 0, "", false
}

// Recognize reports whether content is an unedited wt shim for hook, of any
// version, and which version and binary it records.
func Recognize(hook string, content []byte) (version int, bin string, ok bool) {
	if body, ok := sealed(content); ok {
		v, found := marker(body, "# wt-hook shim v", " ("+hook+"),")
		if _, _, b, has := binLine(body); found && has {
			return v, b, true
		}
		return 0, "", false
	}
	start, end, b, has := binLine(content)
	if !has {
		return 0, "", false
	}
	norm := append(append(append([]byte(nil), content[:start]...), binMark...), content[end:]...)
	if p, known := preRelease[hexSum(norm)]; known && p.hook == hook {
		return p.version, b, true
	}
	return 0, "", false
}

// IsForwarder reports whether content is an unedited forwarder wt wrote
// into its own hooks dir (owned.go), of any version.
func IsForwarder(content []byte) bool {
	if body, ok := sealed(content); ok {
		_, found := marker(body, "# wt-hook forwarder v", ",")
		return found
	}
	p, known := preRelease[hexSum(content)]
	return known && p.hook == "forward"
}
