package decision

import "fmt"

// The words of a code that several packages raise are written here, once,
// each form a function, so that changing what wt says when a lease is held
// is a change of this file (TestWordsInOnePlace fails when a package raises
// such a code with words of its own). A hint stays with its caller: it is a
// command for where the refusal happened.

// Worded are the codes whose words are this file's alone.
var Worded = []string{WriterLeaseHeld}

// HeldBy is WRITER_LEASE_HELD: a live writer (client, pid, since when)
// holds the worktree at path; why says what that keeps from happening.
func HeldBy(path, client string, pid int, since, why string) *Error {
	return New(WriterLeaseHeld, "%s is held by client %s, pid %d, since %s: %s", path, client, pid, since, why)
}

// HeldInGrant is WRITER_LEASE_HELD while a writer's grant is under way:
// its binding is written, its lease not yet (gone: the wt-exec that
// began it has exited, and what it started may still run).
func HeldInGrant(path, client string, pid int, leaseID string, gone bool, why string) *Error {
	what := fmt.Sprintf("is being taken by client %s, pid %d (lease %s, its grant in progress)", client, pid, leaseID)
	if gone {
		what = fmt.Sprintf("is held by what client %s's wt-exec (pid %d, gone before its lease %s was written) started", client, pid, leaseID)
	}
	return New(WriterLeaseHeld, "%s %s: %s", path, what, why)
}

// HeldChanged is WRITER_LEASE_HELD when the grant of the worktree at path
// changed between a grant's two sections (someone ended or took it).
func HeldChanged(path string) *Error {
	return New(WriterLeaseHeld, "the grant of %s changed while the store's lock was free (someone ended or took it)", path)
}

// HeldDuringLanding is WRITER_LEASE_HELD when a writer (client, pid) took
// task's lease while wt-admin land was landing it.
func HeldDuringLanding(task, client string, pid int) *Error {
	return New(WriterLeaseHeld, "a writer of task %s (client %s, pid %d) took its lease while it was being landed: not landed", task, client, pid)
}
