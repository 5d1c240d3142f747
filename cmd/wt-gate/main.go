// Command wt-gate answers for wt's installed hooks as `wt-hook run` does,
// without wt-hook's command line: see docs/design.md, "The gate (wt-hook)".
package main

import (
	"os"

	"github.com/wt-tool/wt/cmd/internal/gate"
)

func main() { os.Exit(gate.Main(os.Args[1:], os.Stdin, os.Stderr)) }
