// Package install owns wt's hook shims: small #!/bin/sh files in the hooks
// dir git really uses, rendered from embedded templates (install/shims) and
// recognised by exact content, every shipped version included
// (docs/decisions.md, "Hooks").
//
// A shim runs exactly the wt-hook binary whose absolute path was recorded
// at install (single-quoted), and fails closed with the reinstall command
// when that is not an executable file. No environment variable picks
// another binary: shims before v3 honoured $WT_HOOK_BIN and PATH, an off
// switch (WT_HOOK_BIN=/bin/true git commit) that v3 removed. A foreign hook
// is kept beside the shim as HOOK.wt-chained and run after wt's judgement
// allowed, with the same arguments and stdin (a refusal runs no other hook).
//
// The reference-transaction shim returns at once for states other than
// "prepared", without starting wt-hook.
package install
