// Package maint is wt's registration maintenance (docs/decisions.md, "Registration maintenance"):
// backfill ties bindings written before registrations existed to their
// registration, and prune removes the git registration of a retained audit
// worktree whose checkout is gone. Both are plan-then-apply: a dry run
// prints the plan and its id, and apply recomputes the plan and acts only
// if the id is the same; prune and finish apply in the turns journaled.go
// describes, with no git under the store's exclusive lock.
package maint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
)

// PlanID is the sha256, in hex, of the plan's canonical JSON: object keys
// sorted, no insignificant white space, UTF-8 left as it is (no HTML
// escaping). Any change to any field of the plan changes the id.
func PlanID(plan any) (string, error) {
	b, err := canonical(plan)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// canonical re-encodes v through a generic value, so that every object's
// keys come out sorted (encoding/json sorts map keys), struct or not.
func canonical(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(generic); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// ValidPlanID refuses what cannot be a plan id: 64 lowercase hex digits.
func ValidPlanID(flag, id string) error {
	// A sha256 in hex: the shape of a SHA-256 object name.
	if len(id) != 64 || !gitrepo.FullObjectName(id) {
		return decision.Say(decision.Usage, "not-plan", flag, id).
			WithHint("copy plan_id from the dry run (the same command without %s)", flag)
	}
	return nil
}
