package hookcli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/cmd/internal/gate"
	"github.com/wt-tool/wt/cmd/internal/textout"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/hookspec"
	"github.com/wt-tool/wt/hooks"
	"github.com/wt-tool/wt/install"
)

// Hook runs wt-hook with args: exit 0 allow, 1 refuse, 2 usage (docs/design.md, "The gate (wt-hook)").
func Hook(args []string, stdout, stderr io.Writer) int {
	return clikit.Run("wt-hook", App, args, stdout, stderr)
}

// env is wt-hook's run: the shared one, with wt-hook's own methods.
type env struct{ *clikit.Env }

// App is wt-hook's command line (for man pages and completions too).
func App(k *clikit.Env) *ucli.App { return hookApp(&env{k}) }

func hookApp(e *env) *ucli.App {
	return &ucli.App{
		Usage:     "git hooks that admit commits and pushes only from the live writer",
		UsageText: "wt-hook [-C DIR] install [--force] [--binary PATH] | uninstall | status | check [PATH] | run pre-commit | run pre-push REMOTE URL | run reference-transaction STATE | run post-checkout PREV NEW FLAG\n   wt-hook install --server --etcd-endpoints URL[,URL] (--remote-url URL | --key-space ID) [--branch-prefix wt/] [--etcd-cert FILE --etcd-key FILE] [--etcd-cacert FILE] [--etcd-user NAME [--etcd-password-file FILE]] | uninstall --server | status --server",
		Flags: []ucli.Flag{&ucli.BoolFlag{Name: "json", Usage: "print one JSON object"},
			&ucli.StringFlag{Name: "C", Usage: "run as if started in `DIR` (like git -C)"}},
		Before: func(c *ucli.Context) error {
			if d := c.String("C"); d != "" {
				if err := os.Chdir(d); err != nil {
					return clikit.UsageErr("as-given-3", d, err)
				}
			}
			return nil
		},
		Commands: []*ucli.Command{
			{
				Name:      "check",
				Usage:     "would a commit from this process be allowed? print the decision",
				ArgsUsage: "[PATH]",
				Flags:     []ucli.Flag{clikit.JSONFlag},
				Action: e.Action("check", 1, func(c *ucli.Context) error {
					dir := c.Args().First()
					if dir == "" {
						dir = "."
					}
					v, err := hooks.Entitled(dir, os.Getpid())
					if err == nil && (v.AllocationID != "" || v.Refusal != nil) {
						if err := e.checkMeets(c, dir, &v); err != nil {
							return err
						}
					}
					return e.verdict(v, err, true)
				}),
			},
			{
				Name:  "install",
				Usage: "install wt's gate: hooks defined in configuration where git runs them (2.54 and later), else shims in the hooks dir git uses and a core.hooksPath of their own for the governed worktrees",
				Flags: []ucli.Flag{
					&ucli.BoolFlag{Name: "force", Usage: "accepted and ignored: a hooks dir inside the working tree (husky's) needs no force any more, wt takes core.hooksPath and runs its hooks"},
					&ucli.BoolFlag{Name: "hooks-dir", Usage: "also keep the shims in the hooks dir where git runs configured hooks: for a repository an older git writes too (each hook then runs twice there)"},
					&ucli.StringFlag{Name: "binary", Usage: "record `PATH` (absolute) as the wt-hook binary the shims run (default: this binary)"},
					serverFlag, clikit.JSONFlag,
					&ucli.StringFlag{Name: "etcd-endpoints", Usage: "with --server: the fleet's etcd client URLs, comma-separated"},
					&ucli.StringFlag{Name: "remote-url", Usage: "with --server: the URL clients use for this remote (it names the fleet's key space)"},
					&ucli.StringFlag{Name: "key-space", Usage: "with --server: the key space itself, instead of --remote-url"},
					&ucli.StringFlag{Name: "server-root", Usage: "with --server: fence every repository under `DIR` (a forge's root), and write the git template that fences those made later"},
					&ucli.StringFlag{Name: "url-base", Usage: "with --server-root and etcd: what clients put before a repository's path under the root (e.g. git@git.example.com:), which names its key space"},
					&ucli.BoolFlag{Name: "case-sensitive", Usage: "with --server --remote-url: keep the case of the URL's path in the key space, as clients do with policy --fleet-case-sensitive on"},
					&ucli.StringFlag{Name: "etcd-cert", Usage: "with --server: the TLS client certificate the hook shows etcd (a file on this server)"},
					&ucli.StringFlag{Name: "etcd-key", Usage: "with --server: that certificate's private key (a file on this server)"},
					&ucli.StringFlag{Name: "etcd-cacert", Usage: "with --server: the CA certificate that signs etcd's (a file on this server; default: the system's roots)"},
					&ucli.StringFlag{Name: "etcd-user", Usage: "with --server: the etcd user the hook authenticates as"},
					&ucli.StringFlag{Name: "etcd-password-file", Usage: "with --server and --etcd-user: the file that holds its password (else $WT_ETCD_PASSWORD in the hook's environment)"},
					&ucli.StringFlag{Name: "branch-prefix", Value: hooks.DefaultBranchPrefix, Usage: "with --server: task branches are refs/heads/PREFIX<task>"},
				},
				Action: e.hooksAction("install", decision.HooksInstalled, "wt's gate is in ", func(c *ucli.Context, g *gitrepo.Repo) (install.Result, error) {
					bin, err := hookBinary(c.String("binary"))
					if err != nil {
						return install.Result{}, err
					}
					return install.InstallGate(c.Context, g, bin, c.Bool("hooks-dir"))
				}),
			},
			{
				Name:  "uninstall",
				Usage: "remove wt's gate and put back the hooks (and core.hooksPath) that were there",
				Flags: []ucli.Flag{serverFlag, clikit.JSONFlag},
				Action: e.hooksAction("uninstall", decision.HooksUninstalled, "wt's gate is gone from ", func(c *ucli.Context, g *gitrepo.Repo) (install.Result, error) {
					return install.UninstallGate(c.Context, g)
				}),
			},
			{
				Name:  "status",
				Usage: "show wt's gate: its configured hooks, the hooks dir git uses (wt's shims, foreign hooks and what they chain), and what a commit here meets",
				Flags: []ucli.Flag{serverFlag, clikit.JSONFlag},
				Action: e.hooksAction("status", decision.HooksShown, "hooks in ", func(c *ucli.Context, g *gitrepo.Repo) (install.Result, error) {
					return install.StatusGate(c.Context, g)
				}),
			},
			{
				Name:  "run",
				Usage: "run as git's hook HOOK (installed shims call this)",
				Subcommands: []*ucli.Command{
					{
						Name:      "reference-transaction",
						Usage:     "refuse a ref update of a governed feature worktree by a process that is not its live writer (ref lines on stdin)",
						ArgsUsage: argsUsage("reference-transaction"),
						Action:    e.runHook("reference-transaction"),
					},
					{
						Name:      "pre-push",
						Usage:     "refuse a push that is not the live writer's, or of another branch (ref lines on stdin)",
						ArgsUsage: argsUsage("pre-push"),
						Action:    e.runHook("pre-push"),
					},
					{
						Name:      "post-checkout",
						Usage:     "report a governed worktree whose HEAD left its task branch (git passes PREV NEW FLAG)",
						ArgsUsage: argsUsage("post-checkout"),
						Action:    e.runHook("post-checkout"),
					},
					{
						Name:  "pre-receive",
						Usage: "in a fenced remote: refuse a task branch update whose push carries no current fencing token (ref lines on stdin)",
						Action: e.Action("run pre-receive", 0, func(c *ucli.Context) error {
							// Its hints go to the pushing client, whose
							// directories are not this server's: not anchored.
							e.Dir = clikit.NoAnchor
							return preReceive()
						}),
					},
					{
						Name:  "post-receive",
						Usage: "in a fenced remote (local mode): record the tokens of the task branches a push updated, once it has landed",
						Action: e.Action("run post-receive", 0, func(c *ucli.Context) error {
							e.Dir = clikit.NoAnchor
							return postReceive()
						}),
					},
					{
						Name:   "pre-commit",
						Usage:  "refuse a commit from a process that is not the worktree's live writer",
						Action: e.runHook("pre-commit"),
					},
				},
			},
		},
	}
}

// hookBinary is the wt-hook binary install records: path when given (it
// must be an absolute path to an executable file), else this binary.
func hookBinary(path string) (string, error) {
	if path == "" {
		bin, err := os.Executable()
		if err == nil {
			bin, err = filepath.EvalSymlinks(bin)
		}
		if err != nil {
			return "", decision.SayWrap(decision.Internal, err, "find-wt")
		}
		return bin, nil
	}
	fi, err := os.Stat(path)
	if !filepath.IsAbs(path) || err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", &textout.ExitError{Code: textout.ExitUsage, Err: decision.Say(decision.Usage, "binary-not", path).
			WithHint("wt-hook install --binary \"$(command -v wt-hook)\"")}
	}
	return path, nil
}

// runHook is the action of wt-hook run HOOK: the gate's judgement
// (gate.Judge, which wt-gate runs too), its warnings on stderr, and with
// --json the verdict of pre-commit.
// argsUsage names the arguments git passes client hook h (hookspec.Client).
func argsUsage(h string) string {
	f, _ := hookspec.FormOf(h)
	return f.ArgsUsage
}

func (e *env) runHook(hook string) ucli.ActionFunc {
	form, _ := hookspec.FormOf(hook) // a name the command line below spells from the table
	return e.Action("run "+hook, form.Args, func(c *ucli.Context) error {
		v, warnings, err := gate.Judge(hook, c.Args().Slice(), os.Stdin)
		if err == nil && v != nil && e.JSON {
			return e.verdict(*v, nil, false)
		}
		gate.PrintWarnings(e.Stderr, e.Bin, warnings)
		return err
	})
}

// verdict reports the decision for this process: a refusal exits
// 1 (or, under enforcement warn, is printed as a warning); an allowance is
// printed only when show is set (check) or asked for with --json.
func (e *env) verdict(v hooks.Verdict, err error, show bool) error {
	if err != nil {
		return err
	}
	if !v.Allowed {
		return v.Refusal
	}
	warnings := gate.Warnings(v)
	if !show && !e.JSON {
		e.warnVerdict(v)
		return nil
	}
	return e.Success(v.Code, v.Reason, v, warnings, func(w io.Writer) {
		fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, v.Code, clikit.Clean(v.Reason))
	})
}

// warnVerdict prints the warnings of an allowed verdict on stderr.
func (e *env) warnVerdict(v hooks.Verdict) { gate.PrintWarnings(e.Stderr, e.Bin, gate.Warnings(v)) }

// hooksAction is the action of a command on git's hooks dir: it finds the
// dir, runs fn on it and prints the hooks it leaves.
func (e *env) hooksAction(name, code, reason string, fn func(c *ucli.Context, g *gitrepo.Repo) (install.Result, error)) ucli.ActionFunc {
	return e.Action(name, 0, func(c *ucli.Context) error {
		if c.Bool("server") {
			return e.serverHooks(c, name, code, reason)
		}
		g, err := gitrepo.Discover(c.Context, ".")
		if err != nil {
			return err
		}
		res, err := fn(c, g)
		if err != nil {
			return err
		}
		return e.Success(code, reason+res.HooksDir, res, res.Warnings, func(w io.Writer) { printHooks(w, e.Bin, res) })
	})
}

func printHooks(w io.Writer, bin string, res install.Result) {
	fmt.Fprintf(w, "%s: hooks dir %s\n", bin, res.HooksDir)
	t := clikit.Table(w)
	fmt.Fprintln(t, "HOOK\tVIA\tSTATE\tBINARY\tCHAINED\tCHANGE")
	for _, h := range res.Hooks {
		state := h.State
		if h.State == "wt" {
			state = fmt.Sprintf("wt shim v%d", h.ShimVersion)
		}
		via := h.Via
		switch h.Via {
		case install.ViaConfig:
			via = h.Config
		case install.ViaDispatchDir:
			via = filepath.Base(filepath.Dir(h.Path)) // run by the forge's own hook
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%s\n", h.Hook, clikit.Dash(via), state, clikit.Dash(h.Binary), clikit.Dash(h.Chained), clikit.Dash(h.Changed))
	}
	t.Flush()
	for _, wt := range res.Worktrees {
		fmt.Fprintf(w, "%s: worktree %s: core.hooksPath %s%s\n", bin, clikit.Clean(wt.Path), clikit.Dash(clikit.Clean(wt.HooksPath)), clikit.Clean(prefixed("; ", wt.Changed)))
	}
	if m := res.Meets; m != nil {
		printMeets(w, bin, *m)
	}
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// printMeets says, hook by hook, what a commit or push here meets.
func printMeets(w io.Writer, bin string, m install.Meets) {
	for _, h := range m.Hooks {
		if len(h.By) > 0 {
			fmt.Fprintf(w, "%s: here, git %s runs wt's %s through %s\n", bin, m.Git, h.Hook, clikit.Clean(strings.Join(h.By, " and ")))
		} else {
			fmt.Fprintf(w, "%s: here, git %s runs nothing of wt's for %s: %s\n", bin, m.Git, h.Hook, clikit.Clean(strings.Join(h.Off, "; ")))
		}
	}
}

// checkMeets adds to check's verdict what a commit in dir really meets:
// where no wt gate runs, a refusal predicted from wt's records is not
// what happens (the commit passes), and check says so (HOOKS_MISSING).
func (e *env) checkMeets(c *ucli.Context, dir string, v *hooks.Verdict) error {
	co, err := gitrepo.Locate(dir)
	if err != nil {
		return err
	}
	m, err := install.Probe(c.Context, co.TopLevel, co.CommonDir)
	if err != nil {
		return err
	}
	if m.Gated("reference-transaction") {
		if !m.Gated("pre-commit") && v.Refusal != nil {
			fmt.Fprintf(e.Stderr, "%s: warning: %s\n", e.Bin, clikit.Clean("pre-commit runs nothing of wt's here ("+m.Why("pre-commit")+"): the commit would be refused by reference-transaction, after git wrote it"))
		}
		return nil
	}
	would := "it would be allowed by the gate"
	if v.Refusal != nil {
		would = "the gate would refuse it (" + v.Refusal.Code + ")"
	}
	d := decision.Say(decision.HooksMissing, "commit-meets", co.TopLevel, would, m.Why("reference-transaction")).
		WithHint("put the gate back: %s", install.GateFix(co.TopLevel))
	v.Allowed, v.Warning, v.Refusal, v.Code, v.Reason = false, false, d, d.Code, d.Message
	return nil
}
