package decision

// The forms of WRITER_LEASE_HELD, which four packages raise, as functions
// with named values; their words are the table's (table.go).

// HeldBy is WRITER_LEASE_HELD: a live writer (client, pid, since when)
// holds the worktree at path; why says what that keeps from happening.
func HeldBy(path, client string, pid int, since, why string) *Error {
	return Say(WriterLeaseHeld, "held-by", path, client, pid, since, why)
}

// HeldInGrant is WRITER_LEASE_HELD while a writer's grant is under way:
// its binding is written, its lease not yet (gone: the wt-exec that
// began it has exited, and what it started may still run).
func HeldInGrant(path, client string, pid int, leaseID string, gone bool, why string) *Error {
	if gone {
		return Say(WriterLeaseHeld, "held-after-grant", path, client, pid, leaseID, why)
	}
	return Say(WriterLeaseHeld, "held-in-grant", path, client, pid, leaseID, why)
}

// HeldChanged is WRITER_LEASE_HELD when the grant of the worktree at path
// changed between a grant's two sections (someone ended or took it).
func HeldChanged(path string) *Error {
	return Say(WriterLeaseHeld, "grant-changed", path)
}

// HeldDuringLanding is WRITER_LEASE_HELD when a writer (client, pid) took
// task's lease while wt-admin land was landing it.
func HeldDuringLanding(task, client string, pid int) *Error {
	return Say(WriterLeaseHeld, "held-during-landing", task, client, pid)
}
