#!/usr/bin/env bash
# Builds the second git the suite runs (git 2.55, the git of current
# distributions) from Debian's source package, into a cache outside the
# clone, and prints the path of its git binary. A warm machine (the binary
# already built at that version) skips everything but the print.
#
#   WT_GIT_CACHE   where builds are kept (default ~/.cache/wt-git)
#   WT_GIT_DEBVER  the Debian source version (default 1:2.55.0-1)
#
# It needs root for apt (a deb-src line for Debian's unstable suite, and
# the build's few -dev packages) and the network to deb.debian.org once.
# The build is git's own Makefile with what wt's tests need: no curl, no
# gettext, no Tcl/Tk, no Perl, no Python. Progress goes to stderr, the
# binary's path alone to stdout.
set -euo pipefail

debver=${WT_GIT_DEBVER:-1:2.55.0-1}
upver=${debver#*:}
upver=${upver%-*}
cache=${WT_GIT_CACHE:-$HOME/.cache/wt-git}
prefix=$cache/$upver
bin=$prefix/bin/git

say() { echo "git-newer: $*" >&2; }

if [ -x "$bin" ] && "$bin" version 2>/dev/null | grep -qF "git version $upver"; then
	echo "$bin"
	exit 0
fi

[ "$(id -u)" = 0 ] || { say "building git $upver needs root for apt (deb-src line, build packages)"; exit 1; }

src=/etc/apt/sources.list.d/wt-unstable-src.sources
if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ || ! apt-cache showsrc git 2>/dev/null | grep -qx "Version: $debver"; then
	say "adding a deb-src line for Debian's unstable suite ($src)"
	cat >"$src" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: unstable
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	apt-get update -qq >&2
fi

need=()
command -v dpkg-source >/dev/null || need+=(dpkg-dev)
command -v cc >/dev/null || need+=(gcc)
command -v make >/dev/null || need+=(make)
[ -e /usr/include/zlib.h ] || need+=(zlib1g-dev)
if [ ${#need[@]} -gt 0 ]; then
	say "installing ${need[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >&2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/wt-git-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
say "downloading Debian's source package git=$debver"
# apt verifies the files against the signed Release file; -d: no build deps.
apt-get source --download-only "git=$debver" >&2 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true
dsc=$(ls git_*.dsc 2>/dev/null | head -1)
[ -n "$dsc" ] || { say "apt-get source git=$debver downloaded nothing"; exit 1; }
# --no-check: apt checked the hashes already; the keyring of the
# package's uploader is not on a plain machine.
dpkg-source --no-check -x "$dsc" src >&2
say "building git $upver into $prefix (a few minutes on 2 cores)"
# DESTDIR: install into a staging tree and move it into place whole, so
# an interrupted build never leaves a half-installed git in the cache.
make -C src -j"$(nproc)" prefix="$prefix" NO_CURL=1 NO_GETTEXT=1 NO_TCLTK=1 NO_PERL=1 NO_PYTHON=1 NO_OPENSSL=1 \
	DESTDIR="$work/stage" install >"$work/build.log" 2>&1 || { tail -40 "$work/build.log" >&2; say "build failed"; exit 1; }
mkdir -p "$cache"
rm -rf "$prefix"
mv "$work/stage$prefix" "$prefix"
"$bin" version >&2
echo "$bin"
