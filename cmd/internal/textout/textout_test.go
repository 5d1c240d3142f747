package textout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
)

// TestDecideComesToAnExitCodeAndADecision: a refusal exits 1 with its
// decision; a usage refusal exits 2 and, without a hint, gets one that
// names the command's help; an ExitError's code wins, and a reported one
// prints nothing; an error of no decision is an internal one.
func TestDecideComesToAnExitCodeAndADecision(t *testing.T) {
	t.Parallel()
	refusal := decision.Relay(decision.WriterLeaseHeld, "held by pid 7").WithHint("wait: wt-exec --wait")
	usage := decision.Relay(decision.Usage, "no such flag -q")
	usageHinted := decision.Relay(decision.Usage, "two paths").WithHint("give one path")
	for _, c := range []struct {
		name         string
		err          error
		bin, command string
		code         int
		want         *decision.Error // nil: reported already
	}{
		{"refusal", refusal, "wt-admin", "lease", ExitRefused, refusal},
		{"wrapped refusal", fmt.Errorf("renew: %w", refusal), "wt-admin", "lease", ExitRefused, refusal},
		{"plain error", errors.New("disk on fire"), "wt-admin", "status", ExitRefused,
			&decision.Error{Code: decision.Internal, Message: "disk on fire"}},
		{"usage", usage, "wt-admin", "lease renew", ExitUsage,
			&decision.Error{Code: decision.Usage, Message: "no such flag -q", Hint: "see wt-admin lease renew --help"}},
		{"usage, no command", usage, "wt-gate", "", ExitUsage,
			&decision.Error{Code: decision.Usage, Message: "no such flag -q", Hint: "see wt-gate --help"}},
		{"usage with its own hint", usageHinted, "wt-admin", "ps", ExitUsage, usageHinted},
		{"exit error carrying a refusal", &ExitError{Code: 3, Err: refusal}, "wt-exec", "", 3, refusal},
		{"exit error carrying usage", &ExitError{Code: 3, Err: usage}, "wt-exec", "", ExitUsage,
			&decision.Error{Code: decision.Usage, Message: "no such flag -q", Hint: "see wt-exec --help"}},
		{"exit error of a bare code", &ExitError{Code: 4}, "wt-exec", "", 4,
			&decision.Error{Code: decision.Internal, Message: "exit 4"}},
		{"reported", &ExitError{Code: 5, Err: refusal, Reported: true}, "wt-exec", "", 5, nil},
		{"wrapped reported", fmt.Errorf("run: %w", &ExitError{Code: 6, Reported: true}), "wt-exec", "", 6, nil},
	} {
		code, d, reported := Decide(c.err, c.bin, c.command)
		if code != c.code || reported != (c.want == nil) {
			t.Errorf("%s: exit %d, reported %v; want %d, %v", c.name, code, reported, c.code, c.want == nil)
		}
		if c.want == nil {
			if d != nil {
				t.Errorf("%s: a reported error gave a decision %+v", c.name, d)
			}
			continue
		}
		if d == nil || d.Code != c.want.Code || d.Message != c.want.Message || d.Hint != c.want.Hint {
			t.Errorf("%s: decision %+v, want %+v", c.name, d, c.want)
		}
	}
	if usage.Hint != "" {
		t.Errorf("Decide changed the caller's decision: hint %q", usage.Hint)
	}
}

// TestPrintWritesTheLinesOfAReport: usage is the code and what is wrong,
// then the hint; a refusal is "refused", a failure of wt or git "error";
// a hint line only where there is a hint; every value cleaned.
func TestPrintWritesTheLinesOfAReport(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		code int
		d    *decision.Error
		want string
	}{
		{"usage", ExitUsage, &decision.Error{Code: decision.Usage, Message: "bad flag", Hint: "see wt-admin --help"},
			"wt-admin: USAGE: bad flag\nwt-admin: hint: see wt-admin --help\n"},
		{"refusal with a hint", ExitRefused, &decision.Error{Code: decision.WriterLeaseHeld, Message: "held", Hint: "wait"},
			"wt-admin: refused: " + decision.WriterLeaseHeld + ": held\nwt-admin: hint: wait\n"},
		{"refusal without", ExitRefused, &decision.Error{Code: decision.WriterLeaseHeld, Message: "held"},
			"wt-admin: refused: " + decision.WriterLeaseHeld + ": held\n"},
		{"internal", ExitRefused, &decision.Error{Code: decision.Internal, Message: "boom"},
			"wt-admin: error: " + decision.Internal + ": boom\n"},
		{"git failed", 7, &decision.Error{Code: decision.GitFailed, Message: "git exited 128"},
			"wt-admin: error: " + decision.GitFailed + ": git exited 128\n"},
		{"values cleaned", ExitRefused, &decision.Error{Code: decision.WriterLeaseHeld, Message: "a\nwt-admin: ok\x1b[2J", Hint: "x\ty"},
			"wt-admin: refused: " + decision.WriterLeaseHeld + `: a\nwt-admin: ok\x1b[2J` + "\nwt-admin: hint: x\\ty\n"},
	} {
		var b bytes.Buffer
		Print(&b, "wt-admin", c.code, c.d)
		if b.String() != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, b.String(), c.want)
		}
	}
}

// TestReportAnchorsTheHintAndReturnsTheExitCode: the hint's command is
// anchored at the working directory; a reported error prints nothing.
func TestReportAnchorsTheHintAndReturnsTheExitCode(t *testing.T) {
	t.Parallel()
	wd := WorkDir()
	if wd == "" {
		t.Fatal("no working directory")
	}
	var b bytes.Buffer
	err := decision.Relay(decision.WriterLeaseHeld, "held").WithHint("see wt-admin lease list")
	if code := Report(&b, "wt-exec", "", err); code != ExitRefused {
		t.Errorf("exit %d", code)
	}
	want := "wt-exec: refused: " + decision.WriterLeaseHeld + ": held\nwt-exec: hint: see " + Anchor("wt-admin lease list", wd) + "\n"
	if b.String() != want || !strings.Contains(b.String(), "--repo") {
		t.Errorf("Report wrote %q, want %q", b.String(), want)
	}
	if err.Hint != "see wt-admin lease list" {
		t.Errorf("Report changed the caller's hint: %q", err.Hint)
	}
	b.Reset()
	if code := Report(&b, "wt-exec", "", &ExitError{Code: 9, Reported: true}); code != 9 || b.Len() != 0 {
		t.Errorf("a reported error: exit %d, wrote %q", code, b.String())
	}
}

// TestAnchoredLeavesWhatNeedsNoAnchor: no decision, no hint and a hint of
// prose come back as they are (the same pointer).
func TestAnchoredLeavesWhatNeedsNoAnchor(t *testing.T) {
	t.Parallel()
	if Anchored(nil, "/r") != nil {
		t.Error("Anchored(nil) is not nil")
	}
	for _, d := range []*decision.Error{{Code: "X"}, {Code: "X", Hint: "try later"}} {
		if got := Anchored(d, "/r"); got != d {
			t.Errorf("Anchored(%+v) = %+v, a copy", d, got)
		}
	}
	d := &decision.Error{Code: "X", Hint: "wt-admin status"}
	if got := Anchored(d, "/r"); got == d || got.Hint != "wt-admin --repo /r status" || d.Hint != "wt-admin status" {
		t.Errorf("Anchored: %+v (the original now %+v)", got, d)
	}
}

// TestExitErrorSaysItsCauseOrItsCode.
func TestExitErrorSaysItsCauseOrItsCode(t *testing.T) {
	t.Parallel()
	cause := errors.New("cause")
	if e := (&ExitError{Code: 2, Err: cause}); e.Error() != "cause" || !errors.Is(e, cause) {
		t.Errorf("%v does not carry its cause", e)
	}
	if e := (&ExitError{Code: 2}); e.Error() != "exit 2" || e.Unwrap() != nil {
		t.Errorf("%v", e)
	}
}

// TestCleanEscapesEveryControlCharacter: newlines and tabs too, C1
// controls and bytes that are not UTF-8; printable text, Unicode included
// (U+FFFD itself too), is left as it is.
func TestCleanEscapesEveryControlCharacter(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                      "",
		"plain path/to é 中":     "plain path/to é 中",
		"a\nb":                  `a\nb`,
		"a\tb":                  `a\tb`,
		"\x1b]0;title\x07":      `\x1b]0;title\x07`,
		"\r\x00\x7f":            `\x0d\x00\x7f`,
		"c1 \u009b31m":          `c1 \u009b31m`,
		"bad \xff\xfe byte":     `bad \xff\xfe byte`,
		"cut \xe4\xb8 rune":     `cut \xe4\xb8 rune`,
		"U+FFFD \ufffd is text": "U+FFFD \ufffd is text",
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSafeKeepsLinesAndEscapesTheRest: a Safe writer passes newlines and
// tabs, escapes other controls, and reports the bytes it was given as
// written.
func TestSafeKeepsLinesAndEscapesTheRest(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	w := Safe(&b)
	for _, s := range []string{"line one\n", "col\tcol\n", "\x1b[31mred\x1b[0m\n", "\u009b2J\xff\n"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Errorf("Write(%q): %d, %v", s, n, err)
		}
	}
	want := "line one\ncol\tcol\n" + `\x1b[31mred\x1b[0m` + "\n" + `\u009b2J\xff` + "\n"
	if b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
}

// TestSafeReportsTheWritersError: a write to a closed file fails, plain
// or escaped, and says so.
func TestSafeReportsTheWritersError(t *testing.T) {
	t.Parallel()
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	w := Safe(f)
	for _, s := range []string{"plain\n", "esc\x1b\n"} {
		if n, err := w.Write([]byte(s)); err == nil || n != 0 {
			t.Errorf("Write(%q) to a closed file: %d, %v", s, n, err)
		}
	}
}

// roundTrip writes v as WriteJSON does and reads it back.
func roundTrip(t *testing.T, v any, indent string) (string, map[string]any) {
	t.Helper()
	var b bytes.Buffer
	WriteJSON(&b, v, indent)
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatalf("%s: %v", b.String(), err)
	}
	return b.String(), m
}

// TestDecisionEnvelope: ok, the decision's members with code and reason
// beside them (code and reason win over members of the same name), the
// tool's version and the schema's, warnings as a list even when none.
func TestDecisionEnvelope(t *testing.T) {
	t.Parallel()
	type result struct {
		Path   string `json:"path"`
		Code   string `json:"code"`
		Hidden string `json:"-"`
	}
	env, err := DecisionEnvelope("lease renew", "RENEWED", "still held", result{Path: "/w <1>", Code: "mine", Hidden: "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, m := roundTrip(t, env, "")
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, "/w <1>") {
		t.Errorf("not one line with HTML characters as they are: %q", out)
	}
	want := map[string]any{
		"schema_version": float64(JSONSchemaVersion), "tool_version": Version(), "command": "lease renew",
		"ok": true, "warnings": []any{},
		"decision": map[string]any{"path": "/w <1>", "code": "RENEWED", "reason": "still held"},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("envelope %v\n want %v", m, want)
	}
	env, err = DecisionEnvelope("status", "OK", "fine", nil, []string{"stale lease"})
	if err != nil {
		t.Fatal(err)
	}
	if _, m := roundTrip(t, env, "  "); !reflect.DeepEqual(m["decision"], map[string]any{"code": "OK", "reason": "fine"}) ||
		!reflect.DeepEqual(m["warnings"], []any{"stale lease"}) {
		t.Errorf("envelope without a result: %v", m)
	}
	// A result that is not an object, or that encoding/json cannot write,
	// is an error, not an envelope.
	for _, r := range []any{"text", []int{1}, map[string]any{"c": make(chan int)}} {
		if env, err := DecisionEnvelope("x", "OK", "", r, nil); err == nil {
			t.Errorf("DecisionEnvelope(%T): %v, no error", r, env)
		}
	}
}

// TestErrorEnvelope: not ok, the error's code, message and hint, and its
// facts beside them (never over them).
func TestErrorEnvelope(t *testing.T) {
	t.Parallel()
	d := decision.Relay(decision.WriterLeaseHeld, "held by 7").WithHint("wait").
		WithFact("pid", 7).WithFact("code", "forged").WithFact("message", "forged")
	out, m := roundTrip(t, ErrorEnvelope("lease acquire", d), "  ")
	if !strings.Contains(out, "\n  \"command\"") {
		t.Errorf("not indented: %s", out)
	}
	want := map[string]any{
		"schema_version": float64(JSONSchemaVersion), "tool_version": Version(), "command": "lease acquire",
		"ok": false, "warnings": []any{},
		"error": map[string]any{"code": decision.WriterLeaseHeld, "message": "held by 7", "hint": "wait", "pid": float64(7)},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("envelope %v\n want %v", m, want)
	}
}

// TestVersionIsStableAndNamed: the version is worked out once and is
// never empty; unstamped, it says it is a development build.
func TestVersionIsStableAndNamed(t *testing.T) {
	t.Parallel()
	v := Version()
	if v == "" || Version() != v {
		t.Fatalf("Version: %q then %q", v, Version())
	}
	if stamped == "" && v != "devel" && !strings.HasPrefix(v, "devel-") && !strings.HasPrefix(v, "v") {
		t.Errorf("an unstamped build's version %q", v)
	}
}
