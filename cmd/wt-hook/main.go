// Command wt-hook: see README.md and SPEC §7.
package main

import (
	"os"

	"github.com/wt-tool/wt/cmd/internal/cli"
)

func main() { os.Exit(cli.Hook(os.Args[1:], os.Stdout, os.Stderr)) }
