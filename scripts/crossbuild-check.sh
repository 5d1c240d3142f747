#!/usr/bin/env bash
# wt builds on Linux only, and a build for another system must fail with a
# message that says so, in every package that fails (not with undefined
# Linux system calls alone): each such package holds a linux_only.go.
# .ci/run runs this after make test (a build for darwin: about 20 s cold).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(GOOS=darwin GOARCH=arm64 go build ./... 2>&1) && { echo "crossbuild-check: a darwin build succeeded" >&2; exit 1; }
failed=$(grep -c '^# ' <<<"$out" || true)
said=$(grep -c 'wt_builds_only_on_linux' <<<"$out" || true)
if [ "$failed" -eq 0 ] || [ "$said" -lt "$failed" ]; then
	echo "crossbuild-check: $failed package(s) fail to build for darwin, $said of them say wt builds only on Linux:" >&2
	echo "$out" >&2
	exit 1
fi
echo "crossbuild-check: a darwin build fails in $failed package(s), each saying wt builds only on Linux"
