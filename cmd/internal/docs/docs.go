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
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/cli"
	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/cmd/internal/hookcli"
)

// Apps are the command-line definitions of wt-admin, wt-exec and wt-hook,
// named as their binaries, for generating man pages and shell completions.
// They write nowhere; running them is not what they are for.
func Apps() []*ucli.App {
	mk := func(bin string, build func(*clikit.Env) *ucli.App) *ucli.App {
		a := build(&clikit.Env{Bin: bin, Stdout: io.Discard, Stderr: io.Discard})
		a.Name, a.Version, a.HideHelpCommand = bin, clikit.Version(), true
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
// the flags of the command typed so far, and file names for arguments.
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
	fmt.Fprintf(&b, `%[1]s() {
  local cur=${COMP_WORDS[COMP_CWORD]} path="@" w i
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
