#!/usr/bin/env bash
# make interop: wt with the real programs its users run, installed from the
# network (npm, apt, the Go proxy) into bin/tools, so never part of make test.
#
#   agents: Claude Code, Codex CLI, Gemini CLI and opencode, each with a
#           fresh HOME and under wt-exec --confine: its version, a
#           configuration write that must persist, and a subcommand that
#           needs no network.
#   ccmanager 4.4.3, driven through its terminal UI on a pty
#           (interop/ccmanager_test.go): its New Worktree, the wt-exec
#           preset's refusal and adopt hint in its pane, adopt, a
#           session that commits under the lease, its main entry
#           refused by policy, its Delete and the finish status names.
#   gitea:  Gitea 1.27.3 built from its module, over HTTP with SQLite
#           (interop/gitea_test.go): install --server beside Gitea's hooks,
#           its branch protection kept, the fence refusing a tokenless
#           push, the holder's and a nested wt-exec's pushes landing, the
#           fence kept across gitea admin regenerate hooks; policy --forge
#           gitea: finish --archive and lease abandon refused while the
#           task's branch has an open pull request (OPEN_PULL_REQUEST), a
#           refused token not taken for none, and finish deleting the branch
#           on Gitea once it is closed; and the figure, a fenced push
#           against a plain one (BenchmarkGiteaPush).
#   gitolite: Debian's gitolite3 behind a local sshd (interop/gitolite_test.go),
#           fenced by docs/forges.md's recipe: a tokenless push refused, the
#           holder's, a nested wt-exec's and a confined agent's landing,
#           gitolite's own rules kept, the fence kept across gitolite setup;
#           and install --server through its repo-specific hooks.
#   shared: two real server users push one group-shared repository with
#           the local fence (interop/shared_test.go): both land.
#   http-backend: git http-backend behind lighttpd as www-data, and a
#           second server user, on one group-shared repository
#           (interop/httpbackend_test.go): the server's own pre-receive
#           still refuses main, a tokenless push is refused, the holder's,
#           a nested wt-exec's and a confined agent's land over HTTP.
#   hooks:  husky 9, the pre-commit framework and lefthook, installed before
#           and after wt: the manager's hook runs for the entitled writer,
#           an outside commit is refused, and wt-hook uninstall leaves no wt
#           shim and the manager's hook as it was; then husky,
#           simple-git-hooks, lefthook, prek and pre-commit installed again
#           with wt in place, in the main checkout and inside an agent's
#           worktree: the gate holds and their hooks run; again under git
#           2.55 (scripts/git-newer.sh) with each ref backend.
#
# Prints one line per check and a summary; exits 1 if any check failed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tools=$root/bin/tools
npmdir=$tools/npm
# The versions tried (npm package@version); INTEROP_LATEST=1 takes the newest.
# Qwen Code 0.15 (0.24 needs node 22; Debian's is 20); Crush's package
# downloads its binary from GitHub at install, which these machines cannot
# reach: its profile is from its documentation and source.
agents_pkgs=("@anthropic-ai/claude-code@2.1.197" "@openai/codex@0.171.0" "@google/gemini-cli@0.61.0" "opencode-ai@1.18.33"
	"@github/copilot@1.0.102" "@qwen-code/qwen-code@0.15.10" "@sourcegraph/amp@0.0.1790142911-g7618fb" "husky@9.1.7"
	"simple-git-hooks@2.14.0" "lefthook@2.2.2" "@j178/prek@0.5.3" "@kodaikabasawa/ccmanager-linux-x64@4.4.3")
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
# From outside this repository, with CI=true: the hook managers' packages
# install their hooks at npm install into the project npm ran in (lefthook's
# postinstall runs lefthook install there unless CI is set; simple-git-hooks'
# looks for its config there), which would be this clone.
hooks_before=$(ls -A "$(git rev-parse --git-path hooks)" 2>/dev/null; git status --porcelain)
(cd / && CI=true npm install --silent --no-fund --no-audit --prefix "$npmdir" "${agents_pkgs[@]}") >/dev/null 2>&1 ||
	{ echo "npm install failed" >&2; exit 1; }
if [ "$(ls -A "$(git rev-parse --git-path hooks)" 2>/dev/null; git status --porcelain)" != "$hooks_before" ]; then
	echo "npm install changed this clone's hooks or files:" >&2
	git status --porcelain >&2
	ls -A "$(git rev-parse --git-path hooks)" >&2
	exit 1
fi
command -v pre-commit >/dev/null || apt-get install -y -qq pre-commit >/dev/null 2>&1 || echo "pre-commit could not be installed: its checks fail"
# gitolite (Debian's gitolite3) behind OpenSSH, for interop/gitolite_test.go.
command -v gitolite >/dev/null && [ -x /usr/sbin/sshd ] ||
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gitolite3 openssh-server >/dev/null 2>&1 ||
	echo "gitolite3 or openssh-server could not be installed: the gitolite check fails"
# The package test unpacks the .rpm with rpm2cpio and cpio (the .deb with
# dpkg-deb, which Debian has).
# lighttpd, for git http-backend as www-data (interop/httpbackend_test.go).
command -v lighttpd >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq lighttpd >/dev/null 2>&1 ||
	echo "lighttpd could not be installed: the http-backend check fails"
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
for a in claude codex gemini opencode copilot qwen amp; do mkdir -p "$work/home-$a"; done
check "claude: version" 'Claude Code' confined A-claude claude 'claude --version'
check "claude: mcp add --scope user persists within the run" 'foo: echo hi' confined A-claude claude 'claude mcp add --scope user foo -- echo hi && claude mcp list'
check "claude: mcp add --scope user persists to the profile's next run" 'foo: echo hi' confined A-claude claude 'claude mcp list'
check "claude: the worktree is trusted in the profile's config" '^trusted$' confined A-claude claude "grep -q '\"hasTrustDialogAccepted\": true' ~/.claude.json && echo trusted"
check "claude: ~/.claude.json is unchanged afterwards" '^\{\}$' cat "$work/home-claude/.claude.json"
refuses "claude: ~/.claude/hooks is read-only" 'Read-only file system' confined A-claude claude 'touch ~/.claude/hooks/evil'
check "codex: version" 'codex-cli' confined A-codex codex 'codex --version'
check "codex: login persists" 'API key' confined A-codex codex 'echo sk-interop | codex login --with-api-key >/dev/null && codex login status'
check "codex: login persists across runs" 'API key' confined A-codex codex 'codex login status'
check "codex: mcp list" 'No MCP servers' confined A-codex codex 'codex mcp list'
check "codex: mcp add" 'foo' confined A-codex codex 'codex mcp add foo -- echo hi >/dev/null; codex mcp list'
check "codex: mcp add persists to the profile's next run" 'foo' confined A-codex codex 'codex mcp list'
check "codex: the user's own ~/.codex is unchanged" '^unchanged$' sh -c "! grep -qs foo '$work/home-codex/.codex/config.toml' && ! grep -qrs sk-interop '$work/home-codex/.codex' && echo unchanged"
check "gemini: version" '^[0-9]+\.' confined A-gemini gemini 'gemini --version'
check "gemini: mcp add (project settings) persists" 'foo: echo hi' confined A-gemini gemini 'gemini mcp add foo echo hi >/dev/null && gemini mcp list'
check "gemini: mcp list across runs" 'foo: echo hi' confined A-gemini gemini 'gemini mcp list'
check "opencode: version" '^[0-9]+\.' confined A-opencode opencode 'opencode --version'
check "opencode: mcp list" 'MCP servers' confined A-opencode opencode 'opencode mcp list'
check "opencode: state persists in the profile's own layer" 'opencode.db' ls "$work/home-opencode/.local/state/wt/agents/opencode/dirs/0/upper"
check "copilot: version (it unpacks its package into ~/.cache/copilot)" 'Copilot CLI' confined A-copilot copilot 'copilot --version'
check "copilot: mcp add persists" 'foo \(local\)' confined A-copilot copilot 'copilot mcp add foo -- echo hi >/dev/null && copilot mcp list'
check "copilot: mcp add persists to the profile's next run" 'foo \(local\)' confined A-copilot copilot 'copilot mcp list'
check "copilot: the user's own ~/.copilot is unchanged" '^unchanged$' sh -c "! grep -qrs foo '$work/home-copilot/.copilot' && echo unchanged"
refuses "copilot: a plain confined command cannot write its MCP servers" 'Read-only file system|Permission denied' env HOME="$work/home-copilot" wt-exec -C "$work/agents" --task A-plain --owner interop --confine -- sh -c 'echo {} > ~/.copilot/mcp-config.json'
check "qwen: version" '^[0-9]+\.' confined A-qwen qwen 'qwen --version'
check "qwen: mcp add persists" 'foo: echo hi' confined A-qwen qwen 'qwen mcp add foo echo hi >/dev/null && qwen mcp list'
check "qwen: mcp add persists to the profile's next run" 'foo: echo hi' confined A-qwen qwen 'qwen mcp list'
check "amp: version" '^0\.0\.' confined A-amp amp 'amp --version'
check "amp: mcp add persists" 'foo +command +echo hi' confined A-amp amp 'amp mcp add foo -- echo hi >/dev/null && amp mcp list'
check "amp: mcp add persists to the profile's next run" 'foo +command +echo hi' confined A-amp amp 'amp mcp list'
check "amp: the user's own settings are unchanged" '^unchanged$' sh -c "! grep -qrs foo '$work/home-amp/.config/amp' && echo unchanged"

echo "== hook managers, before and after wt"
entitled() { wt-exec -C "$1" -- git commit -q --allow-empty -m entitled; }
# entitled_change DIR: the writer commits a staged change (lefthook skips
# its commands when nothing is staged).
entitled_change() { wt-exec -C "$1" -- sh -c 'echo work >>work.txt && git add work.txt && git commit -q -m entitled'; }
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
# Installing again, with wt in place: in the main checkout and inside an
# agent's worktree (where an agent's npm install runs a prepare script).
# After each, an outsider's commit in the governed worktree is refused, and
# the manager's hook runs for the writer there (hook-managers.txtar plays
# the same installs in make test; docs/hook-managers.md).
echo "== hook managers installing again, with wt in place"
again() { # again NAME [TAG]: a repository with NAME set up, then wt, then NAME's install run again in the main checkout and in w1
	local m=$1 r=$work/again${2:-}-$1 at
	git init -q -b main "$r" || return 1
	(cd "$r" && npm init -y >/dev/null && printf 'node_modules\n' >.gitignore && git add -A && git commit -q -m init) || return 1
	case $m in
	husky) (cd "$r" && husky >/dev/null && printf 'echo %s >> "%s/again.log"\n' "$m" "$work" >.husky/pre-commit && git add -A && git commit -q -m husky) ;;
	simple-git-hooks) (cd "$r" && node -e 'const f="package.json",p=require("./"+f);p["simple-git-hooks"]={"pre-commit":"echo simple-git-hooks >> '"$work"'/again.log"};require("fs").writeFileSync(f,JSON.stringify(p))' && simple-git-hooks >/dev/null && git add -A && git commit -q -m sgh) ;;
	lefthook) (cd "$r" && printf 'pre-commit:\n  commands:\n    log:\n      run: echo lefthook >> %s/again.log\nreference-transaction:\n  commands:\n    noop:\n      run: "true"\n' "$work" >lefthook.yml && lefthook install >/dev/null && git add -A && git commit -q -m lefthook) ;;
	prek | pre-commit) (cd "$r" && printf 'repos:\n- repo: local\n  hooks:\n  - id: log\n    name: log\n    entry: sh -c "echo %s >> %s/again.log"\n    language: system\n    always_run: true\n    pass_filenames: false\n' "$m" "$work" >.pre-commit-config.yaml && git add -A && git -c core.hooksPath=/dev/null commit -q -m config && $m install >/dev/null) ;;
	esac || return 1
	wt-admin --repo "$r" init >/dev/null || return 1
	wt-exec -C "$r" --task T-1 --owner interop -- true >/dev/null 2>&1 || return 1
	for at in "$r" "$r-T-1"; do
		case $m in
		husky) (cd "$at" && husky) ;;
		simple-git-hooks) (cd "$at" && simple-git-hooks) ;;
		lefthook) (cd "$at" && lefthook install) ;;
		prek | pre-commit) (cd "$at" && $m install) ;;
		esac >"$work/again.out" 2>&1
		echo "   $m installed again in ${at#$work/}: exit $? ($(tail -1 "$work/again.out"))"
		refuses "$m again in ${at#$work/}: an outside commit in the agent's worktree is refused" 'WRITER_LEASE_REQUIRED' git -C "$r-T-1" commit -q --allow-empty -m rogue
		refuses "$m again in ${at#$work/}: --no-verify too" 'WRITER_LEASE_REQUIRED' git -C "$r-T-1" commit -q --allow-empty --no-verify -m rogue
		rm -f "$work/again.log"
		check "$m again in ${at#$work/}: the writer commits" '' entitled_change "$r-T-1"
		check "$m again in ${at#$work/}: its hook ran for the writer" "$m" cat "$work/again.log"
	done
}
for m in husky simple-git-hooks lefthook prek pre-commit; do
	command -v "$m" >/dev/null || { ko "$m is not installed"; continue; }
	again "$m" || ko "$m: setting the repository up failed"
done
# The same under git 2.55 (the gate in hook configuration), with each ref
# backend; scripts/git-newer.sh builds it once per machine.
if newgit=$(bash scripts/git-newer.sh); then
	for fmt in files reftable; do
		echo "== hook managers installing again, $("$newgit" version), the $fmt ref backend"
		for m in husky simple-git-hooks lefthook prek pre-commit; do
			command -v "$m" >/dev/null || continue
			PATH=$(dirname "$newgit"):$PATH GIT_DEFAULT_REF_FORMAT=$fmt again "$m" "-git2.55-$fmt" || ko "$m (git 2.55, $fmt): setting the repository up failed"
		done
	done
else
	ko "git 2.55 could not be built (scripts/git-newer.sh): the managers were not tried under it"
fi

# lefthook: interop/lefthook_test.go covers the orders; run it. It and the
# package test install their tools from the Go proxy, so they carry the
# wt_network build tag and make test never runs them.
# Gitea, built from its module at a pinned version (its go.mod has replace
# directives, so in its own directory), cached in bin/tools.
gitea_version=v1.27.3
export WT_GITEA=$tools/gitea-$gitea_version WT_GITEA_ASSETS=$tools/gitea-$gitea_version-assets
if [ ! -x "$WT_GITEA" ] || [ ! -d "$WT_GITEA_ASSETS" ]; then
	echo "== building gitea $gitea_version (a few minutes, once)"
	gitea_src=$(cd / && GOFLAGS= go mod download -json "code.gitea.io/gitea@$gitea_version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	rm -rf "$tools/gitea-src" && cp -r "$gitea_src" "$tools/gitea-src" && chmod -R u+w "$tools/gitea-src" &&
		(cd "$tools/gitea-src" && GOFLAGS=-mod=mod CGO_ENABLED=1 go build -tags 'sqlite sqlite_unlock_notify' -o "$WT_GITEA" .) >"$tools/gitea-build.log" 2>&1 ||
		echo "gitea $gitea_version could not be built ($tools/gitea-build.log): its checks fail"
	# Built without bindata, it reads its locales and templates from disk.
	rm -rf "$WT_GITEA-assets" && mkdir -p "$WT_GITEA-assets" &&
		cp -r "$tools/gitea-src/options" "$tools/gitea-src/templates" "$tools/gitea-src/public" "$WT_GITEA-assets/"
	rm -rf "$tools/gitea-src"
fi
# ccmanager's npm package (4.2.3 the newest on the registry here) finds no
# binary; its Linux binary's own package is at 4.4.3 and runs alone.
export WT_CCMANAGER=$npmdir/node_modules/@kodaikabasawa/ccmanager-linux-x64/bin/ccmanager
check "lefthook, ccmanager, Gitea, gitolite, http-backend, two server users (interop/*_test.go)" '^ok' go test -tags wt_network -count=1 ./interop/
# The figures: a fenced push against a plain one on Gitea over HTTP, and a
# fenced push with Gitea's protection on wt/* (the API-write workaround).
if out=$(go test -tags wt_network -count=1 -run '^$' -bench BenchmarkGiteaPush -benchtime 20x ./interop/ 2>&1) && grep -q '^BenchmarkGiteaPush' <<<"$out"; then
	ok "gitea push benchmark (interop/gitea_test.go)"
	grep '^BenchmarkGiteaPush' <<<"$out" | sed 's/^/      /'
else
	ko "gitea push benchmark (interop/gitea_test.go)" "$out"
fi
check "packages (packaging/package_test.go)" '^ok' go test -tags wt_network -count=1 ./packaging/

echo "== $pass passed, $fail failed"
for f in "${failed[@]}"; do echo "   failed: $f"; done
[ "$fail" -eq 0 ]
