// Package proc reads process identity and process state from /proc.
//
// It owns the facts wt's liveness rules rest on (docs/design.md, "Liveness"):
//
//   - a holder is the triple (boot id, pid, start ticks), where start ticks is
//     field 22 of /proc/<pid>/stat, parsed after the last ')' because a comm may
//     hold spaces and parentheses;
//   - [IsLive] compares that triple with the running system;
//   - [Scan] is one reading of /proc shared by every check in a pass: process
//     groups, ancestry, and [Scan.PathsInUse];
//   - [Resolve] turns a holder selector (self, PID, ancestor:NAME) into a Holder;
//   - [DecodeRuntimeBinding] is the strict decoder of runtime occupancy values.
//
// Everything here observes a moving system: by the time a caller uses an answer
// the process may have exited. Callers decide under the store's lock and treat
// any doubt as "live" (fail closed). /proc is read directly; no ps, no lsof.
package proc
