//go:build !linux

package safefile

// wt reads /proc, uses prctl(PR_SET_CHILD_SUBREAPER) and Linux process groups;
// it has no meaning on other systems. This line makes such a build fail with a
// message that says so, instead of a binary that silently decides wrongly.
var _ = wt_builds_only_on_linux_because_it_reads_proc
