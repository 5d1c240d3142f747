//go:build wt_testseams

package confine

import (
	"os"
	"strconv"
)

// ABI is the kernel's Landlock ABI version, or, in this test
// build, WT_TEST_LANDLOCK_ABI when set: tests pretend a kernel without
// Landlock (0) or with an old ABI.
func ABI() int {
	if v, ok := os.LookupEnv("WT_TEST_LANDLOCK_ABI"); ok {
		n, _ := strconv.Atoi(v)
		return n
	}
	return kernelABI()
}

// In this test build WT_TEST_NO_VIEW set pretends a machine where no
// private view can be made (not root, no user namespaces).
func init() {
	if os.Getenv("WT_TEST_NO_VIEW") != "" {
		mountNSAllowed, userNSAllowed = func() bool { return false }, func() bool { return false }
	}
}
