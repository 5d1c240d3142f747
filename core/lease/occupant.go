package lease

import (
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// Occupant is a process a run left in its worktree that fences it: it
// started during the run, is not of it, and still uses the worktree
// (RUNTIME_OCCUPIED).
type Occupant struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
	// Since is when it started (RFC 3339; "" when the boot's start cannot
	// be read).
	Since string `json:"since,omitempty"`
	// ClientID and LeaseID name the run it outlived.
	ClientID string `json:"client_id"`
	LeaseID  string `json:"lease_id,omitempty"`
	// Why is how it uses the worktree (cwd, an open file, a mapping); ""
	// when that cannot be read (another user's process), which fences as
	// if it did.
	Why string `json:"why,omitempty"`
	// Holder is its identity as recorded.
	Holder proc.Holder `json:"holder"`
}

// Occupants are the processes recorded as allocation a's occupants that
// still fence its worktree: each lives (or cannot be told from one that
// does) and still uses the worktree (or what it uses cannot be read). One
// that died, or left the worktree (a process of another task's agent gone
// back to its own), fences nothing: wt-exec clears its binding.
func Occupants(a store.Allocation) []Occupant {
	var out []Occupant
	r := proc.NewReader()
	for _, v := range a.ExternalBindings {
		b, ok, err := proc.DecodeRuntimeBinding(v)
		if err != nil || !ok || b.Kind != proc.OccupantKind {
			continue
		}
		if o, fences := occupantFences(r, b, a.WorktreePath); fences {
			out = append(out, o)
		}
	}
	return out
}

// occupantFences tells whether occupant binding b still fences the
// worktree at path, and who it is.
func occupantFences(r *proc.Reader, b proc.RuntimeBinding, path string) (Occupant, bool) {
	h := b.Holder
	if live, err := proc.IsLive(r, h.Identity()); err == nil && !live {
		return Occupant{}, false
	}
	u, uses, known := proc.UsesPath(h.PID, path)
	if known && !uses {
		return Occupant{}, false
	}
	o := Occupant{PID: h.PID, Command: proc.Command(h.PID), ClientID: h.ClientID, Why: u.Why, Holder: h}
	if b.LeaseID != nil {
		o.LeaseID = *b.LeaseID
	}
	if t := proc.StartTime(h.StartTicks); !t.IsZero() {
		o.Since = t.UTC().Format(time.RFC3339)
	}
	return o, true
}

// Describe is the occupant in words, for a refusal, a status row and a
// finding.
func (o Occupant) Describe(path string) string {
	how := ""
	if o.Why != "" {
		how = ", " + o.Why
	}
	since := ""
	if o.Since != "" {
		since = " since " + o.Since
	}
	return decision.Words(decision.RuntimeOccupied, "occupant", o.PID, o.Command, how, since, o.ClientID, path)
}

// OccupiedError is RUNTIME_OCCUPIED for occupant o of the worktree at
// path, in repository repo (a shell word), with what ends it.
func OccupiedError(o Occupant, repo, path string) *decision.Error {
	return decision.Relay(decision.RuntimeOccupied, o.Describe(path)).
		WithHint("see it with wt-admin --repo %s ps %s; end it (kill -TERM %d), or wait for it: wt-exec -C %s --wait -- COMMAND", repo, shell.Word(path), o.PID, shell.Word(path)).
		WithFact("occupant", o.Holder)
}
