// Command wt-admin: see README.md and docs/design.md.
package main

import (
	"os"

	"github.com/wt-tool/wt/cmd/internal/cli"
)

func main() { os.Exit(cli.Admin(os.Args[1:], os.Stdout, os.Stderr)) }
