package proc

import (
	"fmt"
	"strings"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/strictjson"
)

// RuntimeBindingPrefix marks an external binding that records runtime
// occupancy: a process running in the worktree under wt-exec (docs/design.md, "Allocations, roles and lifecycles").
const RuntimeBindingPrefix = "runtime:process-v1:"

// OccupantKind is the kind of the binding wt-exec leaves, at the end of a
// run, for each process that started during the run, is not of it, and
// still uses the worktree (RUNTIME_OCCUPIED): not a kind wt-exec's --kind
// takes.
const OccupantKind = "occupant"

// Occupancy kinds.
var occupancyKinds = map[string]bool{"agent": true, "test": true, "preview": true, "background": true, "command": true, OccupantKind: true}

// RuntimeBinding is the decoded value of a runtime occupancy binding.
type RuntimeBinding struct {
	Holder  Holder  `json:"holder"`
	LeaseID *string `json:"lease_id"`
	Kind    string  `json:"kind"`
}

// Encode returns the binding as an external-binding string.
func (b RuntimeBinding) Encode() (string, error) {
	data := mustJSON(b)
	if _, err := decodeRuntime(data); err != nil {
		return "", err
	}
	return RuntimeBindingPrefix + string(data), nil
}

func mustJSON(v any) []byte {
	b, err := strictjson.Marshal(v)
	if err != nil {
		panic(err) // only plain structs of strings and ints are marshalled here
	}
	return b
}

// DecodeRuntimeBinding decodes an external binding. ok is false when value is
// not a runtime binding at all (other bindings are opaque strings). A runtime
// binding that is not exactly well formed is INVALID_RUNTIME_BINDING: duplicate
// keys, extra or missing fields, a kind not in the list, a pid or start ticks
// below 1, a client id out of pattern, an empty session or run id, a boot id or
// lease id that is not a uuid.
func DecodeRuntimeBinding(value string) (b RuntimeBinding, ok bool, err error) {
	if !strings.HasPrefix(value, RuntimeBindingPrefix) {
		return RuntimeBinding{}, false, nil
	}
	b, err = decodeRuntime([]byte(value[len(RuntimeBindingPrefix):]))
	if err != nil {
		return RuntimeBinding{}, true, decision.SayWrap(decision.InvalidRuntimeBinding, err, "runtime-occupancy")
	}
	return b, true, nil
}

func decodeRuntime(data []byte) (RuntimeBinding, error) {
	var b RuntimeBinding
	if err := strictjson.Decode(data, &b); err != nil {
		return b, err
	}
	h := b.Holder
	if !occupancyKinds[b.Kind] {
		return b, fmt.Errorf("unknown kind %q", b.Kind)
	}
	if h.PID < 1 || h.StartTicks < 1 {
		return b, fmt.Errorf("pid and start ticks must be positive")
	}
	if !ValidClientID(h.ClientID) {
		return b, fmt.Errorf("client id %q is out of pattern", h.ClientID)
	}
	for _, s := range []*string{h.SessionID, h.RunID} {
		if s != nil && (*s == "" || strings.ContainsRune(*s, 0)) {
			return b, fmt.Errorf("empty session or run id")
		}
	}
	if !ids.Valid(h.BootID) {
		return b, fmt.Errorf("boot id %q is not a uuid", h.BootID)
	}
	if b.LeaseID != nil && !ids.Valid(*b.LeaseID) {
		return b, fmt.Errorf("lease id %q is not a uuid", *b.LeaseID)
	}
	return b, nil
}
