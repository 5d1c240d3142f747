// Command wt-hook: see README.md and docs/design.md, "The gate (wt-hook)".
package main

import (
	"os"

	"github.com/wt-tool/wt/cmd/internal/hookcli"
)

func main() { os.Exit(hookcli.Hook(os.Args[1:], os.Stdout, os.Stderr)) }
