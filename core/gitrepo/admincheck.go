package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/shell"
)

// A linked worktree's admin dir (<common>/worktrees/<key>) stays the real
// one under confinement: its HEAD, index and per-worktree config are the
// checkout's. So what a confined run leaves there is input for every
// program that runs there after it, unconfined: git reads HEAD and the
// index at every start (a FIFO there hangs it for good), a
// config.worktree's core.hooksPath picks the hooks the operator's next
// commit runs, an executable file in it can be made a hook. CheckAdmin
// judges the admin dir as git and wt would read it; Quarantine puts what
// it finds aside, under wt's store, and writes back what git needs to go
// on (docs/design.md, "Confinement: a private view", "The run's own git
// metadata").

// Bounds of what an admin dir's files hold (git writes a line into HEAD,
// commondir and gitdir; config.worktree holds a few keys).
const (
	adminSmallMax  = 64 << 10
	adminConfigMax = 1 << 20
)

// AdminExpect is what a governed worktree's admin dir should say.
type AdminExpect struct {
	// Path is the worktree's checkout (gitdir names Path/.git).
	Path string
	// Branch is the allocation's branch ("" for a detached one): HEAD is
	// put back on it.
	Branch string
	// Base is the commit a detached HEAD is put back at.
	Base string
	// HooksDir is the one core.hooksPath config.worktree may name (wt's
	// own hooks dir), "" for none allowed.
	HooksDir string
}

// AdminProblem is one thing in an admin dir that git or a program after
// it would trip on or run.
type AdminProblem struct {
	// Path is the file (absolute), Rel its name in the admin dir.
	Path string `json:"path"`
	Rel  string `json:"rel"`
	Why  string `json:"why"`
	// Restore is what is written at Path once the file is put aside (nil
	// when nothing is: the file is git's to make again, or none).
	Restore []byte `json:"-"`
	// Index is set when the index was put aside: git read-tree HEAD
	// makes it again (the checkout's files are untouched).
	Index bool `json:"index,omitempty"`
}

// CheckAdmin judges the admin dir of linked worktree key of commonDir
// against want, without running git and without blocking on anything: a
// file that is not a regular file (a FIFO, a socket, a device, a
// symlink), one larger than git ever writes there, an index that is not
// one, a config.worktree that sets a key wt does not allow or a
// core.hooksPath other than wt's own hooks dir, and any executable file
// but a hook sample of a submodule's git dir. An admin dir that cannot
// be read at all is one problem that says so.
func CheckAdmin(commonDir, key string, want AdminExpect) []AdminProblem {
	admin := AdminDir(commonDir, key)
	if _, err := os.Lstat(admin); errors.Is(err, fs.ErrNotExist) {
		return nil // no admin dir: a worktree git no longer has (other checks say so)
	}
	var out []AdminProblem
	add := func(rel, why string, restore []byte) {
		p := AdminProblem{Path: filepath.Join(admin, rel), Rel: rel, Why: why, Restore: restore}
		if rel == "index" {
			p.Index = true
		}
		out = append(out, p)
	}
	restoreOf := func(rel string) []byte {
		switch rel {
		case "HEAD":
			return headRestore(commonDir, want)
		case "commondir":
			return []byte("../..\n")
		case "gitdir":
			return []byte(filepath.Join(want.Path, ".git") + "\n")
		case "config.worktree":
			return configRestore(filepath.Join(admin, rel), want.HooksDir)
		}
		return nil
	}
	err := filepath.WalkDir(admin, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == admin {
				return err
			}
			rel, _ := filepath.Rel(admin, p)
			add(rel, "cannot be read: "+err.Error(), nil)
			return nil
		}
		rel, _ := filepath.Rel(admin, p)
		if p == admin {
			return nil
		}
		if d.IsDir() && filepath.Base(rel) == "objects" && strings.HasPrefix(rel, "modules"+string(filepath.Separator)) {
			return filepath.SkipDir // a submodule's object store: git's data, read as data
		}
		typ := d.Type()
		switch {
		case typ.IsDir():
			return nil
		case typ&fs.ModeSymlink != 0:
			add(rel, "is a symlink (git never makes one there; one that leads to a FIFO or a device hangs whoever reads it)", restoreOf(rel))
			return nil
		case !typ.IsRegular():
			add(rel, fmt.Sprintf("is not a regular file but a %s: git and whoever reads it after the run would block on it or fail", typeName(typ)), restoreOf(rel))
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				add(rel, "cannot be read: "+err.Error(), nil)
			}
			return nil
		}
		if fi.Mode().Perm()&0o111 != 0 && !(strings.HasSuffix(rel, ".sample") && filepath.Base(filepath.Dir(rel)) == "hooks") {
			add(rel, "is an executable file: git never makes one in an admin dir, and a hooks path or a config can make it a program the next git runs", nil)
			return nil
		}
		if why, restorable := contentProblem(admin, rel, fi.Size(), want); why != "" {
			var restore []byte
			if restorable {
				restore = restoreOf(rel)
			}
			add(rel, why, restore)
		}
		return nil
	})
	if err != nil {
		out = append(out, AdminProblem{Path: admin, Why: "the admin dir cannot be read: " + err.Error()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rel < out[j].Rel })
	return out
}

// contentProblem is what is wrong with the regular file rel (of size
// bytes) in admin dir admin, as git or wt would write it ("" when
// nothing); restorable says whether restoreOf has its content.
func contentProblem(admin, rel string, size int64, want AdminExpect) (why string, restorable bool) {
	switch rel {
	case "HEAD", "commondir", "gitdir", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "AUTO_MERGE", "locked":
		if size > adminSmallMax {
			return fmt.Sprintf("holds %d bytes, where git writes one line", size), true
		} else if rel == "HEAD" && !validHead(filepath.Join(admin, rel)) {
			return "is not a HEAD git wrote (neither ref: refs/... nor an object name)", true
		}
	case "config.worktree":
		if size > adminConfigMax {
			return fmt.Sprintf("holds %d bytes, where wt writes a few keys", size), true
		} else if bad, err := worktreeConfigKeys(filepath.Join(admin, rel)); err != nil || bad != "" {
			why := "sets " + bad + ", which wt does not allow there"
			if err != nil {
				why = "cannot be read as git's configuration: " + err.Error()
			}
			return why, true
		} else if hp, ok := worktreeHooksPath(filepath.Join(admin, rel)); ok && (want.HooksDir == "" || !hooksPathAllowed(hp, want.HooksDir)) {
			return fmt.Sprintf("sets core.hooksPath to %s, not wt's own hooks dir: the next commit there would run whatever hooks that directory holds", hp), true
		}
	case "index":
		if !validIndex(filepath.Join(admin, rel)) {
			return "is not a git index (no DIRC signature)", false
		}
	}
	return "", false
}

func typeName(t fs.FileMode) string {
	switch {
	case t&fs.ModeNamedPipe != 0:
		return "FIFO"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// validHead reports whether the HEAD file at p reads as git writes one:
// a symbolic ref to refs/ or an object name.
func validHead(p string) bool {
	b, err := safefile.Read(p, adminSmallMax, safefile.NoFollow)
	if err != nil {
		return false
	}
	s := strings.TrimRight(string(b), "\r\n")
	if t, ok := strings.CutPrefix(s, "ref: "); ok {
		return strings.HasPrefix(t, "refs/") && !strings.ContainsAny(t, " \t\n")
	}
	return FullObjectName(s)
}

// validIndex reports whether the file at p begins as a git index does.
func validIndex(p string) bool {
	f, _, err := safefile.Open(p, safefile.NoFollow)
	if err != nil {
		return false
	}
	defer f.Close() // Best effort: read only.
	var sig [4]byte
	if n, _ := f.Read(sig[:]); n != 4 {
		return false
	}
	return string(sig[:]) == "DIRC"
}

// headRestore is the HEAD put back: on the allocation's branch, or at its
// base commit when it has none; the reftable backend's stub where the
// worktree's HEAD is kept in its own table stack.
func headRestore(commonDir string, want AdminExpect) []byte {
	if Reftable(commonDir) {
		return []byte(reftableStub + "\n")
	}
	if want.Branch != "" {
		return []byte("ref: refs/heads/" + want.Branch + "\n")
	}
	if want.Base != "" {
		return []byte(want.Base + "\n")
	}
	return nil
}

// worktreeHooksPath is core.hooksPath as the config.worktree at p sets
// it (the last value), ok false when it sets none. Read as
// worktreeConfigKeys reads it (which refused anything it cannot parse).
func worktreeHooksPath(p string) (string, bool) {
	vals := allowedValues(p)
	v, ok := vals["core.hookspath"]
	return v, ok
}

// allowedValues are the values of the allowed keys a config.worktree
// sets, as far as it can be read (a line that is not key = value is left
// out).
func allowedValues(p string) map[string]string {
	out := map[string]string{}
	b, err := safefile.Read(p, adminConfigMax, safefile.NoFollow)
	if err != nil {
		return out
	}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 || strings.ContainsAny(line[1:end], "\" ") {
				section = "\x00" // a subsection: nothing in it is kept
				continue
			}
			section = strings.ToLower(line[1:end])
			if line = strings.TrimSpace(line[end+1:]); line == "" {
				continue
			}
		}
		name, value, found := strings.Cut(line, "=")
		key := section + "." + strings.ToLower(strings.TrimSpace(name))
		if !found || !worktreeConfigAllowed[key] || strings.HasSuffix(line, "\\") || strings.ContainsAny(value, "\"\\") {
			continue
		}
		out[key] = strings.TrimSpace(value)
	}
	return out
}

// configRestore is the config.worktree put back: the allowed keys the
// one at p sets (those that can be read), with core.hooksPath made wt's
// own hooks dir where it was set at all.
func configRestore(p, hooksDir string) []byte {
	vals := allowedValues(p)
	if _, ok := vals["core.hookspath"]; ok {
		if hooksDir == "" {
			delete(vals, "core.hookspath")
		} else {
			vals["core.hookspath"] = hooksDir
		}
	}
	sections := map[string][]string{}
	for k, v := range vals {
		sec, name, _ := strings.Cut(k, ".")
		sections[sec] = append(sections[sec], "\t"+name+" = "+v)
	}
	var b bytes.Buffer
	names := make([]string, 0, len(sections))
	for s := range sections {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		sort.Strings(sections[s])
		fmt.Fprintf(&b, "[%s]\n%s\n", s, strings.Join(sections[s], "\n"))
	}
	return b.Bytes()
}

// Quarantined is one file Quarantine put aside.
type Quarantined struct {
	AdminProblem
	// Kept is where it is now.
	Kept string `json:"kept"`
}

// Quarantine puts each problem's file aside into dir (made as needed: in
// wt's store, on the same file system, so that a rename moves anything,
// a FIFO included, without opening it), keeping its name under the admin
// dir, and writes back what it restores. A file gone meanwhile needs
// nothing. It returns what it put aside; an error stops it where it
// failed.
func Quarantine(dir string, problems []AdminProblem) ([]Quarantined, error) {
	stamp := filepath.Join(dir, time.Now().UTC().Format("20060102T150405.000000000Z"))
	var out []Quarantined
	for _, p := range problems {
		if p.Rel == "" {
			continue // the admin dir itself: nothing to move
		}
		kept := filepath.Join(stamp, p.Rel)
		if err := os.MkdirAll(filepath.Dir(kept), 0o700); err != nil {
			return out, err
		}
		if err := os.Rename(p.Path, kept); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return out, fmt.Errorf("put %s aside: %w", p.Path, err)
		}
		if p.Restore != nil {
			if err := safefile.Replace(p.Path, p.Restore, 0o644); err != nil {
				return out, fmt.Errorf("write %s back: %w", p.Path, err)
			}
		}
		out = append(out, Quarantined{AdminProblem: p, Kept: kept})
	}
	return out, nil
}

// RestoreCommand is the command that puts a quarantined file back where
// it was (for whoever wants it back, having looked at it).
func (q Quarantined) RestoreCommand() string {
	return "mv -f -- " + shell.Word(q.Kept) + " " + shell.Word(q.Path)
}
