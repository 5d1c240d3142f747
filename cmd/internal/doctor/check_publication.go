package doctor

import (
	"fmt"

	"github.com/wt-tool/wt/core/view"
)

// checkPublication: the publication lease of a lander that is gone keeps
// every other lander waiting (and, under publication-lease on, the
// branch shut) until one takes it over; a live one is a note.
func checkPublication(s *scope) {
	tx, repo := s.tx, s.repo
	p, err := view.ReadPublication(tx)
	if err != nil {
		s.storeErr(err)
		return
	}
	if p == nil {
		return
	}
	subject := "the publication lease of " + p.Branch
	switch {
	case p.Unknown != "":
		s.find(Finding{Subject: subject,
			Problem: fmt.Sprintf("whether its lander, pid %d, runs cannot be read: %s", p.Holder.PID, p.Unknown),
			Hint:    fmt.Sprintf("look at the process (ps -p %d); wt does not take what it cannot read for dead", p.Holder.PID)})
	case p.Live:
		s.note(Finding{Subject: subject,
			Problem: fmt.Sprintf("held by lander pid %d since %s%s", p.Holder.PID, p.AcquiredAt, map[bool]string{true: ", landing task " + p.Task}[p.Task != ""])})
	default:
		s.find(Finding{Subject: subject,
			Problem: fmt.Sprintf("its lander, pid %d, is gone and left it held: the next lander takes it over", p.Holder.PID),
			Fix:     fmt.Sprintf("wt-admin --repo %s land --recover", repo)})
	}
}
