#!/usr/bin/env bash
# A short real demonstration of wt on a temporary repository. Run by
# `make demo` after the binaries are installed; it uses whatever wt-admin is
# first on PATH.
set -euo pipefail

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wt-demo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export GIT_AUTHOR_NAME="wt demo" GIT_AUTHOR_EMAIL=demo@wt.invalid
export GIT_COMMITTER_NAME="wt demo" GIT_COMMITTER_EMAIL=demo@wt.invalid

# quote prints its arguments as a shell would read them back: a word of
# safe characters as it is, any other in single quotes (so a printed
# command runs when copied).
quote() {
	local out="" a
	for a in "$@"; do
		if [[ $a =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then
			out+=" $a"
		else
			out+=" '${a//\'/\'\\\'\'}'"
		fi
	done
	printf '%s' "${out# }"
}
step() { printf '\n\033[1m$ %s\033[0m\n' "$(quote "$@")"; }
run() { step "$@"; "$@"; }
refused() { step "$@"; if "$@"; then echo "demo: expected a refusal" >&2; exit 1; fi; }

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
echo "# two agents (small scripts) write in their own worktrees under wt-exec:"
cat > "$tmp/agent.sh" <<'AGENT'
# An "agent": records its pid, writes notes until told to stop.
echo $$ > "$1.pid"
while [ ! -e "$1.stop" ]; do echo "work $(date +%T.%N)" >> notes.txt; sleep 0.1; done
AGENT
step "wt-exec -C ../agent-1 --client-id agent-1 -- sh agent.sh &"
wt-exec -C ../agent-1 --client-id agent-1 -- sh "$tmp/agent.sh" "$tmp/a1" &
exec1=$!
step "wt-exec -C ../agent-5 --client-id agent-5 -- sh agent.sh &"
wt-exec -C ../agent-5 --client-id agent-5 -- sh "$tmp/agent.sh" "$tmp/a5" &
exec5=$!
while [ ! -s "$tmp/a1.pid" ] || [ ! -s "$tmp/a5.pid" ]; do sleep 0.05; done
run wt-admin status

echo
echo "# a second writer on agent-1's worktree is refused while agent-1 lives:"
refused wt-exec -C ../agent-1 --client-id intruder -- touch ../agent-1/intruder.txt

echo
echo "# agent-1's wt-exec dies (SIGKILL); its agent keeps running, so the lease holds:"
step "kill -KILL $exec1  # wt-exec of agent-1"
kill -KILL "$exec1"
wait "$exec1" 2>/dev/null || true
refused wt-exec -C ../agent-1 --client-id rescuer -- true

run wt-admin lease inspect ../agent-1 --client-id rescuer
refused wt-admin lease abandon ../agent-1 --reason "looks stuck" --operator

echo
echo "# once the leftover agent is gone, the lease is dead: inspect says so, and wt-exec takes it over:"
agent1=$(cat "$tmp/a1.pid")
touch "$tmp/a1.stop"
while kill -0 "$agent1" 2>/dev/null; do sleep 0.05; done
run wt-admin lease inspect ../agent-1 --client-id rescuer
run wt-exec -C ../agent-1 --client-id rescuer -- sh -c 'wc -l < notes.txt | xargs echo notes kept by agent-1:'

touch "$tmp/a5.stop"
wait "$exec5"
run wt-admin status
run wt-admin lease list --all

echo
echo "# a retained review whose checkout was deleted: doctor finds it, prune removes its registration (plan, then apply):"
run wt-admin retain ../review-1 --owner carol
rm -rf ../review-1
refused wt-admin doctor
run wt-admin prune ../review-1 --owner carol
plan=$(wt-admin prune ../review-1 --owner carol --json | sed -n 's/.*"plan_id": "\(.*\)".*/\1/p')
run wt-admin prune ../review-1 --owner carol --apply "$plan"

echo
echo "# wt-hook gates commits: only the live writer of a worktree may commit in it."
echo "# (wt-admin init installed the hooks; wt-admin init --no-hooks would not have.)"
run wt-hook status
cd ../agent-1
refused git commit -q --allow-empty -m "rogue commit from a plain shell"
refused git commit -q --allow-empty --no-verify -m "rogue commit, hooks skipped"
run wt-exec --client-id agent-1 -- git commit -q --allow-empty -m "the agent's commit"
run git log --oneline -2
cd ../app
run wt-hook uninstall

echo
echo "demo: done (the temporary repository $tmp is removed)"
