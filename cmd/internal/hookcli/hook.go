package hookcli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/cmd/internal/gate"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
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
		UsageText: "wt-hook [-C DIR] install [--force] [--binary PATH] | uninstall | status | check [PATH] | run pre-commit | run pre-push REMOTE URL | run reference-transaction STATE | run post-checkout PREV NEW FLAG\n   wt-hook install --server --etcd-endpoints URL[,URL] (--remote-url URL | --key-space ID) [--branch-prefix wt/] | uninstall --server | status --server",
		Flags: []ucli.Flag{&ucli.BoolFlag{Name: "json", Usage: "print one JSON object"},
			&ucli.StringFlag{Name: "C", Usage: "run as if started in `DIR` (like git -C)"}},
		Before: func(c *ucli.Context) error {
			if d := c.String("C"); d != "" {
				if err := os.Chdir(d); err != nil {
					return clikit.UsageErr("-C %s: %v", d, err)
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
					return e.verdict(v, err, true)
				}),
			},
			{
				Name:  "install",
				Usage: "write wt's shims into the hooks dir git uses; when core.hooksPath is a hook manager's dir in the working tree (husky), into wt's own, run ahead of it",
				Flags: []ucli.Flag{
					&ucli.BoolFlag{Name: "force", Usage: "accepted and ignored: a hooks dir inside the working tree (husky's) needs no force any more, wt takes core.hooksPath and runs its hooks"},
					&ucli.StringFlag{Name: "binary", Usage: "record `PATH` (absolute) as the wt-hook binary the shims run (default: this binary)"},
					serverFlag, clikit.JSONFlag,
					&ucli.StringFlag{Name: "etcd-endpoints", Usage: "with --server: the fleet's etcd client URLs, comma-separated"},
					&ucli.StringFlag{Name: "remote-url", Usage: "with --server: the URL clients use for this remote (it names the fleet's key space)"},
					&ucli.StringFlag{Name: "key-space", Usage: "with --server: the key space itself, instead of --remote-url"},
					&ucli.StringFlag{Name: "branch-prefix", Value: hooks.DefaultBranchPrefix, Usage: "with --server: task branches are refs/heads/PREFIX<task>"},
				},
				Action: e.hooksAction("install", decision.HooksInstalled, "wt's shims are in ", func(c *ucli.Context, g *gitrepo.Repo, t install.Target) (install.Result, error) {
					bin, err := hookBinary(c.String("binary"))
					if err != nil {
						return install.Result{}, err
					}
					return install.InstallTarget(c.Context, g, t, bin)
				}),
			},
			{
				Name:  "uninstall",
				Usage: "remove wt's shims and put back the hooks (and core.hooksPath) that were there",
				Flags: []ucli.Flag{serverFlag, clikit.JSONFlag},
				Action: e.hooksAction("uninstall", decision.HooksUninstalled, "wt's shims are gone from ", func(c *ucli.Context, g *gitrepo.Repo, t install.Target) (install.Result, error) {
					return install.UninstallTarget(c.Context, g, t)
				}),
			},
			{
				Name:  "status",
				Usage: "show the hooks git runs: wt's shims, foreign hooks and what they chain",
				Flags: []ucli.Flag{serverFlag, clikit.JSONFlag},
				Action: e.hooksAction("status", decision.HooksShown, "hooks in ", func(_ *ucli.Context, _ *gitrepo.Repo, t install.Target) (install.Result, error) {
					res, err := install.Status(t.Dir)
					if err == nil && t.Takeover {
						res.Warnings = append(res.Warnings, "core.hooksPath is "+t.Chain+", not wt's own hooks dir: wt-hook install takes it, and runs its hooks first")
					}
					return res, err
				}),
			},
			{
				Name:  "run",
				Usage: "run as git's hook HOOK (installed shims call this)",
				Subcommands: []*ucli.Command{
					{
						Name:      "reference-transaction",
						Usage:     "refuse a ref update of a governed feature worktree by a process that is not its live writer (ref lines on stdin)",
						ArgsUsage: "STATE",
						Action:    e.runHook("reference-transaction", 1),
					},
					{
						Name:      "pre-push",
						Usage:     "refuse a push that is not the live writer's, or of another branch (ref lines on stdin)",
						ArgsUsage: "REMOTE URL",
						Action:    e.runHook("pre-push", 2),
					},
					{
						Name:      "post-checkout",
						Usage:     "report a governed worktree whose HEAD left its task branch (git passes PREV NEW FLAG)",
						ArgsUsage: "PREV NEW FLAG",
						Action:    e.runHook("post-checkout", 3),
					},
					{
						Name:  "pre-receive",
						Usage: "in a fenced remote: refuse a task branch update whose push carries no current fencing token (ref lines on stdin)",
						Action: e.Action("run pre-receive", 0, func(c *ucli.Context) error {
							return preReceive()
						}),
					},
					{
						Name:   "pre-commit",
						Usage:  "refuse a commit from a process that is not the worktree's live writer",
						Action: e.runHook("pre-commit", 0),
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
			return "", decision.Wrap(decision.Internal, err, "find the wt-hook binary")
		}
		return bin, nil
	}
	fi, err := os.Stat(path)
	if !filepath.IsAbs(path) || err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", &clikit.ExitError{Code: clikit.ExitUsage, Err: decision.New(decision.Usage, "--binary %q is not an absolute path to an executable file", path).
			WithHint("wt-hook install --binary \"$(command -v wt-hook)\"")}
	}
	return path, nil
}

// runHook is the action of wt-hook run HOOK: the gate's judgement
// (gate.Judge, which wt-gate runs too), its warnings on stderr, and with
// --json the verdict of pre-commit.
func (e *env) runHook(hook string, maxArgs int) ucli.ActionFunc {
	return e.Action("run "+hook, maxArgs, func(c *ucli.Context) error {
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
func (e *env) hooksAction(name, code, reason string, fn func(c *ucli.Context, g *gitrepo.Repo, t install.Target) (install.Result, error)) ucli.ActionFunc {
	return e.Action(name, 0, func(c *ucli.Context) error {
		if c.Bool("server") {
			return e.serverHooks(c, name, code, reason)
		}
		g, err := gitrepo.Discover(c.Context, ".")
		if err != nil {
			return err
		}
		t, err := install.PlanTarget(c.Context, g)
		if err != nil {
			return err
		}
		if name == "status" && t.Takeover {
			t.Dir = t.Before // what git runs now
		}
		res, err := fn(c, g, t)
		if err != nil {
			return err
		}
		return e.Success(code, reason+res.HooksDir, res, res.Warnings, func(w io.Writer) { printHooks(w, e.Bin, res) })
	})
}

func printHooks(w io.Writer, bin string, res install.Result) {
	fmt.Fprintf(w, "%s: hooks dir %s\n", bin, res.HooksDir)
	t := clikit.Table(w)
	fmt.Fprintln(t, "HOOK\tSTATE\tBINARY\tCHAINED\tCHANGE")
	for _, h := range res.Hooks {
		state := h.State
		if h.State == "wt" {
			state = fmt.Sprintf("wt shim v%d", h.ShimVersion)
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\n", h.Hook, state, clikit.Dash(h.Binary), clikit.Dash(h.Chained), clikit.Dash(h.Changed))
	}
	t.Flush()
}
