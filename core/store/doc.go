// Package store is wt's on-disk state under <common-dir>/wt/ (docs/format.md).
//
// # Layout
//
//	lock                       flock(2) target: shared for reads, exclusive for writes
//	repository.json            repository identity
//	policy.json                repository policy
//	allocations/<id>.json      one allocation record per file
//	bindings/<key>.json        worktree key -> allocation id
//	registrations/<key>.json   registration document (worktree-registration/v1)
//	leases/<allocation>.json   the current writer lease of an allocation
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
//   - Runtime state has runtime durability: allocation writes that change
//     only runtime occupancy and lease_generation ([Tx.PutAllocationRuntime])
//     are fsynced before the rename (so never torn or empty: the same file
//     holds the task's ownership) but their directory is not; lease files
//     are boot-scoped, renamed into place without any fsync, and a lease
//     file that is unreadable and was last modified before this boot
//     (/proc/stat's btime) is dead whatever its bytes ([Tx.Lease] reads it
//     as absent, a write section removes it). A section that makes only
//     such writes does not fsync its events. A process crash loses
//     nothing (the page cache survives it); a power loss may bring back the
//     previous version of these files and drop the section's last event
//     lines. That is safe because runtime state describes processes of one
//     boot: after a reboot every holder is dead by its boot id, whichever
//     version is read. wt-exec's path makes two fsyncs instead of nine.
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
