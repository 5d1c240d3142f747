// Package wrapper is what wt-exec does around the command it runs
// (docs/design.md, "wt-exec"): it finds the holder and takes the writer
// lease (core/lease), waits in line for a held one (--wait), confines the
// command with Landlock, applied on the thread that forks it (--confine),
// starts it in its own process group or pty session and in
// a cgroup of its own where one can be made, forwards signals, renews the
// lease, reaps every descendant, stops what is left after the grace
// period, releases what it acquired, and maps the command's end to
// wt-exec's exit (dying by the command's signal when it died of one).
package wrapper
