package doctor

import "fmt"

// checkRegistrations: a binding with no registration document (written by
// versions before registrations existed) does not govern its worktree until
// backfilled.
func checkRegistrations(s *scope) {
	tx, repo := s.tx, s.repo
	keys, err := tx.Bindings()
	if err != nil {
		s.storeErr(err)
		return
	}
	for _, key := range keys {
		_, _, ok, err := tx.Registration(key)
		if err != nil {
			s.storeErr(err)
			continue
		}
		if !ok {
			s.find(Finding{Subject: "bindings/" + key + ".json",
				Problem: "binding " + key + " has no registration: its worktree reads as unmanaged",
				Fix:     fmt.Sprintf("wt-admin --repo %s backfill", repo)})
		}
	}
}
