package doctor

import "github.com/wt-tool/wt/install"

// checkHooks: wt's gate is where the git on PATH runs it (hooks defined
// in configuration for git 2.54 and later, shims in the hooks dir for
// older gits), each shim current with its binary in place, and a commit in
// each governed worktree meets it (install.CheckGate asks git there).
func checkHooks(s *scope) {
	ctx, r := s.ctx, s.r
	dir, problems, err := install.CheckGate(ctx, r.Git, s.unsafe)
	s.rep.HooksDir = dir
	if err != nil {
		s.find(Finding{Subject: r.Git.TopLevel, Problem: err.Error(), Fix: install.GateFix(r.Git.TopLevel)})
		return
	}
	for _, p := range problems {
		s.find(Finding{Subject: p.Path, Problem: p.Message, Fix: p.Fix})
	}
}
