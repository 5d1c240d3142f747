package doctor

import (
	"fmt"
	"path/filepath"

	"github.com/wt-tool/wt/core/land"
	"github.com/wt-tool/wt/core/maint"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
)

// checkJournals: every multi-step operation that was interrupted (its
// actor is gone), with the command that finishes or undoes it. One whose
// actor still runs is in flight, not a finding.
func checkJournals(s *scope) {
	tx, repo, repoPath := s.tx, s.repo, s.r.Git.TopLevel
	js, err := tx.Journals()
	if err != nil {
		s.storeErr(err)
		return
	}
	pr := proc.NewReader()
	for _, j := range js {
		if live, err := proc.IsLive(pr, j.Actor); err != nil || live {
			continue
		}
		f := Finding{Subject: j.Target,
			Problem: fmt.Sprintf("a %s of %s was interrupted (transaction %s, phase %s, by pid %d, gone)", j.Operation, j.Target, j.TransactionID, j.Phase, j.Actor.PID)}
		if j.Operation == "allocate" {
			f.Fix = fmt.Sprintf("wt-admin --repo %s recover", repo)
		} else if j.Operation == land.OpLand {
			f.Fix = fmt.Sprintf("wt-admin --repo %s land --recover", repo)
		} else if cmd, ok := maint.ResumeCommand(repoPath, j); ok {
			f.Fix = cmd
		} else {
			f.Hint = fmt.Sprintf("look at %s by hand; wt never overwrites what it cannot read", shell.Word(filepath.Join(tx.EventsPath(), "..", "journal", j.TransactionID+".json")))
		}
		s.find(f)
	}
}
