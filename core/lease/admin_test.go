package lease

import "testing"

// TestAbandonRule is the abandon proof of docs/design.md, "Writer leases", case by case: (holder dead or
// worktree missing) and no live mutation risk; a foreign lease also needs
// the operator unless its holder is dead and its worktree missing.
func TestAbandonRule(t *testing.T) {
	quiet := Proof{NoLiveMutationRisk: true}
	with := func(p Proof, f func(*Proof)) Proof { f(&p); return p }
	cases := []struct {
		name string
		p    Proof
		want bool
	}{
		{"live holder, worktree present", quiet, false},
		{"live holder, operator", with(quiet, func(p *Proof) { p.OperatorAuthorized = true }), false},
		{"dead, foreign, no operator", with(quiet, func(p *Proof) { p.DeadProcess = true }), false},
		{"dead, foreign, operator", with(quiet, func(p *Proof) { p.DeadProcess, p.OperatorAuthorized = true, true }), true},
		{"dead, own", with(quiet, func(p *Proof) { p.DeadProcess, p.SameOwner = true, true }), true},
		{"missing, foreign, live holder", with(quiet, func(p *Proof) { p.MissingWorktree = true }), false},
		{"missing, own", with(quiet, func(p *Proof) { p.MissingWorktree, p.SameOwner = true, true }), true},
		{"dead and missing, foreign", with(quiet, func(p *Proof) { p.DeadProcess, p.MissingWorktree = true, true }), true},
		{"dead and missing, a survivor", Proof{DeadProcess: true, MissingWorktree: true, OperatorAuthorized: true, SameOwner: true, Risk: "1 process(es) remain"}, false},
	}
	for _, c := range cases {
		if got, why := c.p.sufficient(); got != c.want || got == (why != "") {
			t.Errorf("%s: sufficient = %v (%q), want %v", c.name, got, why, c.want)
		}
	}
}
