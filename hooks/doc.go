// Package hooks owns the checks behind wt-hook run and check
// (docs/design.md, "The gate (wt-hook)"), the remote's pre-receive fence
// (receive.go), and the parsers of git's hook stdin protocols.
//
// The entitlement check ([Entitled]) reads files only: the hot path of every
// commit starts no git process. It takes the store's shared lock, so it
// never sees a grant half made (wt-exec writes a lease after its child has
// started, inside one exclusive section).
package hooks
