// Command wt-fleet is wt's helper for fleet mode (docs/design.md, "Fleet mode"): the only
// binary that links the etcd client. wt-exec, wt-hook and wt-admin run it
// when the policy's coordinator is etcd; it is not meant to be run by hand.
package main

import (
	"os"

	"github.com/wt-tool/wt/cmd/internal/fleetcli"
)

func main() { os.Exit(fleetcli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
