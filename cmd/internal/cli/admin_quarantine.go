package cli

import (
	"fmt"
	"io"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

func (e *env) quarantineCommand() *ucli.Command {
	return &ucli.Command{
		Name: "quarantine",
		Usage: "put aside what a governed worktree's admin dir holds that git, or a program after it, would trip on or run " +
			"(a FIFO or symlink as HEAD, a planted core.hooksPath, an executable), under wt's store, and write back what git needs; " +
			"each file is kept, with the command that puts it back",
		ArgsUsage: "PATH",
		Flags:     []ucli.Flag{clikit.JSONFlag},
		Action: e.Action("quarantine", 1, func(c *ucli.Context) error {
			path := c.Args().First()
			if path == "" {
				return clikit.UsageErr("quarantine-needs")
			}
			// The repository from --repo (its canonical checkout), never
			// from PATH: a git started there would read what is wrong.
			r, err := e.open(c)
			if err != nil {
				return err
			}
			target, err := proc.Canonical(path)
			if err != nil {
				return decision.SayWrap(decision.InvalidTarget, err, "as-given", path)
			}
			key := ""
			err = r.Store.Read(func(tx *store.Tx) error {
				all, err := tx.Allocations()
				for _, a := range all {
					if a.Lifecycle != store.Released && a.WorktreeKey != gitrepo.MainKey && (a.WorktreePath == target || gitrepo.SameFile(a.WorktreePath, target)) {
						key = a.WorktreeKey
					}
				}
				return err
			})
			if err != nil {
				return err
			}
			if key == "" {
				return decision.Say(decision.InvalidTarget, "no-live", target).
					WithHint("list the worktrees: wt-admin --repo %s status", shell.Word(r.Git.TopLevel))
			}
			q, err := r.QuarantineAdmin(c.Context, key)
			if err != nil {
				return err
			}
			if len(q) == 0 {
				reason := fmt.Sprintf("the admin dir of %s holds nothing to put aside", target)
				return e.Success(decision.AdminDirClean, reason, map[string]any{"path": target}, nil, func(w io.Writer) {
					fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, decision.AdminDirClean, reason)
				})
			}
			reason := fmt.Sprintf("put aside %d file(s) of the admin dir of %s under wt's store", len(q), target)
			return e.Success(decision.AdminDirQuarantined, reason, map[string]any{"path": target, "quarantined": q}, nil, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, decision.AdminDirQuarantined, clikit.Clean(reason))
				for _, x := range q {
					fmt.Fprintf(w, "  %s: %s\n    kept: %s\n    put back: %s\n", clikit.Clean(x.Rel), clikit.Clean(x.Why), clikit.Clean(x.Kept), clikit.Clean(x.RestoreCommand()))
				}
			})
		}),
	}
}
