// Package install owns the hook shim files: writing, recognising, chaining
// and removing them (SPEC §7). It arrives with the hook issue.
package install
