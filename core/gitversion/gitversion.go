// Package gitversion reads git's version, which decides what git offers
// wt: reftable repositories (2.45), symbolic-ref updates shown to the
// reference-transaction hook (2.46), hooks defined in configuration
// (2.54).
package gitversion

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a git's version, major and minor.
type Version struct{ Major, Minor int }

// AtLeast reports whether v is major.minor or later.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || v.Major == major && v.Minor >= minor
}

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// ConfigHooks reports whether a git of version v runs hooks defined in
// configuration (hook.<name>.command and hook.<name>.event, git 2.54),
// which run whatever core.hooksPath says.
func (v Version) ConfigHooks() bool { return v.AtLeast(2, 54) }

// Parse reads `git version` ("git version 2.55.0", and vendor forms such
// as "2.39.5.windows.1" or "2.50.1 (Apple Git-155)").
func Parse(s string) (Version, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), "git version ")
	if !ok {
		return Version{}, fmt.Errorf("not a git version line: %q", s)
	}
	f := strings.SplitN(rest, ".", 3)
	if len(f) < 2 {
		return Version{}, fmt.Errorf("not a git version: %q", rest)
	}
	digits := func(s string) string {
		for i, r := range s {
			if r < '0' || r > '9' {
				return s[:i]
			}
		}
		return s
	}
	major, err1 := strconv.Atoi(f[0])
	minor, err2 := strconv.Atoi(digits(f[1]))
	if err1 != nil || err2 != nil {
		return Version{}, fmt.Errorf("not a git version: %q", rest)
	}
	return Version{major, minor}, nil
}
