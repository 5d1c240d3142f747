// Package wrapper is what wt-exec does around the command it runs
// (docs/design.md, "wt-exec"): it finds the holder and takes the writer
// lease (core/lease), waits in line for a held one (--wait), confines the
// command with Landlock, applied on the thread that forks it (--confine),
// starts it in its own process group or pty session and in
// a cgroup of its own where one can be made, forwards signals, renews the
// lease, reaps every descendant, stops what is left after the grace
// period, releases what it acquired, and maps the command's end to
// wt-exec's exit (dying by the command's signal when it died of one).
//
// Its concerns with no state of the run in them live in packages of their
// own: the confinement planner and the private view (wrapper/confine), the
// --wait line (wrapper/waitline) and the command's cgroup
// (wrapper/cgroup). What stays here is one run's supervisor: the lease and
// fleet orchestration (run.go, fleet.go, broker.go, publish.go,
// ungated.go) and the child's mechanics (spawn.go, supervise.go, die.go),
// which share the run's state (the child's pid and group, the terminal, the
// publisher's git that reaping must leave alone).
package wrapper
