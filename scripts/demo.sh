#!/usr/bin/env bash
# A short real demonstration of wt on a temporary repository. Run by
# `make demo` after the binaries are installed; it uses whatever wt-admin is
# first on PATH.
set -euo pipefail

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wt-demo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export GIT_AUTHOR_NAME="wt demo" GIT_AUTHOR_EMAIL=demo@wt.invalid
export GIT_COMMITTER_NAME="wt demo" GIT_COMMITTER_EMAIL=demo@wt.invalid

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
run() { step "$*"; "$@"; }
refused() { step "$*"; if "$@"; then echo "demo: expected a refusal" >&2; exit 1; fi; }

cd "$tmp"
git init -q -b main app
git -C app commit -q --allow-empty -m "initial commit"
cd app

run wt-admin init
run wt-admin allocate --task T-1 --owner alice ../agent-1
run wt-admin allocate --task T-2 --owner bob ../agent-2
run wt-admin allocate --task R-1 --owner carol --role audit ../review-1
run wt-admin status

echo
echo "# bad input is refused with a decision code and a hint, and nothing is created:"
refused wt-admin allocate --task T-1 --owner dave ../agent-3
refused wt-admin allocate --task T-4 --owner dave ../agent-1

echo
echo "# a budget caps ACTIVE allocations; retaining one frees a place:"
run wt-admin policy --max-active 3
refused wt-admin allocate --task T-5 --owner erin ../agent-5
run wt-admin retain ../agent-2 --owner bob
run wt-admin allocate --task T-5 --owner erin ../agent-5
run wt-admin status

echo
echo "demo: done (the temporary repository $tmp is removed)"
