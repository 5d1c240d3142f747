// Package hooks owns the checks behind wt-hook run and check, and the parsers
// of git's hook stdin protocols (SPEC §7). It arrives with the hook issue.
package hooks
