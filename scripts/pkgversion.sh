#!/bin/sh
# The package version: a release tag vX.Y.Z without its v; otherwise
# 0.0.0~git<describe>, which sorts before any release.
v=$(git describe --tags --always 2>/dev/null || echo devel)
case $v in
v[0-9]*) echo "${v#v}" ;;
*) echo "0.0.0~git$v" ;;
esac
