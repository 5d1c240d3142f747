// Package doctor checks a governed repository (`wt-admin doctor`). Its
// checks are the table in checks.go, one file each (check_*.go): the
// report's "checked" line, each finding's check name and the order they
// run in all come from that table. Each finding carries the command that
// fixes it. It changes nothing of the repository's or the store's; what
// it writes is the answer git gave to what a commit in a worktree meets,
// kept beside wt's hooks (install.GateState) as wt-exec and allocate keep
// it, so that the next asker need not run git again.
package doctor

import (
	"context"
	"fmt"
	"sync"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// Finding is one thing that needs a person's action.
type Finding struct {
	// Check names the check that found it (a name of the table's).
	Check string `json:"check"`
	// Subject is what the finding is about: a file, a hook, a worktree.
	Subject string `json:"subject"`
	Problem string `json:"problem"`
	// Fix is the command that fixes it; "" when a person must look first
	// (then Hint says where).
	Fix  string `json:"fix,omitempty"`
	Hint string `json:"hint,omitempty"`
}

// Report is what doctor found.
type Report struct {
	Repository string `json:"repository"`
	HooksDir   string `json:"hooks_dir"`
	// Checked are the names of the checks that ran, in the table's order.
	Checked  []string  `json:"checked"`
	Findings []Finding `json:"findings"`
	// Notes are facts a person should know that need no action: worktrees
	// of roles that wt leaves ungated by design.
	Notes []Finding `json:"notes"`
}

// scope is what the checks of one run share: the repository, and what
// the checks before read for the ones after (the store check reads the
// policy and the allocations; the gates check git's worktree list).
type scope struct {
	ctx  context.Context
	r    *alloc.Repo
	repo string // the repository's top level, a shell word for the fixes
	rep  *Report
	name string // the check that runs: its findings carry its name

	adminFix string             // the admin check's first fix (the inventory's, when git stops)
	unsafe   map[string]bool    // the worktrees whose admin dir the admin check found unsafe: no git runs there
	inv      []gitrepo.Worktree // git's worktree list
	invErr   error
	tx       *store.Tx // the store's read section, in the store phase
	pol      store.Policy
	allocs   []store.Allocation
	scan     func() (*proc.Scan, error) // one reading of the processes
	tips     []string                   // the governed refs (objects)
	bases    []string                   // where their governed history begins (objects)
	live     map[string]bool            // the task keys with a live allocation
}

// find records a finding of the check that runs.
func (s *scope) find(f Finding) {
	f.Check = s.name
	s.rep.Findings = append(s.rep.Findings, f)
}

// note records a note of the check that runs.
func (s *scope) note(f Finding) {
	f.Check = s.name
	s.rep.Notes = append(s.rep.Notes, f)
}

// storeErr records a record that cannot be read, as the store check's:
// wt never overwrites what it cannot read, so a person looks at it.
func (s *scope) storeErr(err error) {
	d, _ := decision.As(err)
	msg := err.Error()
	if d != nil {
		msg = d.Message
	}
	s.rep.Findings = append(s.rep.Findings, Finding{Check: "store", Subject: "store", Problem: msg,
		Hint: "look at the file named; wt refuses to read it and never overwrites it"})
}

// Run checks the repository that holds dir, running each check of the
// table in its phases. A store that cannot be opened at all is a finding,
// not an error: doctor is what a person runs when something is wrong.
func Run(ctx context.Context, dir string) (Report, error) {
	rep := Report{Checked: []string{}, Findings: []Finding{}, Notes: []Finding{}}
	r, err := alloc.Open(ctx, dir)
	switch decision.CodeOf(err) {
	case "":
	case decision.NotInitialized:
		rep.Checked = append(rep.Checked, "store")
		rep.Findings = append(rep.Findings, Finding{Check: "store", Subject: dir, Problem: "the repository is not set up for wt",
			Fix: fmt.Sprintf("wt-admin --repo %s init", shell.Word(dir))})
		return rep, nil
	default:
		return rep, err
	}
	rep.Repository = r.Git.TopLevel
	s := &scope{ctx: ctx, r: r, repo: shell.Word(r.Git.TopLevel), rep: &rep, scan: sync.OnceValues(proc.NewScan), unsafe: map[string]bool{}}
	return rep, s.run(checks)
}

// run runs the phases of table's checks on s: the early steps, the
// store's under its read lock, then the late ones outside it (skipped when
// the store's lock cannot be had). Checked lists the checks that apply.
func (s *scope) run(table []check) error {
	step := func(c check, fn func(*scope)) {
		if fn != nil && (c.applies == nil || c.applies(s)) {
			s.name = c.name
			fn(s)
		}
	}
	for _, c := range table {
		step(c, c.early)
	}
	err := s.r.Store.Read(func(tx *store.Tx) error {
		s.tx = tx
		defer func() { s.tx = nil }()
		for _, c := range table {
			step(c, c.inStore)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range table {
		step(c, c.late)
	}
	// A check that does not apply (fleet outside fleet mode) is not
	// said to be checked.
	s.rep.Checked = s.rep.Checked[:0]
	for _, c := range table {
		if c.applies == nil || c.applies(s) {
			s.rep.Checked = append(s.rep.Checked, c.name)
		}
	}
	return nil
}
