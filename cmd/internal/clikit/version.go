package clikit

import (
	"io"
	"runtime/debug"
	"sync"

	ucli "github.com/urfave/cli/v2"
)

// stamped is the version the Makefile stamps into the binaries
// (-ldflags "-X github.com/wt-tool/wt/cmd/internal/clikit.stamped=..." from
// git describe). Empty in a `go build` or `go install` build.
var stamped string

var printersOnce sync.Once

// versionWhenPrinted makes urfave/cli's version and help printers fill the
// app's version in (with Version) just before they print it.
func versionWhenPrinted() {
	printersOnce.Do(func() {
		printVersion := ucli.VersionPrinter
		ucli.VersionPrinter = func(c *ucli.Context) {
			c.App.Version = Version()
			printVersion(c)
		}
		printHelp := ucli.HelpPrinter
		ucli.HelpPrinter = func(w io.Writer, templ string, data any) {
			if a, ok := data.(*ucli.App); ok {
				a.Version = Version()
			}
			printHelp(w, templ, data)
		}
	})
}

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
