#!/usr/bin/env bash
# Checks the README's `go install`, from a clean GOPATH: this checkout's
# HEAD is served at a version by a file:// module proxy, and
#   CGO_ENABLED=0 go install -trimpath -tags urfave_cli_no_docs,grpcnotrace MODULE/cmd/...@VERSION
# must install exactly the four binaries, static, each reporting VERSION.
# Dependencies come from the local module cache (itself a proxy layout), so
# the check needs no network once `go mod download` has run (the checksum
# database is not asked: see GOSUMDB below). .ci/run runs
# it after make test.
set -euo pipefail
cd "$(dirname "$0")/.."

mod=$(go list -m)
ver=v0.0.0-ci
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT

at="$tmp/proxy/$mod/@v"
mkdir -p "$at"
echo "$ver" >"$at/list"
printf '{"Version":"%s","Time":"%s"}\n' "$ver" "$(git log -1 --format=%cI HEAD)" >"$at/$ver.info"
git show HEAD:go.mod >"$at/$ver.mod"
# internal/etcdserver is a module of its own (the tests' etcd): not part of
# this module's zip, as the go command leaves nested modules out.
git archive --format=zip --prefix="$mod@$ver/" -o "$at/$ver.zip" HEAD -- . ':(exclude)internal/etcdserver'

cache=$(go env GOMODCACHE)/cache/download
export GOPATH="$tmp/gopath" GOMODCACHE="$tmp/gopath/pkg/mod" GOBIN=
# GOSUMDB=off: every module comes from a local file: this checkout, and the
# module cache that go mod download filled and checked against go.sum.
export GOPROXY="file://$tmp/proxy,file://$cache" GOSUMDB=off GOFLAGS=-mod=mod
CGO_ENABLED=0 go install -trimpath -tags urfave_cli_no_docs,grpcnotrace "$mod/cmd/...@$ver"

got=$(ls "$GOPATH/bin" | tr '\n' ' ')
if [ "$got" != "wt-admin wt-exec wt-fleet wt-gate wt-hook " ]; then
	echo "goinstall-check: go install $mod/cmd/...@$ver installed: $got(want wt-admin wt-exec wt-fleet wt-gate wt-hook)" >&2
	exit 1
fi
for b in wt-admin wt-exec wt-hook; do
	out=$("$GOPATH/bin/$b" --version)
	case "$out" in
	*"$ver"*) ;;
	*) echo "goinstall-check: $b --version says \"$out\", not $ver" >&2; exit 1 ;;
	esac
done
for b in wt-admin wt-exec wt-fleet wt-gate wt-hook; do
	if ! go version -m "$GOPATH/bin/$b" | grep -q 'CGO_ENABLED=0'; then
		echo "goinstall-check: $b is not a static (CGO_ENABLED=0) build" >&2
		exit 1
	fi
done
echo "goinstall-check: go install $mod/cmd/...@$ver from a clean GOPATH installs the five binaries, static, at $ver"
