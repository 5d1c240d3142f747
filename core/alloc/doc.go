// Package alloc owns allocations and their registrations: the repository
// handle every command opens (Repo: its git and its store, and the
// resolution of a path to its task), allocating governed worktrees,
// adopting them, lifecycle changes (retain, resume) and what gates each
// role (docs/design.md, "Allocations, roles and lifecycles"). Setting a
// repository up and its policy are core/policy; the branch ledger's
// reading is core/ledger; the validation of what the store records is
// core/store's; the status and ps views are core/view.
//
// Allocate is journaled: the plan is written to journal/ under the exclusive
// lock, git worktree add runs outside it, and the records are written under
// the lock again. A journal whose actor process is gone is finished (the
// worktree exists as planned) or rolled back (it does not) by the next
// allocate; anything in between is INTERRUPTED_TRANSACTION and is never
// guessed at. See docs/decisions.md for the rules.
package alloc
