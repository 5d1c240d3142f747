package textout

import (
	"os"
	"regexp"
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
		"backfill", "prune", "finish", "audit", "fleet", "doctor", "version"}
	HookCommands = []string{"check", "install", "uninstall", "status", "run"}
)

var anchorName = regexp.MustCompile(`(^|[^/\w.-])(wt-admin|wt-exec|wt-hook)( +)(\S+)`)

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
	rest := hint
	for {
		loc := anchorName.FindStringSubmatchIndex(rest)
		if loc == nil {
			out.WriteString(rest)
			return out.String()
		}
		bin, next := rest[loc[4]:loc[5]], rest[loc[8]:loc[9]]
		out.WriteString(rest[:loc[5]])
		if anchors(bin, next, rest[loc[8]:]) {
			flag := "-C"
			if bin == "wt-admin" {
				flag = "--repo"
			}
			out.WriteString(" " + flag + " " + word)
		}
		rest = rest[loc[5]:]
	}
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
