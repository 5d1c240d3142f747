//go:build !urfave_cli_no_docs

// Package docs writes wt's man pages and shell completions from the
// command-line definitions themselves, so they cannot drift. Its command
// is cmd/internal/gendocs (make docs):
//
//	go run -tags wt_gendocs ./cmd/internal/gendocs DIR
//
// writes DIR/man/man1/<bin>.1 and DIR/completions/{bash/<bin>,
// zsh/_<bin>, fish/<bin>.fish} for wt-admin, wt-exec and wt-hook, and a
// man page for the wt-fleet helper. It is built without the
// urfave_cli_no_docs tag that the shipped binaries use: the man page
// generator (and its markdown library) stays out of every start of wt.
// Under that tag the package is empty (the generator it calls is not
// there), so `go install -tags urfave_cli_no_docs ./cmd/...` skips it.
package docs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/cli"
	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/cmd/internal/execcli"
	"github.com/wt-tool/wt/cmd/internal/hookcli"
	"github.com/wt-tool/wt/cmd/internal/textout"
)

// Apps are the command-line definitions of wt-admin, wt-exec and wt-hook,
// named as their binaries, for generating man pages and shell completions.
// They write nowhere; running them is not what they are for.
func Apps() []*ucli.App {
	mk := func(bin string, build func(*clikit.Env) *ucli.App) *ucli.App {
		a := build(&clikit.Env{Bin: bin, Stdout: io.Discard, Stderr: io.Discard})
		a.Name, a.Version, a.HideHelpCommand = bin, textout.Version(), true
		return a
	}
	return []*ucli.App{mk("wt-admin", cli.AdminApp), mk("wt-exec", cli.ExecApp), mk("wt-hook", hookcli.App)}
}

// Generate writes the man pages and completions under dir.
func Generate(dir string) error {
	files := map[string]string{"man/man1/wt-fleet.1": fleetMan}
	for _, app := range Apps() {
		man, err := app.ToManWithSection(1)
		if err != nil {
			return fmt.Errorf("man page of %s: %w", app.Name, err)
		}
		man = Man(app.Name, man)
		fish, err := app.ToFishCompletion()
		if err != nil {
			return fmt.Errorf("fish completion of %s: %w", app.Name, err)
		}
		bash := Bash(app)
		files["man/man1/"+app.Name+".1"] = man
		files["completions/bash/"+app.Name] = bash
		files["completions/zsh/_"+app.Name] = "#compdef " + app.Name + "\n# zsh completion for " + app.Name + ": the bash one, through bashcompinit.\nautoload -U +X bashcompinit && bashcompinit\n" + bash
		files["completions/fish/"+app.Name+".fish"] = fish
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Bash is a bash completion script for app: subcommands at every depth,
// the flags of the command typed so far, the task keys of the repository
// (-C or --repo, else the current directory; from wt-admin status) after
// --task, and file names for arguments.
// Its tables are keyed by the command path after "@" ("@", "@ lease",
// "@ lease inspect"): bash has no empty key.
func Bash(app *ucli.App) string {
	fn := "_" + strings.ReplaceAll(app.Name, "-", "_")
	words, flags := map[string][]string{}, map[string][]string{}
	var walk func(path string, cmds []*ucli.Command, fl []ucli.Flag)
	walk = func(path string, cmds []*ucli.Command, fl []ucli.Flag) {
		words[path] = nil
		for _, f := range fl {
			for _, n := range f.Names() {
				if len(n) == 1 {
					flags[path] = append(flags[path], "-"+n)
				} else {
					flags[path] = append(flags[path], "--"+n)
				}
			}
		}
		flags[path] = append(flags[path], "--help")
		for _, c := range cmds {
			if c.Hidden {
				continue
			}
			words[path] = append(words[path], c.Name)
			walk(path+" "+c.Name, c.Subcommands, c.Flags)
		}
	}
	walk("@", app.Commands, app.Flags)
	var b strings.Builder
	fmt.Fprintf(&b, "# bash completion for %s, made from its command-line definitions by wt's gendocs.\n", app.Name)
	table := func(name string, m map[string][]string) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "declare -gA %s=(\n", name)
		for _, k := range keys {
			fmt.Fprintf(&b, "  [%q]=%q\n", k, strings.Join(m[k], " "))
		}
		b.WriteString(")\n")
	}
	table(fn+"_words", words)
	table(fn+"_flags", flags)
	fmt.Fprintf(&b, `%[1]s_tasks() {
  local repo=. i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in -C|--repo) repo=${COMP_WORDS[i+1]} ;; esac
  done
  wt-admin --repo "$repo" status --json 2>/dev/null | sed -n 's/^ *"task_key": *"\([^"]*\)".*/\1/p'
}
%[1]s() {
  local cur=${COMP_WORDS[COMP_CWORD]} path="@" w i
  if [[ ${COMP_WORDS[COMP_CWORD-1]} == --task ]]; then
    COMPREPLY=($(compgen -W "$(%[1]s_tasks)" -- "$cur"))
    return 0
  fi
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    [[ $w == -* ]] && continue
    [[ -n ${%[1]s_words["$path $w"]+set} ]] && path="$path $w"
  done
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "${%[1]s_flags["$path"]}" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "${%[1]s_words["$path"]}" -- "$cur"))
    [[ ${#COMPREPLY[@]} -eq 0 ]] && COMPREPLY=($(compgen -f -- "$cur"))
  fi
  return 0
}
complete -F %[1]s %[2]s
`, fn, app.Name)
	return b.String()
}

// Man completes the man page urfave/cli made for bin from the same
// definitions: a SYNOPSIS as --help writes it (not one bracket per flag),
// each flag's default once, and the sections urfave/cli does not make:
// EXIT STATUS, ENVIRONMENT, EXAMPLES and SEE ALSO.
func Man(bin, man string) string {
	extra, ok := pages[bin]
	if !ok {
		return man
	}
	// SYNOPSIS: from its heading to the next section.
	if i := strings.Index(man, ".SH SYNOPSIS\n"); i >= 0 {
		rest := man[i+len(".SH SYNOPSIS\n"):]
		if j := strings.Index(rest, "\n.SH "); j >= 0 {
			man = man[:i] + ".SH SYNOPSIS\n" + roff(extra.synopsis) + "\n" + rest[j+1:]
		}
	}
	// A usage that says its default already is not given a second one.
	twice := regexp.MustCompile(`(\(default:? [^)]*\)) \(default: [^)]*\)`)
	man = twice.ReplaceAllString(man, "$1")
	// A zero duration or number is "not given" for every flag of wt's.
	man = strings.NewReplacer(" (default: 0s)", "", " (default: 0)", "").Replace(man)
	var b strings.Builder
	b.WriteString(strings.TrimRight(man, "\n") + "\n")
	b.WriteString(".SH EXIT STATUS\n" + roff(extra.exit))
	b.WriteString(".SH ENVIRONMENT\n" + roff(extra.env))
	b.WriteString(".SH EXAMPLES\n" + roff(extra.examples))
	b.WriteString(".SH SEE ALSO\n" + roff(seeAlso(bin)))
	return b.String()
}

// roff sets lines of plain text as roff paragraphs: a line is a paragraph;
// an indented line is an example, set as is.
func roff(text string) string {
	var b strings.Builder
	example := false
	for _, line := range strings.Split(strings.Trim(text, "\n"), "\n") {
		line = strings.ReplaceAll(line, `\`, `\e`)
		code, isCode := strings.CutPrefix(line, "  ")
		if isCode != example {
			if example {
				b.WriteString(".EE\n")
			} else {
				b.WriteString(".EX\n")
			}
			example = isCode
		}
		if isCode {
			line = code
		} else if line != "" {
			b.WriteString(".PP\n")
		}
		if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
			line = `\&` + line
		}
		if line != "" {
			b.WriteString(line + "\n")
		}
	}
	if example {
		b.WriteString(".EE\n")
	}
	return b.String()
}

func seeAlso(bin string) string {
	var out []string
	for _, b := range []string{"wt-admin", "wt-exec", "wt-hook", "wt-fleet"} {
		if b != bin {
			out = append(out, b+"(1)")
		}
	}
	return strings.Join(out, ", ") + ", git-worktree(1), githooks(5); the project's docs/design.md and docs/decision-codes.md."
}

// page is what a man page has beyond the command-line definitions.
type page struct{ synopsis, exit, env, examples string }

var pages = map[string]page{
	"wt-exec": {
		synopsis: `  ` + strings.ReplaceAll(execcli.Synopsis, "\n", "\n  "),
		exit: `The command's own exit status, or 128+N when it died of signal N (wt-exec then ends by the same signal).
125: wt-exec refused or failed before the command started; the decision code and a hint are on stderr (with --json, in the JSON object).
126: the command was found but cannot be run (COMMAND_NOT_EXECUTABLE).
127: the command was not found (COMMAND_NOT_FOUND).`,
		env: `WT_CLIENT_ID, WT_SESSION_ID, WT_RUN_ID: the defaults of --client-id, --session-id and --run-id.
WT_LEASE_ID, WT_ALLOCATION_ID, WT_CLIENT_ID, WT_HOLDER_PID, WT_SESSION_ID, WT_RUN_ID: set for the command, naming its lease; a wt-exec inside the command renews that lease.
WT_CONFINED: set for a confined command (--confine).
WT_LOCK_WAIT: how long to wait for the store's lock (a Go duration; default 10s).
WT_FLEET_TIMEOUT: the bound of each etcd call in fleet mode; WT_FLEET_BIN: the wt-fleet helper to run.`,
		examples: `Run an agent as the writer of its task's worktree, allocating it if the task has none:
  wt-exec -C ~/src/app --task T-12 --owner alice --client-id claude -- claude
Wait in line behind the live writer instead of exiting 125:
  wt-exec -C ../t-12 --wait --timeout 10m -- make test
Act only on the lease you inspected:
  wt-exec -C ../t-12 --expect-generation 3 -- codex
Confine the command with Landlock:
  wt-exec -C ../t-12 --confine -- codex`,
	},
	"wt-admin": {
		synopsis: `  wt-admin [--repo DIR | -C DIR] [--json] COMMAND [OPTIONS] [ARGS]
Flags may come before or after the command's arguments.`,
		exit: `0: done (or, for a dry run, the plan printed).
1: refused or failed; the decision code and a hint are on stderr (with --json, in the JSON object on stdout).
2: a command line wt-admin cannot use (USAGE).`,
		env: `WT_LOCK_WAIT: how long to wait for the store's lock (a Go duration; default 10s).
WT_FLEET_TIMEOUT: the bound of each etcd call in fleet mode; WT_FLEET_BIN: the wt-fleet helper to run.`,
		examples: `Set a repository up, then allocate a worktree for a task:
  wt-admin --repo ~/src/app init
  wt-admin --repo ~/src/app allocate --task T-12 --owner alice ../t-12
See who may write where, and who is in a worktree:
  wt-admin -C ~/src/app status
  wt-admin -C ~/src/app ps ../t-12
Find out what needs doing, and do what it prints:
  wt-admin -C ~/src/app doctor
Hand a task from a controller to a worker (from inside the controller's run):
  wt-admin lease handoff . --to-client worker
End a task whose work is safe (the dry run prints the apply):
  wt-admin -C ~/src/app finish ../t-12 --owner alice`,
	},
	"wt-hook": {
		synopsis: `  wt-hook [-C DIR] [--json] install [--force] [--binary PATH] | uninstall | status | check [PATH]
  wt-hook [-C DIR] install --server --etcd-endpoints URL[,URL] (--remote-url URL | --key-space ID) | uninstall --server | status --server
git runs wt-hook run HOOK ARGS through the shims it installs; it is not run by hand.`,
		exit: `0: installed, uninstalled, shown; for check, the commit would be allowed.
1: refused or failed (a hook refusing a commit or push exits 1, and git stops); the decision code and a hint are on stderr.
2: a command line wt-hook cannot use (USAGE).`,
		env: `WT_LEASE_ID, WT_HOLDER_PID: what wt-exec sets for its command; the gate still proves the writer from the process tree, not from these.
WT_LOCK_WAIT: how long to wait for the store's lock (a Go duration; default 10s).
WT_FLEET_BIN: the wt-fleet helper a fenced push runs.`,
		examples: `Install the hooks of a repository, and see whether a commit from here would pass:
  wt-hook -C ~/src/app install
  wt-hook -C ../t-12 check
Fence a bare remote (fleet mode):
  wt-hook -C /srv/git/app.git install --server --etcd-endpoints http://etcd:2379 --remote-url git@example.com:app.git`,
	},
}

const fleetMan = `.TH WT-FLEET 1
.SH NAME
wt-fleet \- the fleet-mode helper of wt (not run by hand)
.SH SYNOPSIS
.B wt-fleet
< one JSON request a line
.SH DESCRIPTION
.B wt-fleet
is the one wt binary that links the etcd client. In fleet mode
.RB ( "wt-admin policy --coordinator etcd" ),
wt-exec, wt-hook and wt-admin run it to take, keep, check and revoke a
task's fleet lease, and the pre-receive fence of a remote runs it to check
a push's fencing token. Its protocol (JSON lines on stdin and stdout) is
internal to wt and may change between versions.
.PP
It is found through
.BR $WT_FLEET_BIN ,
then beside the running wt binary, then on
.BR PATH .
.SH SEE ALSO
.BR wt-admin (1),
.BR wt-exec (1),
.BR wt-hook (1)
`
