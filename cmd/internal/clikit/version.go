package clikit

import (
	"io"
	"sync"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/textout"
)

// Version is the tool version every binary reports (textout.Version).
var Version = textout.Version

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
