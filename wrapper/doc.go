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
// --wait line (core/waitline) and the command's cgroup
// (wrapper/cgroup). The child's mechanics live in wrapper/child: catching
// and forwarding signals, starting the command in its group or pty and in
// its cgroup (the confinement's ruleset applied on the forking thread),
// handing it the terminal, the supervision loop that reaps every
// descendant and stops the leftovers, the notices held while the terminal
// is raw, and dying by the command's signal. Its child.Proc owns that
// state (the child's pid and group, the terminal, the signal channels, the
// cgroup, the critical section in which reaping leaves the publisher's git
// alone) and gets what it needs of the run as a child.Config: the notices'
// sink, the lease's renewal, whether the lease was transferred, and the
// fleet helper to spare.
//
// What stays here is one run's supervisor, the lease and fleet
// orchestration around that child: the holder, the lease section and the
// release (run.go, supervisor.go, holderlock.go), --wait (wait.go), fleet
// mode (fleet.go), the confinement's plan and private TMPDIR (confine.go),
// the publisher of a confined run's branch (publish.go), the broker of its
// lease requests (broker.go) and the report of ungated moves (ungated.go).
package wrapper
