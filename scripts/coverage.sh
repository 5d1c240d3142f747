#!/usr/bin/env bash
# The unit-test coverage of every package of the module, as a Markdown
# table (CONTRIBUTING.md, "Coverage"): go test -cover of each package on
# its own tests (the end-to-end suite's reach into a package is not
# counted, and cmd/internal/e2e, which holds tests alone, is not run),
# every other package listed, none chosen. Usage:
# bash scripts/coverage.sh [go test flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=$(go list ./... | grep -v '/cmd/internal/e2e$')
# -json: go test's plain output interleaves the lines of packages
# without tests; each event here names its package.
# shellcheck disable=SC2086
events=$(go test -count=1 -cover -json "$@" $pkgs 2>&1) || {
	printf '%s\n' "$events" | grep -E '"Action":"fail"' >&2 || true
	echo "coverage: a test failed (go test -cover $* PACKAGE shows it)" >&2
	exit 1
}
echo "| package | coverage |"
echo "|---|---|"
{
	printf '%s\n' "$pkgs" | sed 's/^/PKG /'
	printf '%s\n' "$events" | grep '"Action":"output"' | grep -E 'coverage: |no test files'
} | awk '
	$1 == "PKG" { order[++n] = $2; next }
	{
		if (!match($0, /"Package":"[^"]*"/)) next
		pkg = substr($0, RSTART + 11, RLENGTH - 12)
		if (match($0, /coverage: [0-9.]+%/)) cov[pkg] = substr($0, RSTART + 10, RLENGTH - 10)
		else if ($0 ~ /\[no statements\]/) cov[pkg] = "no statements"
		else if ($0 ~ /no test files/ && !(pkg in cov)) cov[pkg] = "no test files"
	}
	END {
		for (i = 1; i <= n; i++) {
			p = order[i]; c = (p in cov) ? cov[p] : "no test files"
			sub("github.com/wt-tool/wt/", "", p); if (p == "github.com/wt-tool/wt") p = "."
			printf "| `%s` | %s |\n", p, c
		}
	}'
