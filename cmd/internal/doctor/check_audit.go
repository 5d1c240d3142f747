package doctor

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/maint"
)

// checkAudit: moves of live task branches that no gate approved, since
// wt-admin audit last showed them (maint.Audit); the fix is to look.
func checkAudit(s *scope) {
	r, repo := s.r, s.repo
	res, err := maint.Audit(r, time.Time{}, maint.LastAudit(r.Git.CommonDir))
	if err != nil {
		s.find(Finding{Subject: "task branches", Problem: err.Error(), Hint: fmt.Sprintf("run wt-admin --repo %s audit", repo)})
		return
	}
	for _, t := range res.Tasks {
		if t.Missing != nil {
			s.find(Finding{Subject: t.TaskKey,
				Problem: fmt.Sprintf("ALARM: %s: task %s's %s", t.Missing.Code, t.TaskKey, t.Missing.Message),
				Fix:     t.Missing.Restore})
		}
		if sym := t.Symref; sym != nil {
			s.find(Finding{Subject: t.Branch,
				Problem: fmt.Sprintf("ALARM: %s: %s", sym.Code, sym.Message),
				Fix:     strings.Join(sym.Repair, " && ")})
		}
		if t.Unseen != "" {
			s.find(Finding{Subject: cmp.Or(t.TaskKey, t.Branch),
				Problem: "branch " + t.Branch + " is not audited: what cannot be read: " + t.Unseen,
				Hint:    fmt.Sprintf("run wt-admin --repo %s audit", repo)})
		}
	}
	if res.Ungated == 0 {
		return
	}
	var tasks []string
	for _, t := range res.Tasks {
		if len(t.Ungated) > 0 {
			tasks = append(tasks, cmp.Or(t.TaskKey, t.Branch))
		}
	}
	s.find(Finding{Subject: strings.Join(tasks, ", "),
		Problem: decision.UngatedRefMove + ": " + decision.Words(decision.UngatedRefMove, "moves-since-audit", res.Ungated),
		Fix:     fmt.Sprintf("wt-admin --repo %s audit", repo)})
}
