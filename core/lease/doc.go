// Package lease grants and ends writer leases: acquire, renew, take over and
// release (docs/design.md, "Writer leases"), in exclusive sections of the store that start no
// process and run no git, each outcome a stable decision code and each change an event in
// events.jsonl.
//
// # Invariants
//
//   - At most one lease per allocation; its holder is a process identity
//     (boot id, pid, start ticks) plus client, session and run ids, compared
//     field by field.
//   - A lease is taken over only when it is dead (core/liveness): holder gone,
//     its groups empty, and no other process using the worktree. Expiry alone
//     never makes a lease dead.
//   - Every grant and takeover increments the allocation's lease_generation,
//     which is never reused: it is the fencing token.
//   - While a lease is held its worktree carries git's own lock file with a
//     reason wt recognises, so git worktree prune and remove respect it.
//
// Storage is reached through [Records], which *store.Tx implements; a second
// backend (fleet mode, docs/design.md, "Fleet mode") adds to it without touching wrapper/ or
// hooks/.
package lease
