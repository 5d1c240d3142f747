//go:build wt_gendocs

// Command gendocs writes wt's man pages and shell completions (package
// cmd/internal/docs) under DIR:
//
//	go run -tags wt_gendocs ./cmd/internal/gendocs DIR
//
// The build tag keeps it out of `go install <module>/cmd/...@VERSION`,
// which installs the four binaries of wt and nothing else.
package main

import (
	"fmt"
	"os"

	"github.com/wt-tool/wt/cmd/internal/docs"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendocs DIR")
		os.Exit(2)
	}
	if err := docs.Generate(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}
