// Package broker is the protocol between a confined wt-admin and the
// wt-exec that runs it: the few commands a confined run may not carry out
// in its own view of the store (ready, lease handoff, lease transfer) are
// passed, one JSON request a connection, over the socket wt-exec names in
// WT_EXEC_BROKER, and wt-exec hands back their output and exit status.
// It is a package of its own so that wt-admin speaks it without linking
// wt-exec's supervisor.
package broker

// Request is one command a confined wt-admin passes on: its arguments
// and the directory it ran in.
type Request struct {
	Args []string `json:"args"`
	Dir  string   `json:"dir"`
}

// Reply is what wt-exec hands back.
type Reply struct {
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	Code   int    `json:"code"`
}
