package proc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"

	"github.com/wt-tool/wt/core/decision"
)

// RuntimeBindingPrefix marks an external binding that records runtime
// occupancy: a process running in the worktree under wt-exec (SPEC §3).
const RuntimeBindingPrefix = "runtime:process-v1:"

// Occupancy kinds.
var occupancyKinds = map[string]bool{"agent": true, "test": true, "preview": true, "background": true, "command": true}

// RuntimeBinding is the decoded value of a runtime occupancy binding.
type RuntimeBinding struct {
	Holder  Holder  `json:"holder"`
	LeaseID *string `json:"lease_id"`
	Kind    string  `json:"kind"`
}

// Encode returns the binding as an external-binding string.
func (b RuntimeBinding) Encode() (string, error) {
	if _, err := decodeRuntime(mustJSON(b)); err != nil {
		return "", err
	}
	return RuntimeBindingPrefix + string(mustJSON(b)), nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
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
		return RuntimeBinding{}, true, decision.Wrap(decision.InvalidRuntimeBinding, err, "runtime occupancy binding is malformed")
	}
	return b, true, nil
}

func decodeRuntime(data []byte) (RuntimeBinding, error) {
	var b RuntimeBinding
	if err := exactKeys(data, []string{"holder", "lease_id", "kind"}); err != nil {
		return b, err
	}
	var raw struct {
		Holder json.RawMessage `json:"holder"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return b, err
	}
	if err := exactKeys(raw.Holder, []string{"client_id", "pid", "boot_id", "start_ticks", "session_id", "run_id"}); err != nil {
		return b, fmt.Errorf("holder: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return b, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return b, fmt.Errorf("trailing data after the object")
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
	if _, err := uuid.Parse(h.BootID); err != nil {
		return b, fmt.Errorf("boot id: %w", err)
	}
	if b.LeaseID != nil {
		if _, err := uuid.Parse(*b.LeaseID); err != nil {
			return b, fmt.Errorf("lease id: %w", err)
		}
	}
	return b, nil
}

// exactKeys checks that data is one JSON object whose keys are exactly want,
// each once. encoding/json keeps the last of duplicate keys silently, so
// duplicates are found by walking the tokens.
func exactKeys(data []byte, want []string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := t.(string)
		if seen[k] {
			return fmt.Errorf("duplicate key %q", k)
		}
		seen[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	for _, k := range want {
		if !seen[k] {
			return fmt.Errorf("missing key %q", k)
		}
		delete(seen, k)
	}
	for k := range seen {
		return fmt.Errorf("unknown key %q", k)
	}
	return nil
}
