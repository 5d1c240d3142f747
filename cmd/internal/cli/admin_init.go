package cli

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/install"
)

func policyFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "publication-branch", Usage: "the branch work lands on (default: the canonical checkout's branch)"},
		&ucli.StringFlag{Name: "enforcement", Usage: "enforce (refuse) or warn (print the refusal, allow)"},
		&ucli.StringFlag{Name: "unmanaged", Usage: "allow or refuse commits in worktrees wt does not govern"},
		&ucli.StringFlag{Name: "max-active", Usage: "cap on ACTIVE allocations: N or unlimited"},
		&ucli.StringFlag{Name: "coordinator", Usage: "fleet mode: etcd (one writer per task across machines) or none"},
		&ucli.StringFlag{Name: "etcd-endpoints", Usage: "fleet mode: etcd client URLs, comma-separated"},
		&ucli.StringFlag{Name: "fleet-ttl", Usage: "fleet mode: TTL of a task's fleet lease (default 10s)"},
		&ucli.StringFlag{Name: "fleet-remote", Usage: "fleet mode: the git remote whose URL names the task keys (default origin)"},
		&ucli.StringFlag{Name: "fleet-case-sensitive", Usage: "fleet mode: on keeps the case of the remote URL's path in its key space (a server whose paths differ by case); off, the default, folds it as forges do"},
		&ucli.StringFlag{Name: "etcd-cert", Usage: "fleet mode: the TLS client certificate shown to etcd (an absolute path on this machine; \"\" clears)"},
		&ucli.StringFlag{Name: "etcd-key", Usage: "fleet mode: that certificate's private key (an absolute path on this machine)"},
		&ucli.StringFlag{Name: "etcd-cacert", Usage: "fleet mode: the CA certificate that signs etcd's (an absolute path; default: the system's roots)"},
		&ucli.StringFlag{Name: "etcd-user", Usage: "fleet mode: the etcd user to authenticate as (\"\" clears)"},
		&ucli.StringFlag{Name: "etcd-password-file", Usage: "fleet mode: the file that holds the etcd user's password (else $WT_ETCD_PASSWORD)"},
		&ucli.StringFlag{Name: "fleet-server-fence", Usage: "on when the remote checks fencing tokens (wt-hook install --server there, with or without etcd); every push of a wt-exec command then carries its grant's token"},
		&ucli.StringFlag{Name: "confine", Usage: "wt-exec confines its command with Landlock: off, auto (where the kernel can) or require"},
		&ucli.StringFlag{Name: "confine-allow", Usage: "more directories a confined command may write beneath: /ABS/DIR[,/ABS/DIR] (\"\" clears)"},
		&ucli.StringFlag{Name: "branch-layout", Usage: "a new allocation's default branch: flat (wt/TASK) or task-dir (wt/TASK/work, a ref directory per task, so confinement keeps other tasks' branches out of reach)"},
		&ucli.StringFlag{Name: "require-owner", Usage: "on: wt-exec in a governed worktree must name the task's owner (--owner) or consume a handoff reserved for its client; off (the default)"},
		&ucli.StringFlag{Name: "publication-lease", Usage: "on: only wt-admin land, holding the publication lease, moves the publication branch (the gate refuses every other move: PUBLICATION_LEASE_REQUIRED); off (the default)"},
		&ucli.StringFlag{Name: "forge", Usage: "the forge the remote is on, whose open pull requests keep a task from being archived, pruned or taken over (OPEN_PULL_REQUEST): gitea (Gitea or Forgejo, its API), github (through gh) or none"},
		&ucli.StringFlag{Name: "forge-url", Usage: "the forge's base URL, e.g. https://git.example.com (default: the remote's scheme and host)"},
		&ucli.StringFlag{Name: "forge-token-file", Usage: "gitea: the file that holds an API token with read access to the repository (an absolute path)"},
		&ucli.StringFlag{Name: "forge-remote", Usage: "the git remote on the forge (default origin)"},
	}
}

func policyChange(c *ucli.Context) policy.Change {
	return policy.Change{PublicationBranch: optString(c, "publication-branch"),
		Enforcement: optString(c, "enforcement"), Unmanaged: optString(c, "unmanaged"), MaxActive: optString(c, "max-active"),
		Coordinator: optString(c, "coordinator"), EtcdEndpoints: optString(c, "etcd-endpoints"),
		FleetTTL: optString(c, "fleet-ttl"), FleetRemote: optString(c, "fleet-remote"),
		EtcdCert: optString(c, "etcd-cert"), EtcdKey: optString(c, "etcd-key"), EtcdCACert: optString(c, "etcd-cacert"),
		EtcdUser: optString(c, "etcd-user"), EtcdPasswordFile: optString(c, "etcd-password-file"),
		Confine: optString(c, "confine"), ConfineAllow: optString(c, "confine-allow"), FleetServerFence: optString(c, "fleet-server-fence"), FleetCaseSensitive: optString(c, "fleet-case-sensitive"),
		BranchLayout: optString(c, "branch-layout"), RequireOwner: optString(c, "require-owner"),
		PublicationLease: optString(c, "publication-lease"),
		Forge:            optString(c, "forge"), ForgeURL: optString(c, "forge-url"), ForgeTokenFile: optString(c, "forge-token-file"), ForgeRemote: optString(c, "forge-remote")}
}

func (e *env) initCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "init",
		Usage:     "set wt up in this repository (idempotent)",
		UsageText: "wt-admin init [--publication-branch B] [--enforcement enforce|warn] [--unmanaged allow|refuse] [--max-active N]",
		Flags: append(policyFlags(), clikit.JSONFlag,
			&ucli.BoolFlag{Name: "no-hooks", Usage: "do not install wt's git hooks (then nothing gates commits until wt-hook install)"}),
		Action: e.Action("init", 0, func(c *ucli.Context) error {
			res, err := policy.Init(c.Context, repoDir(c), policyChange(c))
			if err != nil {
				return err
			}
			reason := "wt is set up: state lives in " + res.StoreDir
			if res.Code == decision.StoreAlreadyInitialized {
				reason = "wt was already set up here; nothing changed"
			}
			var warnings []string
			hooks := "not installed (--no-hooks): commits are not gated until wt-hook install"
			if c.Bool("no-hooks") {
				if g, err := gitrepo.Discover(c.Context, repoDir(c)); err == nil {
					if err := install.SwitchOff(g.CommonDir); err != nil {
						warnings = append(warnings, err.Error())
					}
				}
			} else {
				var installed bool
				var g *gitrepo.Repo
				if g, err = gitrepo.Discover(c.Context, repoDir(c)); err == nil {
					installed, hooks, err = install.EnsureBeside(c.Context, g)
				}
				if err != nil {
					warnings = append(warnings, hookWarning(err))
				} else if installed && res.Code == decision.StoreAlreadyInitialized {
					reason = "wt was already set up here; its hooks were installed"
				}
			}
			out := struct {
				policy.InitResult
				Hooks string `json:"hooks"`
			}{res, hooks}
			return e.Success(res.Code, reason, out, warnings, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, res.Code, clikit.Clean(reason))
				printPolicy(w, res.Policy)
				fmt.Fprintf(w, "%-19s %s\n", "hooks", clikit.Clean(hooks))
			})
		}),
	}
}

func (e *env) policyCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "policy",
		Usage:     "show the policy, or change the fields given",
		UsageText: "wt-admin policy [--publication-branch B] [--enforcement enforce|warn] [--unmanaged allow|refuse] [--max-active N|unlimited] [--coordinator etcd|none] [--etcd-endpoints URL[,URL]] [--fleet-ttl D] [--fleet-remote NAME] [--etcd-cert FILE --etcd-key FILE] [--etcd-cacert FILE] [--etcd-user NAME [--etcd-password-file FILE]]",
		Flags:     append(policyFlags(), clikit.JSONFlag),
		Action: e.Action("policy", 0, func(c *ucli.Context) error {
			r, err := e.open(c)
			if err != nil {
				return err
			}
			res, err := policy.Set(c.Context, r.Git, r.Store, policyChange(c))
			if err != nil {
				return err
			}
			reason := map[string]string{decision.PolicyShown: "current policy",
				decision.PolicyUnchanged: "the policy already had these values; nothing changed",
				decision.PolicyUpdated:   fmt.Sprintf("%d field(s) changed", len(res.Changes))}[res.Code]
			return e.Success(res.Code, reason, res, nil, func(w io.Writer) {
				if res.Code != decision.PolicyShown {
					fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, res.Code, clikit.Clean(reason))
				}
				for _, d := range res.Changes {
					fmt.Fprintf(w, "  %s: %s -> %s\n", d.Field, d.From, d.To)
				}
				printPolicy(w, res.Policy)
			})
		}),
	}
}

func printPolicy(w io.Writer, p store.Policy) {
	max := "unlimited"
	if p.MaxActive != nil {
		max = fmt.Sprint(*p.MaxActive)
	}
	tw := clikit.Table(w)
	fmt.Fprintf(tw, "publication_branch\t%s\n", p.PublicationBranch)
	fmt.Fprintf(tw, "enforcement\t%s\n", p.Enforcement)
	fmt.Fprintf(tw, "unmanaged\t%s\n", p.Unmanaged)
	fmt.Fprintf(tw, "max_active\t%s\n", max)
	if p.FleetOn() {
		ttl, _ := p.FleetTTLDuration()
		fmt.Fprintf(tw, "coordinator\tetcd at %s (fleet lease TTL %s, key space from remote %s)\n", strings.Join(p.EtcdEndpoints, ","), ttl, p.FleetRemoteName())
		if a := p.EtcdAuth(); !a.IsZero() {
			fmt.Fprintf(tw, "etcd_auth\t%s\n", fleet.DescribeAuth(a))
		}
	} else {
		fmt.Fprintf(tw, "coordinator\tnone\n")
	}
	// Every field a change can name has its row, on or off.
	fence := "off"
	if p.FleetServerFence {
		fence = "on (every push of a wt-exec command carries its fencing token; the remote checks fencing tokens)"
	}
	fmt.Fprintf(tw, "fleet_server_fence\t%s\n", fence)
	fmt.Fprintf(tw, "fleet_case_sensitive\t%s\n", policy.OnOff(p.FleetCaseSensitive))
	confine := p.ConfineMode()
	if len(p.ConfineAllow) > 0 {
		confine += " (also writable: " + strings.Join(p.ConfineAllow, ", ") + ")"
	}
	fmt.Fprintf(tw, "confine\t%s\n", confine)
	fmt.Fprintf(tw, "branch_layout\t%s (%s)\n", p.Layout(), p.TaskBranch("TASK"))
	fmt.Fprintf(tw, "require_owner\t%s\n", policy.OnOff(p.RequireOwner))
	fmt.Fprintf(tw, "publication_lease\t%s\n", policy.OnOff(p.PublicationLease))
	switch p.Forge {
	case store.ForgeGitea:
		fmt.Fprintf(tw, "forge\tgitea at %s (remote %s; token in %s)\n", cmp.Or(p.ForgeURL, "the remote's host"), cmp.Or(p.ForgeRemote, "origin"), p.ForgeTokenFile)
	case store.ForgeGitHub:
		fmt.Fprintf(tw, "forge\tgithub through gh (remote %s)\n", cmp.Or(p.ForgeRemote, "origin"))
	default:
		fmt.Fprintf(tw, "forge\tnone\n")
	}
	tw.Flush()
}

// hookWarning turns a failed hook installation into a warning that names
// its code and the command that fixes it.
func hookWarning(err error) string {
	if d, ok := decision.As(err); ok {
		w := fmt.Sprintf("%s: commits are not gated: %s", d.Code, d.Message)
		if d.Hint != "" {
			w += "; hint: " + d.Hint
		}
		return w
	}
	return decision.HooksMissing + ": " + decision.Words(decision.HooksMissing, "not-gated-install", err)
}
