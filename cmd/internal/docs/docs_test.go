//go:build !urfave_cli_no_docs

package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// TestManPagesAndCompletions generates the docs: every binary has a man
// page that names every one of its commands, and bash completes commands,
// subcommands and flags (wt-admin lea<TAB> offers lease).
func TestManPagesAndCompletions(t *testing.T) {
	dir := t.TempDir()
	if err := Generate(dir); err != nil {
		t.Fatal(err)
	}
	for _, app := range Apps() {
		page, err := os.ReadFile(filepath.Join(dir, "man", "man1", app.Name+".1"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(page), ".nh\n.TH "+app.Name+" 1") && !strings.Contains(string(page), ".TH "+app.Name+" 1") {
			t.Errorf("%s.1 is not a section-1 man page:\n%.200s", app.Name, page)
		}
		var check func(path string, cmds []*ucli.Command)
		check = func(path string, cmds []*ucli.Command) {
			for _, c := range cmds {
				if !strings.Contains(string(page), c.Name) || !strings.Contains(string(page), c.Usage[:min(20, len(c.Usage))]) {
					t.Errorf("%s.1 does not document %s%s", app.Name, path, c.Name)
				}
				check(path+c.Name+" ", c.Subcommands)
			}
		}
		check("", app.Commands)
		// The sections urfave/cli does not make, and its SYNOPSIS and
		// doubled defaults replaced.
		for _, want := range []string{".SH SYNOPSIS\n.EX\n" + app.Name + " [", ".SH EXIT STATUS\n", ".SH ENVIRONMENT\n", ".SH EXAMPLES\n", ".SH SEE ALSO\n", "WT_LOCK_WAIT"} {
			if !strings.Contains(string(page), want) {
				t.Errorf("%s.1 lacks %q", app.Name, want)
			}
		}
		for _, bad := range []string{"]=[value]", "(default: none) (default:", "(default: 0s)"} {
			if strings.Contains(string(page), bad) {
				t.Errorf("%s.1 still has %q", app.Name, bad)
			}
		}
		for _, f := range []string{"completions/bash/" + app.Name, "completions/zsh/_" + app.Name, "completions/fish/" + app.Name + ".fish"} {
			if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "man", "man1", "wt-fleet.1")); err != nil {
		t.Error(err)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	// Task keys come from wt-admin status (here a stand-in on PATH that
	// prints what status --json prints, for the repository it is given).
	stub := filepath.Join(dir, "stub")
	os.Mkdir(stub, 0o755)
	os.WriteFile(filepath.Join(stub, "wt-admin"), []byte("#!/bin/sh\n[ \"$2\" = /r ] || exit 1\nprintf '{\\n  \"worktrees\": [\\n    {\\n      \"task_key\": \"T-12\",\\n    },\\n    {\\n      \"task_key\": \"T-13\"\\n    }\\n  ]\\n}\\n'\n"), 0o755)
	t.Setenv("PATH", stub+":"+os.Getenv("PATH"))
	for _, c := range []struct{ words, want string }{
		{"wt-exec -C /r --task T-1", "T-12"},
		{"wt-admin --repo /r finish --task T", "T-13"},
		{"wt-admin lea", "lease"},
		{"wt-admin lease ins", "inspect"},
		{"wt-admin finish --ar", "--archive"},
		{"wt-admin --repo x fin", "finish"},
		{"wt-exec --con", "--confine"},
		{"wt-hook run pre-r", "pre-receive"},
	} {
		words := strings.Fields(c.words)
		bin := words[0]
		script := "source " + filepath.Join(dir, "completions", "bash", bin) + "; COMP_WORDS=(" + c.words + "); COMP_CWORD=" +
			string(rune('0'+len(words)-1)) + "; _" + strings.ReplaceAll(bin, "-", "_") + `; echo "${COMPREPLY[@]}"`
		out, err := exec.Command("bash", "-c", script).CombinedOutput()
		if err != nil || !strings.Contains(" "+string(out)+" ", " "+c.want+" ") && !strings.Contains(" "+strings.TrimSpace(string(out))+" ", " "+c.want+" ") {
			t.Errorf("completing %q: %v %q, want %s", c.words, err, out, c.want)
		}
	}
}
