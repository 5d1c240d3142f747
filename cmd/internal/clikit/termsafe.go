package clikit

import (
	"io"
	"text/tabwriter"

	"github.com/wt-tool/wt/cmd/internal/textout"
)

// Clean escapes every control character in a value printed inside a line
// (textout.Clean).
var Clean = textout.Clean

// Table is the column layout of every table wt prints.
func Table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// Dash is s, or "-" for an empty cell.
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
