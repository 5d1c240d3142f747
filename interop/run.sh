#!/usr/bin/env bash
# make interop: wt with the real programs its users run, installed from the
# network (npm, apt, the Go proxy) into bin/tools, so never part of make test.
#
#   agents: Claude Code, Codex CLI, Gemini CLI and opencode, each with a
#           fresh HOME and under wt-exec --confine: its version, a
#           configuration write that must persist, and a subcommand that
#           needs no network.
#   hooks:  husky 9, the pre-commit framework and lefthook, installed before
#           and after wt: the manager's hook runs for the entitled writer,
#           an outside commit is refused, and wt-hook uninstall leaves no wt
#           shim and the manager's hook as it was.
#
# Prints one line per check and a summary; exits 1 if any check failed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tools=$root/bin/tools
npmdir=$tools/npm
# The versions tried (npm package@version); INTEROP_LATEST=1 takes the newest.
agents_pkgs=("@anthropic-ai/claude-code@2.1.197" "@openai/codex@0.171.0" "@google/gemini-cli@0.61.0" "opencode-ai@1.18.33" "husky@9.1.7")
if [ "${INTEROP_LATEST:-}" = 1 ]; then agents_pkgs=("${agents_pkgs[@]%@*}"); fi
pass=0 fail=0 failed=()

ok() { echo "PASS  $1"; pass=$((pass + 1)); }
ko() {
	echo "FAIL  $1"
	[ -n "${2:-}" ] && sed 's/^/      | /' <<<"$2" | head -20
	fail=$((fail + 1))
	failed+=("$1")
}
# check NAME WANT-REGEX CMD...: runs CMD, passes when it exits 0 and its
# output matches WANT-REGEX.
check() {
	local name=$1 want=$2 out
	shift 2
	if out=$("$@" 2>&1) && grep -qE -- "$want" <<<"$out"; then ok "$name"; else ko "$name" "$out"; fi
}
# refuses NAME WANT-REGEX CMD...: passes when CMD fails and says WANT-REGEX.
refuses() {
	local name=$1 want=$2 out
	shift 2
	if ! out=$("$@" 2>&1) && grep -qE -- "$want" <<<"$out"; then ok "$name"; else ko "$name" "$out"; fi
}

echo "== installing"
make -s build >/dev/null || { echo "make build failed" >&2; exit 1; }
mkdir -p "$npmdir"
command -v npm >/dev/null || { apt-get update -qq && apt-get install -y -qq npm >/dev/null; }
npm install --silent --no-fund --no-audit --prefix "$npmdir" "${agents_pkgs[@]}" >/dev/null 2>&1 ||
	{ echo "npm install failed" >&2; exit 1; }
command -v pre-commit >/dev/null || apt-get install -y -qq pre-commit >/dev/null 2>&1 || echo "pre-commit could not be installed: its checks fail"
# The package test unpacks the .rpm with rpm2cpio and cpio (the .deb with
# dpkg-deb, which Debian has).
command -v rpm2cpio >/dev/null && command -v cpio >/dev/null || apt-get install -y -qq rpm2cpio cpio >/dev/null 2>&1 || echo "rpm2cpio or cpio could not be installed: the package test fails"
[ -x "$tools/lefthook" ] || GOBIN=$tools GOFLAGS= go install github.com/evilmartians/lefthook@v1.13.6 >/dev/null 2>&1
export PATH="$root/bin:$npmdir/node_modules/.bin:$tools:$PATH"
export GIT_AUTHOR_NAME=interop GIT_AUTHOR_EMAIL=interop@wt.invalid GIT_COMMITTER_NAME=interop GIT_COMMITTER_EMAIL=interop@wt.invalid
unset WT_CLIENT_ID WT_LEASE_ID WT_HOLDER_PID

work=$(mktemp -d /tmp/wt-interop-XXXXXX)
trap 'rm -rf "$work"' EXIT
newrepo() { # newrepo DIR: a repository set up for wt, with one commit
	git init -q -b main "$1" && git -C "$1" commit -q --allow-empty -m init && wt-admin --repo "$1" init >/dev/null
}

echo "== agents under wt-exec --confine, each with a fresh HOME"
newrepo "$work/agents"
confined() { # confined TASK AGENT CMD: CMD in sh, in TASK's worktree, confined with AGENT's profile
	local task=$1 agent=$2
	shift 2
	HOME=$work/home-$agent wt-exec -C "$work/agents" --task "$task" --owner interop --confine --agent "$agent" -- sh -c "$*"
}
for a in claude codex gemini opencode; do mkdir -p "$work/home-$a"; done
check "claude: version" 'Claude Code' confined A-claude claude 'claude --version'
check "claude: mcp add --scope user persists within the run" 'foo: echo hi' confined A-claude claude 'claude mcp add --scope user foo -- echo hi && claude mcp list'
check "claude: the worktree is trusted in the run's config" '^trusted$' confined A-claude claude "grep -q '\"hasTrustDialogAccepted\": true' ~/.claude.json && echo trusted"
check "claude: ~/.claude.json is unchanged afterwards" '^\{\}$' cat "$work/home-claude/.claude.json"
refuses "claude: ~/.claude/hooks is read-only" 'Read-only file system' confined A-claude claude 'touch ~/.claude/hooks/evil'
check "codex: version" 'codex-cli' confined A-codex codex 'codex --version'
check "codex: login persists" 'API key' confined A-codex codex 'echo sk-interop | codex login --with-api-key >/dev/null && codex login status'
check "codex: login persists across runs" 'API key' confined A-codex codex 'codex login status'
check "codex: mcp list" 'No MCP servers' confined A-codex codex 'codex mcp list'
refuses "codex: config.toml is read-only (mcp add)" 'failed to write' confined A-codex codex 'codex mcp add foo -- echo hi'
check "gemini: version" '^[0-9]+\.' confined A-gemini gemini 'gemini --version'
check "gemini: mcp add (project settings) persists" 'foo: echo hi' confined A-gemini gemini 'gemini mcp add foo echo hi >/dev/null && gemini mcp list'
check "gemini: mcp list across runs" 'foo: echo hi' confined A-gemini gemini 'gemini mcp list'
check "opencode: version" '^[0-9]+\.' confined A-opencode opencode 'opencode --version'
check "opencode: mcp list" 'MCP servers' confined A-opencode opencode 'opencode mcp list'
check "opencode: state persists" 'opencode.db' ls "$work/home-opencode/.local/share/opencode"

echo "== hook managers, before and after wt"
entitled() { wt-exec -C "$1" -- git commit -q --allow-empty -m entitled; }
shimless() { ! grep -rlq 'wt-hook shim' "$1"/.git/hooks "$1"/.husky 2>/dev/null && [ ! -e "$1/.git/wt-hooks" ]; }
# husky: its hook runs in the canonical checkout; every worktree is gated.
for order in husky-first wt-first; do
	r=$work/husky-$order
	git init -q -b main "$r" && (cd "$r" && npm init -y >/dev/null && git commit -q --allow-empty -m init)
	[ $order = wt-first ] && wt-admin --repo "$r" init >/dev/null
	(cd "$r" && husky >/dev/null && echo 'echo husky-ran >> "$HOME/husky.log"' >.husky/pre-commit && git add .husky/pre-commit package.json && HOME=$work git commit -q -m husky)
	[ $order = husky-first ] && wt-admin --repo "$r" init >/dev/null
	[ $order = wt-first ] && wt-hook -C "$r" install >/dev/null
	before=$(cd "$r" && find .husky -type f | sort | xargs sha256sum)
	rm -f "$work/husky.log"
	HOME=$work git -C "$r" commit -q --allow-empty -m canonical
	check "husky ($order): its hook runs" 'husky-ran' cat "$work/husky.log"
	wt-exec -C "$r" --task T-1 --owner interop -- true >/dev/null 2>&1
	refuses "husky ($order): an outside commit in a new worktree is refused" 'WRITER_LEASE_REQUIRED' git -C "$r-T-1" commit -q --allow-empty -m rogue
	check "husky ($order): the writer commits" '' entitled "$r-T-1"
	wt-hook -C "$r" uninstall >/dev/null
	after=$(cd "$r" && find .husky -type f | sort | xargs sha256sum)
	if [ "$before" = "$after" ] && [ "$(git -C "$r" config core.hooksPath)" = .husky/_ ] && shimless "$r"; then
		ok "husky ($order): uninstall leaves husky's files and core.hooksPath as they were, no wt shim"
	else ko "husky ($order): uninstall" "$(git -C "$r" config core.hooksPath; ls -la "$r/.git/hooks" "$r/.husky/_")"; fi
done
# pre-commit (the framework).
for order in pc-first wt-first; do
	r=$work/precommit-$order
	git init -q -b main "$r" && git -C "$r" commit -q --allow-empty -m init
	printf 'repos:\n- repo: local\n  hooks:\n  - id: hello\n    name: hello\n    entry: sh -c "echo pre-commit-ran >> %s/pc.log"\n    language: system\n    always_run: true\n    pass_filenames: false\n' "$work" >"$r/.pre-commit-config.yaml"
	git -C "$r" add .pre-commit-config.yaml && git -C "$r" -c core.hooksPath=/dev/null commit -q -m config
	[ $order = wt-first ] && wt-admin --repo "$r" init >/dev/null
	(cd "$r" && pre-commit install >/dev/null)
	pchook=$(cat "$r/.git/hooks/pre-commit")
	[ $order = pc-first ] && wt-admin --repo "$r" init >/dev/null
	rm -f "$work/pc.log"
	git -C "$r" commit -q --allow-empty -m canonical
	check "pre-commit ($order, no wt reinstall): its hook runs" 'pre-commit-ran' cat "$work/pc.log"
	wt-hook -C "$r" install >/dev/null
	rm -f "$work/pc.log"
	wt-admin --repo "$r" allocate --task T-1 --owner interop "$r-w" >/dev/null 2>&1
	check "pre-commit ($order): the writer commits, its hook runs" '' entitled "$r-w"
	check "pre-commit ($order): its hook ran for the writer" 'pre-commit-ran' cat "$work/pc.log"
	refuses "pre-commit ($order): an outside commit is refused" 'WRITER_LEASE_REQUIRED' git -C "$r-w" commit -q --allow-empty -m rogue
	wt-hook -C "$r" uninstall >/dev/null
	if [ "$(cat "$r/.git/hooks/pre-commit")" = "$pchook" ] && shimless "$r"; then
		ok "pre-commit ($order): uninstall leaves its hook as it was, no wt shim"
	else ko "pre-commit ($order): uninstall" "$(ls -la "$r/.git/hooks")"; fi
done
# lefthook: interop/lefthook_test.go covers the orders; run it. It and the
# package test install their tools from the Go proxy, so they carry the
# wt_network build tag and make test never runs them.
check "lefthook (interop/lefthook_test.go)" '^ok' go test -tags wt_network -count=1 ./interop/
check "packages (packaging/package_test.go)" '^ok' go test -tags wt_network -count=1 ./packaging/

echo "== $pass passed, $fail failed"
for f in "${failed[@]}"; do echo "   failed: $f"; done
[ "$fail" -eq 0 ]
