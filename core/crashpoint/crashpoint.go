//go:build !wt_crashpoints

// Package crashpoint marks the places where a multi-step operation can be
// interrupted, so tests can prove that the next run finishes or undoes it.
//
// In the shipped binary Here does nothing and reads nothing: there is no
// environment switch. Test builds made with -tags wt_crashpoints kill the
// process with SIGKILL at the point named by WT_TEST_CRASH_AT, which is as
// abrupt as a power cut is for the store's purposes (no defer, no cleanup).
package crashpoint

// Here is a named point in a journaled operation.
func Here(name string) {}
