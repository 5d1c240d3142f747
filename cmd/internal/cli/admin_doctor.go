package cli

import (
	"fmt"
	"io"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/cmd/internal/doctor"
	"github.com/wt-tool/wt/core/decision"
)

func (e *env) doctorCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "doctor",
		Usage: "check the store, the hooks, leases whose holders are gone, unregistered bindings and prunable worktrees; each finding with the command that fixes it (exit 1 when something needs action)",
		Flags: []ucli.Flag{clikit.JSONFlag},
		Action: e.Action("doctor", 0, func(c *ucli.Context) error {
			rep, err := doctor.Run(c.Context, repoDir(c))
			if err != nil {
				return err
			}
			if !e.JSON {
				for _, n := range rep.Notes {
					fmt.Fprintf(e.Stdout, "note: [%s] %s\n   %s\n", n.Check, clikit.Clean(n.Subject), clikit.Clean(n.Problem))
				}
			}
			if len(rep.Findings) == 0 {
				reason := "nothing needs action (checked " + strings.Join(rep.Checked, ", ") + ")"
				return e.Success(decision.DoctorOK, reason, rep, nil, func(w io.Writer) {
					fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, decision.DoctorOK, clikit.Clean(reason))
				})
			}
			if !e.JSON {
				for i, f := range rep.Findings {
					fmt.Fprintf(e.Stdout, "%d. [%s] %s\n   %s\n", i+1, f.Check, clikit.Clean(f.Subject), clikit.Clean(f.Problem))
					if f.Fix != "" {
						fmt.Fprintf(e.Stdout, "   fix: %s\n", clikit.Clean(f.Fix))
					}
					if f.Hint != "" {
						fmt.Fprintf(e.Stdout, "   hint: %s\n", clikit.Clean(f.Hint))
					}
				}
			}
			return decision.Say(decision.DoctorFindings, "finding-need", len(rep.Findings)).
				WithHint("run each fix shown, then wt-admin doctor again").
				WithFact("findings", rep.Findings).WithFact("notes", rep.Notes).WithFact("hooks_dir", rep.HooksDir).WithFact("repository", rep.Repository)
		}),
	}
}
