// Package hooks owns the checks behind wt-hook run and check
// (docs/design.md, "The gate (wt-hook)"), the remote's pre-receive fence
// (receive.go), and the parsers of git's hook stdin protocols.
//
// The entitlement check ([Entitled]) reads files only: the hot path of every
// commit starts no git process. It takes the store's shared lock, so it
// reads each of a grant's sections whole: wt-exec reserves the worktree
// and writes the lease in one exclusive section (in fleet mode the lease in
// a second, once etcd granted it), starts its child with the lock free, and
// names the child's process group in the lease in a last section
// (core/lease.Acquire). A commit from the child always finds the lease.
package hooks
