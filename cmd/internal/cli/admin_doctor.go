package cli

import (
	"fmt"
	"io"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/doctor"
	"github.com/wt-tool/wt/core/decision"
)

func (e *env) doctorCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "doctor",
		Usage: "check the store, the hooks, leases whose holders are gone, unregistered bindings and prunable worktrees; each finding with the command that fixes it (exit 1 when something needs action)",
		Flags: []ucli.Flag{jsonFlag},
		Action: e.action("doctor", 0, func(c *ucli.Context) error {
			rep, err := doctor.Run(c.Context, repoDir(c))
			if err != nil {
				return err
			}
			if !e.json {
				for _, n := range rep.Notes {
					fmt.Fprintf(e.stdout, "note: [%s] %s\n   %s\n", n.Check, clean(n.Subject), clean(n.Problem))
				}
			}
			if len(rep.Findings) == 0 {
				reason := "nothing needs action (checked " + strings.Join(rep.Checked, ", ") + ")"
				return e.success(decision.DoctorOK, reason, rep, nil, func(w io.Writer) {
					fmt.Fprintf(w, "%s: %s: %s\n", e.bin, decision.DoctorOK, clean(reason))
				})
			}
			if !e.json {
				for i, f := range rep.Findings {
					fmt.Fprintf(e.stdout, "%d. [%s] %s\n   %s\n", i+1, f.Check, clean(f.Subject), clean(f.Problem))
					if f.Fix != "" {
						fmt.Fprintf(e.stdout, "   fix: %s\n", clean(f.Fix))
					}
					if f.Hint != "" {
						fmt.Fprintf(e.stdout, "   hint: %s\n", clean(f.Hint))
					}
				}
			}
			return decision.New(decision.DoctorFindings, "%d finding(s) need action", len(rep.Findings)).
				WithHint("run each fix shown, then wt-admin doctor again").
				WithFact("findings", rep.Findings).WithFact("notes", rep.Notes).WithFact("hooks_dir", rep.HooksDir).WithFact("repository", rep.Repository)
		}),
	}
}
