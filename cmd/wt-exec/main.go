// Command wt-exec: see README.md and docs/design.md, "wt-exec".
package main

import (
	"os"

	"github.com/wt-tool/wt/cmd/internal/execcli"
	"github.com/wt-tool/wt/wrapper"
	"github.com/wt-tool/wt/wrapper/confine"
)

func main() {
	if confine.IsHelper() {
		confine.Helper() // the confinement helper: never returns
	}
	wrapper.Early() // signal set-up overlaps the command line's parsing
	code, died, toGroup := execcli.ExecDying(os.Args[1:], os.Stdout, os.Stderr)
	wrapper.DieBy(died, toGroup) // the child died of a signal: so does wt-exec
	os.Exit(code)
}
