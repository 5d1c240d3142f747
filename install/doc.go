// Package install owns wt's hook shims: small #!/bin/sh files in the hooks
// dir git really uses, rendered from embedded templates (install/shims) and
// recognised by exact content, every shipped version included (SPEC §7).
//
// A shim finds wt-hook as $WT_HOOK_BIN, else the absolute path recorded at
// install (single-quoted), else wt-hook on PATH, and fails closed with the
// reinstall command when none exists. A foreign hook is kept beside the
// shim as HOOK.wt-chained and run first with the same arguments and stdin.
// The reference-transaction shim returns at once for states other than
// "prepared", without starting wt-hook.
package install
