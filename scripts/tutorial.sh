#!/usr/bin/env bash
# make tutorial: runs docs/tutorial.md as a reader would, on a scratch
# home. Every ```sh block of the page must follow a marker
# <!-- tutorial: NAME -->; the blocks run in order, in one bash, exactly
# as written, and after each one check_NAME (scripts/tutorial/checks.sh)
# checks what it left. A block without a marker, or a marker without a
# check, fails the run. The agent is the scripted stand-in
# scripts/tutorial/bin/claude; husky comes from npm (the network).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
page=$root/docs/tutorial.md
checks=$root/scripts/tutorial/checks.sh
for c in npm node tmux git go; do
	command -v "$c" >/dev/null || { echo "tutorial: $c is required" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/wt-tutorial.XXXXXX")
keep=${TUTORIAL_KEEP:-}
cleanup() {
	TMUX_TMPDIR=$work/tmux tmux kill-server 2>/dev/null || true
	if [ -z "$keep" ]; then rm -rf "$work"; else echo "tutorial: kept $work"; fi
}
trap cleanup EXIT

# The steps as one script: each block, then its check.
script=$work/tutorial.sh
awk -v checks="$checks" '
	BEGIN { print "set -euo pipefail"; print "source " checks }
	/^<!-- tutorial: [a-z0-9-]+ -->$/ { name = $3; next }
	/^```sh$/ {
		if (name == "") { printf "tutorial: a ```sh block at line %d has no <!-- tutorial: NAME --> marker\n", NR > "/dev/stderr"; bad = 1 }
		printf "step_begin %s\n", name; inblock = 1; next
	}
	inblock && /^```$/ { printf "step_end %s\n", name; inblock = 0; name = ""; n++; next }
	inblock { print; next }
	/^```/ { if (name != "") { printf "tutorial: the block after the marker %s is not ```sh\n", name > "/dev/stderr"; bad = 1 } }
	END { if (bad) exit 1; if (n == 0) { print "tutorial: no steps found" > "/dev/stderr"; exit 1 } }
' "$page" > "$script"

# A home of its own (the page works in ~/work and installs into ~/.local);
# the Go and npm caches are the machine's, so nothing is fetched twice.
export GOCACHE=$(go env GOCACHE) GOMODCACHE=$(go env GOMODCACHE) GOPATH=$(go env GOPATH) GOFLAGS=$(go env GOFLAGS)
export npm_config_cache=${npm_config_cache:-$HOME/.npm} npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
export HOME=$work/home
mkdir -p "$HOME"
ln -s "$root" "$HOME/wt"
git config --global user.name "tutorial reader"
git config --global user.email reader@wt.invalid
git config --global init.defaultBranch main
# tmux on a server of its own, so a reader's session is never touched.
mkdir -p "$work/tmux" && export TMUX_TMPDIR=$work/tmux
unset TMUX
# The stand-in agent first on PATH; what make install puts in
# ~/.local/bin comes before anything installed elsewhere (the page says so).
export PATH="$root/scripts/tutorial/bin:$PATH"
export TUTORIAL_ROOT=$root
cd "$HOME"
start=$(date +%s)
bash "$script"
echo "tutorial: every step of docs/tutorial.md ran and was checked ($(( $(date +%s) - start ))s)"
