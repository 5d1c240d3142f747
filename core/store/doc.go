// Package store is wt's on-disk state under <common-dir>/wt/ (docs/format.md,
// which describes every file).
//
// # Layout
//
//	lock                       flock(2) target: shared for reads, exclusive for writes
//	repository.json            repository identity
//	policy.json                repository policy
//	allocations/<id>.json      one allocation record per file
//	bindings/<key>.json        worktree key -> allocation id
//	registrations/<key>.json   registration document (worktree-registration/v1)
//	branches/<sha256>.json     branch index: which allocation a task branch belongs to
//	leases/<allocation>.json   the current writer lease of an allocation
//	runtime/<allocation>.json  an allocation's runtime bindings and lease generation
//	handoffs/<allocation>.json the next grant of a worktree, reserved (lease handoff)
//	waiters/<key>/<ticket>     wt-exec --wait's line
//	views/<key>.json           a confined run's private view
//	ledger/<name>.jsonl        the branch ledgers (a task branch's, the publication branch's)
//	publication.json           the publication lease (wt-admin land)
//	landing/<allocation>.json  where a task stands on its way onto the publication branch
//	land-logs/<task>/<n>.log   a landing's test output
//	journal/<tx>.json          multi-step operations in flight
//	receipts/<tx>.json         multi-step operations finished
//	events.jsonl               append-only audit log
//
// plus the registration marker <common-dir>/worktrees/<key>/wt-registration.
//
// # Invariants
//
//   - Every read and write happens inside [Store.Read] (shared lock) or
//     [Store.Write] (exclusive lock); read-modify-write is one Write call.
//     The lock file is never renamed or replaced, because flock binds to an inode.
//   - Writes are atomic: a temp file in the same directory, fsync, rename,
//     fsync of the directory. A crash leaves the old or the new file, never a mix.
//   - Runtime state is boot-scoped: lease files, and allocations' runtime
//     files ([Runtime]: the runtime occupancy bindings and lease_generation
//     that [Tx.PutAllocationRuntime] writes instead of the allocation
//     record), are renamed into place without any fsync, and one that is
//     unreadable and was last modified before this boot (/proc/stat's
//     btime) is dead whatever its bytes ([Tx.Lease] and [Tx.Allocation]
//     read it as absent, a write section removes it). A section that makes
//     only such writes does not fsync its events. A process crash loses
//     nothing (the page cache survives it); a power loss may lose or tear
//     these files and drop the section's last event lines. That is safe
//     because runtime state describes processes of one boot: after a reboot
//     every holder is dead by its boot id, whichever version is read. The
//     allocation record, which holds the task's ownership, is never
//     rewritten by a wt-exec run, so no power loss during one can tear it.
//     wt-exec's path makes no fsync (it made nine at first).
//   - events.jsonl gets one write(2) per line in append mode, so lines are
//     whole; a reader skips a last line without its newline (a power loss
//     can cut it).
//   - Reads are strict: malformed JSON, an unknown schema version, a missing or
//     unknown field, or a symlink where a file belongs is INVALID_METADATA naming
//     the file, and the file is left exactly as it was. Nothing is "repaired".
//   - [Tx.Put] increments record_version; a caller holding an expected version
//     checks it with [CheckVersion] (RECORD_VERSION_CONFLICT).
//   - An operation on one allocation reads a constant number of files; only
//     listing methods read a whole directory.
package store
