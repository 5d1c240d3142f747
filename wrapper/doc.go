// Package wrapper owns the process wt-exec runs: spawning it in its own
// process group or pty session, forwarding signals, reaping every descendant
// and mapping the exit status (docs/design.md, "wt-exec"). It arrives with the writer-lease
// issue; until then it is empty so the import rules already cover it.
package wrapper
