package doctor

import (
	"fmt"

	"github.com/wt-tool/wt/core/store"
)

// checkStore reads the store's records every other check of the section
// builds on: the repository's record, the policy and the allocations. One
// that cannot be read is a finding (wt never overwrites it); the others
// check what can be read. It also notes the task keys that are live.
func checkStore(s *scope) {
	if _, err := s.tx.Repository(); err != nil {
		s.storeErr(err)
	}
	if p, ok, err := s.tx.Policy(); err != nil {
		s.storeErr(err)
	} else if ok {
		s.pol = p
	} else {
		s.find(Finding{Subject: "policy.json", Problem: "the policy is missing",
			Fix: fmt.Sprintf("wt-admin --repo %s init", s.repo)})
	}
	allocs, err := s.tx.Allocations()
	if err != nil {
		s.storeErr(err)
	}
	s.allocs = allocs
	s.live = map[string]bool{}
	for _, a := range allocs {
		if a.Lifecycle != store.Released {
			s.live[a.TaskKey] = true
		}
	}
}
