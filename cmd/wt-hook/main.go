// Command wt-hook: see README.md and docs/design.md, "The gate (wt-hook)".
package main

import (
	"os"

	"github.com/wt-tool/wt/cmd/internal/cli"
)

func main() { os.Exit(cli.Hook(os.Args[1:], os.Stdout, os.Stderr)) }
