// Command wt-exec: see README.md and SPEC §6.
package main

import (
	"os"

	"github.com/wt-tool/wt/cmd/internal/cli"
)

func main() { os.Exit(cli.Exec(os.Args[1:], os.Stdout, os.Stderr)) }
