// Command exit0 is the gate floor's hook program: a static Go program whose
// main only returns. A commit whose pre-commit shim execs it costs what any
// Go hook must cost on this machine (see BenchmarkCommitHooks).
package main

func main() {}
