//go:build wt_crashpoints

package crashpoint

import (
	"os"
	"syscall"
)

// Here kills the process with SIGKILL if WT_TEST_CRASH_AT names this point.
func Here(name string) {
	if os.Getenv("WT_TEST_CRASH_AT") == name {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is delivered before this returns in practice
	}
}
