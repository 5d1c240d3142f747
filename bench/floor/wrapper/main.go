// Command wrapper is the wrapper floor: a static Go program that runs its
// arguments in a new process group and waits, exiting with their status.
// It is what any Go wrapper of a command must cost on this machine (see
// BenchmarkExecFloor); wt-exec is measured beside it.
package main

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		os.Exit(ee.ExitCode())
	case err != nil:
		os.Exit(127)
	}
}
