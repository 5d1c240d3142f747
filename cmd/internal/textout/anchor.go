package textout

import (
	"os"
	"strings"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/shell"
)

// The commands of wt-admin and wt-hook, as their command lines name them
// (TestAnchorCommands holds these against the apps): a program's name
// followed by one of them, or by a flag, is a command line; followed by
// anything else it is prose ("the wt-exec of client X").
var (
	AdminCommands = []string{"init", "policy", "allocate", "status", "ps", "lease", "retain", "resume", "recover",
		"backfill", "adopt", "prune", "finish", "ready", "land", "why", "audit", "fleet", "doctor", "quarantine", "version"}
	HookCommands = []string{"check", "install", "uninstall", "status", "run"}
)

// Anchor makes every command line in hint run from any directory: a
// wt-admin command that names no repository gets --repo DIR, a wt-exec or
// wt-hook one -C DIR, where dir is the directory the reporting command
// acted in (made absolute by the caller). A line that names its
// repository already, and prose, are left as they are. Pasted from an
// orchestrator's own directory, a hint then does what it says instead of
// failing NOT_A_GIT_REPOSITORY.
func Anchor(hint, dir string) string {
	if dir == "" || !strings.Contains(hint, "wt-") {
		return hint
	}
	word := shell.Word(dir)
	var out strings.Builder
	i := 0
	for i < len(hint) {
		bin, at := nextName(hint, i)
		if at < 0 {
			break
		}
		end := at + len(bin)
		out.WriteString(hint[i:end])
		i = end
		j := end
		for j < len(hint) && hint[j] == ' ' {
			j++
		}
		if j == end || j == len(hint) {
			continue // not followed by a word
		}
		k := strings.IndexAny(hint[j:], " \n\t")
		next := hint[j:]
		if k >= 0 {
			next = hint[j : j+k]
		}
		if anchors(bin, next, hint[j:]) && !afterCd(hint[:at]) {
			flag := "-C"
			if bin == "wt-admin" {
				flag = "--repo"
			}
			out.WriteString(" " + flag + " " + word)
		}
	}
	out.WriteString(hint[i:])
	return out.String()
}

// nextName finds the next of wt's program names in s from i, standing
// alone (not part of a path or a longer name): the name and where it
// starts (-1 for none). (No regexp: wt-gate and wt-exec, which print
// through this, do not link it.)
func nextName(s string, i int) (string, int) {
	for {
		k := strings.Index(s[i:], "wt-")
		if k < 0 {
			return "", -1
		}
		at := i + k
		for _, name := range []string{"wt-admin", "wt-exec", "wt-hook"} {
			if !strings.HasPrefix(s[at:], name) {
				continue
			}
			if at > 0 && wordByte(s[at-1]) {
				break
			}
			if e := at + len(name); e < len(s) && (wordByte(s[e]) || s[e] == '-' || s[e] == '.' || s[e] == '/') {
				break
			}
			return name, at
		}
		i = at + 3
	}
}

// afterCd reports whether the text before a program's name ends with
// "cd DIR &&" in the same command line: the line chooses its directory.
func afterCd(before string) bool {
	if i := strings.LastIndexAny(before, "\n;("); i >= 0 {
		before = before[i+1:]
	}
	before = strings.TrimSpace(before)
	rest, ok := strings.CutSuffix(before, "&&")
	if !ok {
		return false
	}
	rest = " " + strings.TrimSpace(rest)
	return strings.Contains(rest, " cd ")
}

// wordByte is a byte that continues a name or a path.
func wordByte(b byte) bool {
	return b == '/' || b == '.' || b == '-' || b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// anchors reports whether the command line of bin whose words begin at
// line (next its first) is one to anchor: a command (a flag or one of
// bin's commands follows the name) that names no repository in its words,
// up to the end of the command line ("--", or where the prose goes on).
func anchors(bin, next, line string) bool {
	next = strings.TrimRight(next, ",.;:)")
	cmds := HookCommands
	switch bin {
	case "wt-admin":
		cmds = AdminCommands
		if next == "version" {
			return false
		}
	case "wt-exec":
		cmds = nil
	}
	command := strings.HasPrefix(next, "-")
	for _, c := range cmds {
		command = command || next == c
	}
	if !command {
		return false // prose
	}
	if i := strings.IndexAny(line, ";()\n"); i >= 0 {
		line = line[:i]
	}
	for _, stop := range []string{",", " wt-admin", " wt-exec", " wt-hook"} {
		if i := strings.Index(line, stop); i >= 0 {
			line = line[:i]
		}
	}
	for _, w := range strings.Fields(line) {
		switch {
		case w == "--":
			return true
		case w == "--server":
			return false // runs in the remote repository, not where the hint was printed
		case w == "-C" || w == "--repo" || strings.HasPrefix(w, "--repo=") || strings.HasPrefix(w, "-C=") ||
			w == "--version" || w == "--help" || w == "-h":
			return false
		}
	}
	return true
}

// Anchored is d with its hint anchored at dir (Anchor).
func Anchored(d *decision.Error, dir string) *decision.Error {
	if d == nil || d.Hint == "" {
		return d
	}
	h := Anchor(d.Hint, dir)
	if h == d.Hint {
		return d
	}
	c := *d
	c.Hint = h
	return &c
}

// WorkDir is the working directory, "" when it cannot be read (then
// nothing is anchored).
func WorkDir() string {
	d, err := os.Getwd()
	if err != nil {
		return ""
	}
	return d
}
