package textout

import (
	"encoding/json"
	"io"

	"github.com/wt-tool/wt/core/decision"
)

// JSONSchemaVersion is the version of the --json envelope.
const JSONSchemaVersion = 1

// Envelope is the one JSON object a --json run prints: ok with the
// decision, or not ok with the error.
func Envelope(command string, ok bool, body map[string]any, warnings []string) map[string]any {
	if warnings == nil {
		warnings = []string{}
	}
	env := map[string]any{"schema_version": JSONSchemaVersion, "tool_version": Version(),
		"command": command, "ok": ok, "warnings": warnings}
	if ok {
		env["decision"] = body
	} else {
		env["error"] = body
	}
	return env
}

// DecisionEnvelope is the envelope of a decision: result's members (as
// encoding/json writes them) with code and reason beside them.
func DecisionEnvelope(command, code, reason string, result any, warnings []string) (map[string]any, error) {
	dec := map[string]any{}
	if result != nil {
		b, err := json.Marshal(result)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &dec); err != nil {
			return nil, err
		}
	}
	dec["code"], dec["reason"] = code, reason
	return Envelope(command, true, dec, warnings), nil
}

// ErrorEnvelope is the envelope of a refusal or failure d: its code,
// message and hint, and its facts beside them.
func ErrorEnvelope(command string, d *decision.Error) map[string]any {
	errObj := map[string]any{"code": d.Code, "message": d.Message, "hint": d.Hint}
	for k, v := range d.Facts {
		if _, taken := errObj[k]; !taken {
			errObj[k] = v
		}
	}
	return Envelope(command, false, errObj, nil)
}

// WriteJSON writes v to w as one JSON value (indented with indent when
// it is not ""), HTML characters as they are.
func WriteJSON(w io.Writer, v any, indent string) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	_ = enc.Encode(v) // Best effort: a closed stdout or destination has nobody to tell.
}
