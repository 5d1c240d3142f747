// Package gate is the hooks git runs, as wt's shims call them: the
// judgement of `wt-hook run HOOK` and all of wt-gate, its fast twin.
//
// git starts a hook at every commit, push and checkout, and a Go program
// pays at every start for what it links: wt-hook's command line (urfave/cli,
// its templates and reflection) costs a hook about 0.8 ms before any
// decision is made (docs/performance.md, "Start-up costs"). wt-gate links this package, the
// hooks and the store, and nothing of a CLI library; the shims run it when
// it is installed beside the recorded wt-hook, and wt-hook run otherwise.
// Both judge through Judge and print what wt-hook prints, under wt-hook's
// name. pre-receive, which only a fenced remote's shim calls, is wt-hook's
// alone.
package gate

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/cmd/internal/textout"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/hookspec"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/hooks"
)

// Bin is the name the gate's lines carry: the hooks are wt-hook's,
// whichever binary answers for them.
const Bin = "wt-hook"

// Judge runs hook, with the arguments git passed it, for this process in
// the current directory (git runs hooks at the top of the worktree): it
// returns the verdict (pre-commit's, for wt-hook's --json), the warnings to
// print, and the refusal or failure (a USAGE error for a call git would not
// make). Warnings come before a refusal, as the verdicts did.
func Judge(hook string, args []string, stdin io.Reader) (verdict *hooks.Verdict, warnings []string, err error) {
	verdict, warnings, err = judge(hook, args, stdin)
	if err != nil {
		noteRefusal(err)
	}
	return verdict, warnings, err
}

// noteRefusal appends the code of a refusal to the file a confined run's
// wt-exec reads at the run's end (store.RefusalsEnv), when there is one:
// an existing regular file of that name, this user's, never followed,
// never made here. Best effort: the refusal stands and is printed anyway.
func noteRefusal(err error) {
	p := os.Getenv(store.RefusalsEnv)
	d, ok := decision.As(err)
	if p == "" || !ok || d.Code == decision.Usage || filepath.Base(p) != store.RefusalsName {
		return
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Getuid() || st.Size > 64<<10 {
		return
	}
	_, _ = f.WriteString(d.Code + "\n") // Best effort, as above.
}

func judge(hook string, args []string, stdin io.Reader) (verdict *hooks.Verdict, warnings []string, err error) {
	form, ok := hookspec.FormOf(hook)
	if !ok {
		return nil, nil, decision.Say(decision.Usage, "run-unknown", hook).
			WithHint("wt-hook run pre-commit | pre-push REMOTE URL | reference-transaction STATE | post-checkout PREV NEW FLAG")
	}
	if len(args) != form.Args {
		return nil, nil, decision.Say(decision.Usage, "as-given", form.Usage)
	}
	switch hook {
	case "pre-commit":
		v, err := hooks.PreCommit(".", os.Getpid(), os.Getppid())
		if err != nil {
			return nil, nil, err
		}
		if !v.Allowed {
			return &v, nil, v.Refusal
		}
		return &v, Warnings(v), nil
	case "reference-transaction":
		vs, err := hooks.RefTransaction(".", args[0], stdin, os.Getpid(), os.Getenv(store.PublicationTokenEnv))
		if err != nil {
			return nil, nil, err
		}
		for _, v := range vs {
			if !v.Allowed {
				return nil, warnings, v.Refusal
			}
			warnings = append(warnings, Warnings(v)...)
		}
		return nil, warnings, nil
	case "pre-push":
		if d := hooks.ConfinedLocalPush(".", args[0], args[1]); d != nil {
			return nil, nil, d
		}
		v, err := hooks.PrePush(".", stdin, os.Getpid())
		if err != nil {
			return nil, nil, err
		}
		if !v.Allowed {
			return nil, nil, v.Refusal
		}
		return nil, Warnings(v), nil
	default: // post-checkout
		d, warn, err := hooks.PostCheckout(".")
		if err != nil || d == nil {
			return nil, nil, err
		}
		if warn {
			return nil, []string{fmt.Sprintf("%s: %s (hint: %s)", d.Code, d.Message, d.Hint)}, nil
		}
		return nil, nil, d
	}
}

// Warnings are an allowed verdict's warnings (a refusal under enforcement
// "warn").
func Warnings(v hooks.Verdict) []string {
	if !v.Warning || v.Refusal == nil {
		return nil
	}
	return []string{fmt.Sprintf("policy enforcement is warn, so this is allowed; it would be refused: %s: %s (hint: %s)", v.Refusal.Code, v.Refusal.Message, v.Refusal.Hint)}
}

// PrintWarnings writes each warning as its line on w: "BIN: warning: ...".
func PrintWarnings(w io.Writer, bin string, warnings []string) {
	for _, msg := range warnings {
		fmt.Fprintf(w, "%s: warning: %s\n", bin, msg)
	}
}

// Main is wt-gate with args (without the program name): exactly what a
// shim passes wt-hook, "run", the hook and git's arguments. It prints what
// wt-hook run prints and exits as it does: 0 allowed, 1 refused, 2 usage.
func Main(args []string, stdin io.Reader, stderr io.Writer) int {
	stderr = textout.Safe(stderr)
	if len(args) < 2 || args[0] != "run" {
		return textout.Report(stderr, "wt-gate", "", decision.Say(decision.Usage, "wt-gate", args).
			WithHint("run the hook as git does, or ask wt-hook: wt-hook check"))
	}
	_, warnings, err := Judge(args[1], args[2:], stdin)
	PrintWarnings(stderr, Bin, warnings)
	if err != nil {
		return textout.Report(stderr, Bin, "run "+args[1], err)
	}
	return textout.ExitOK
}
