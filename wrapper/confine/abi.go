//go:build !wt_testseams

package confine

// ABI is the kernel's Landlock ABI version, 0 when it has none.
// (Test builds with -tags wt_testseams can pretend otherwise; the shipped
// binary has no such switch.)
func ABI() int { return kernelABI() }
