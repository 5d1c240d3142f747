#!/usr/bin/env bash
# Runs the README's `go install` line (the block after <!-- go-install -->)
# verbatim, in a fresh clone of this checkout's HEAD with an empty GOBIN:
# it must exit 0 and install exactly the five binaries, static, each
# answering --version. Dependencies come from the module cache that
# `go mod download` filled, so the check needs no network. .ci/run runs it
# after make test.
set -euo pipefail
cd "$(dirname "$0")/.."

line=$(awk '/<!-- go-install -->/{on=1; next} on && /^```sh/{code=1; next} code && /^```/{exit} code{print}' README.md)
case "$line" in
"" | *$'\n'*) echo "goinstall-check: README.md has no one-line go install block after <!-- go-install -->" >&2; exit 1 ;;
esac
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
git clone -q . "$tmp/clone"
export GOBIN="$tmp/bin" GOFLAGS=-mod=readonly GOPROXY=off
echo "goinstall-check: $line"
(cd "$tmp/clone" && bash -ec "$line")

got=$(ls "$GOBIN" | tr '\n' ' ')
if [ "$got" != "wt-admin wt-exec wt-fleet wt-gate wt-hook " ]; then
	echo "goinstall-check: the README's go install installed: $got(want wt-admin wt-exec wt-fleet wt-gate wt-hook)" >&2
	exit 1
fi
for b in wt-admin wt-exec wt-hook; do
	"$GOBIN/$b" --version >/dev/null || { echo "goinstall-check: $b --version failed" >&2; exit 1; }
done
for b in wt-admin wt-exec wt-fleet wt-gate wt-hook; do
	if ! go version -m "$GOBIN/$b" | grep -q 'CGO_ENABLED=0'; then
		echo "goinstall-check: $b is not a static (CGO_ENABLED=0) build" >&2
		exit 1
	fi
done
echo "goinstall-check: the README's go install line installs the five binaries, static"
