package textout

import (
	"runtime/debug"
	"sync"
)

// stamped is the version the Makefile stamps into the binaries
// (-ldflags "-X github.com/wt-tool/wt/cmd/internal/textout.stamped=..."
// from git describe). Empty in a `go build` or `go install` build.
var stamped string

// Version is the tool version every binary reports: the stamped one, else
// what the Go toolchain recorded (the module version of a `go install
// ...@v1.2.3`, or the VCS revision and whether the tree was modified),
// else "devel". It is worked out once, on first use, not at every start.
var Version = sync.OnceValue(func() string {
	if stamped != "" {
		return stamped
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", ""
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	return "devel-" + rev[:min(12, len(rev))] + dirty
})
