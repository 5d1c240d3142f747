// Package alloc owns allocations and their registrations: setting a
// repository up (init, policy), allocating governed worktrees, lifecycle
// changes (retain, resume) and what gates each role (docs/design.md, "Allocations,
// roles and lifecycles"). The status and ps views are core/view.
//
// Allocate is journaled: the plan is written to journal/ under the exclusive
// lock, git worktree add runs outside it, and the records are written under
// the lock again. A journal whose actor process is gone is finished (the
// worktree exists as planned) or rolled back (it does not) by the next
// allocate; anything in between is INTERRUPTED_TRANSACTION and is never
// guessed at. See docs/decisions.md for the rules.
package alloc
