# The checks of docs/tutorial.md's steps, sourced by scripts/tutorial.sh:
# check_NAME runs after the block marked <!-- tutorial: NAME --> and
# fails (says what it expected) unless the step left what the page says.
# They read, never change: git and wt's views.

step_begin() {
	_step=$1 _t0=$(date +%s)
	echo "tutorial: --- step $1"
}
step_end() {
	if ! declare -F "check_$1" >/dev/null; then
		echo "tutorial: step $1 has no check_$1 in scripts/tutorial/checks.sh" >&2
		exit 1
	fi
	"check_$1"
	echo "tutorial: step $1 ok ($(( $(date +%s) - _t0 ))s)"
}
fail() { echo "tutorial: step $_step: $*" >&2; exit 1; }
# want OUTPUT REGEX: OUTPUT has a line matching REGEX.
want() { printf '%s\n' "$1" | grep -Eq -- "$2" || fail "expected a line matching: $2
in:
$1"; }
nowant() { ! printf '%s\n' "$1" | grep -Eq -- "$2" || fail "expected no line matching: $2
in:
$1"; }

check_install() {
	[ "$(command -v wt-admin)" = "$HOME/.local/bin/wt-admin" ] || fail "wt-admin on PATH is $(command -v wt-admin), not ~/.local/bin's"
	for b in wt-exec wt-hook wt-gate wt-fleet; do [ -x "$HOME/.local/bin/$b" ] || fail "$b not installed"; done
}
check_server() {
	want "$(git -C ~/work/server.git config --get-all core.hooksPath 2>/dev/null; ls ~/work/server.git/hooks)" '^pre-receive$'
}
check_project() {
	[ "$(git config core.hooksPath)" = .husky/_ ] || fail "husky did not take core.hooksPath"
	want "$(git -C ~/work/server.git log --format=%s main)" '^app, tested before every commit$'
}
check_init() {
	local p; p=$(wt-admin policy)
	want "$p" '^confine +require'
	want "$p" '^publication_lease +on'
	want "$p" '^fleet_server_fence +on'
	want "$(wt-hook status)" 'pre-commit'
}
check_made-by-others() {
	want "$(git worktree list)" 'app-login .*\[feature-login\]'
	want "$(git worktree list)" '\.claude/worktrees/search .*\[worktree-search\]'
}
check_adopt() {
	local s; s=$(wt-admin status)
	want "$s" 'T-9'
	want "$s" 'T-10'
}
check_agents() {
	[ "$(tmux list-windows -t agents | wc -l)" -eq 11 ] || fail "expected 11 tmux windows: $(tmux list-windows -t agents)"
}
check_watch() {
	local i
	for i in $(seq 1 10); do
		want "$(tmux capture-pane -pJ -t "agents:T-$i")" 'wt-exec exited 0 \(output above\)'
	done
	nowant "$(wt-admin lease list)" 'T-'
}
check_share() {
	[ "$(git -C ~/work/server.git rev-parse wt/T-1)" = "$(git rev-parse wt/T-1)" ] || fail "the server's wt/T-1 is not T-1's branch"
}
check_ready() {
	want "$(wt-admin status)" 'ready'
}
check_land() {
	local log; log=$(git log --format=%s main)
	for t in T-1 T-2 T-3 T-6 T-7 T-8 T-9 T-10; do want "$log" "^$t: "; done
	nowant "$log" '^T-4: '
	nowant "$log" '^T-5: '
	[ "$(git rev-parse main)" = "$(git -C ~/work/server.git rev-parse main)" ] || fail "the server's main is not the local main"
	# What the page says status shows: each task's state, and for the
	# failed test its log.
	local s; s=$(wt-admin status)
	want "$s" 'app-T-4 .* LAND_CONFLICT '
	want "$s" 'app-T-5 .* LAND_TEST_FAILED '
	want "$s" "read the test's output \(cat \S+/land-logs/T-5/1\.log\)"
	want "$s" 'git rebase main stops on the conflict'
}
check_hand-back() {
	local log; log=$(git log --format=%s main)
	want "$log" '^T-4: '
	want "$log" '^T-5: '
	[ "$(git rev-parse main)" = "$(git -C ~/work/server.git rev-parse main)" ] || fail "the server's main is not the local main"
	[ -z "$(git status --porcelain --untracked-files=no)" ] || fail "the checkout of main shows changes: $(git status --short)"
	[ "$(git rev-parse HEAD)" = "$(git rev-parse main)" ] || fail "the checkout of main is not at main"
	npm test >/dev/null || fail "npm test fails on main"
}
check_why() {
	local why; why=$(wt-admin why main)
	want "$why" 'WHY_SHOWN: [0-9a-f]{12} is on main: task T-[45] landed it'
	want "$why" '^  writer: +lease [0-9a-f-]{36} of client claude'
	want "$why" '^  let go: .*marked ready by alice'
	want "$why" '^  test: +"npm test" passed'
	want "$why" '^  push: +pushed to origin'
	[ -n "$(git -C ~/work/server.git for-each-ref refs/notes/wt)" ] || fail "the server has no refs/notes/wt"
}
check_finish() {
	local refs; refs=$(git -C ~/work/server.git for-each-ref --format='%(refname)' | tr '\n' ' ')
	[ "$refs" = "refs/heads/main refs/notes/wt " ] || fail "the server has more than main and the notes: $refs"
	# The canonical checkout, and land's integration worktrees, kept for the next landing.
	local wts; wts=$(git worktree list --porcelain | sed -n 's/^worktree //p' | xargs -n1 basename | sort | tr '\n' ' ')
	[ "$wts" = ".app-wt-land .app-wt-land-2 app " ] || fail "worktrees left: $(git worktree list)"
}
check_done() {
	! tmux has-session -t agents 2>/dev/null || fail "the agents' session is still there"
	want "$(wt-admin doctor)" 'DOCTOR_OK'
	want "$(wt-admin status)" 'canonical checkout'
}
