package hookcli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wt-tool/wt/cmd/internal/textout"
	"github.com/wt-tool/wt/internal/gittest"
)

// TestMain keeps every git away from the configuration of the user and of
// the machine (gittest.Setenv), before any test runs. The gate these tests
// install records this test binary as wt-hook: run by an installed shim
// (wt-hook run HOOK ...), it is wt-hook.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "run" {
		os.Exit(Hook(os.Args[1:], os.Stdout, os.Stderr))
	}
	gittest.Setenv()
	os.Exit(m.Run())
}

// run is one run of wt-hook: its exit code and what it wrote.
type run struct {
	exit           int
	stdout, stderr string
}

// hook runs wt-hook in this process with args, as its main does. -C
// changes this process's directory: a test that runs it calls t.Chdir
// first (so that the directory comes back) and is not parallel.
func hook(t *testing.T, args ...string) run {
	t.Helper()
	var out, errb bytes.Buffer
	code := Hook(args, &out, &errb)
	return run{code, out.String(), errb.String()}
}

// envelope is the one JSON object a --json run prints.
type envelope struct {
	Command  string         `json:"command"`
	OK       bool           `json:"ok"`
	Warnings []string       `json:"warnings"`
	Decision map[string]any `json:"decision"`
	Error    map[string]any `json:"error"`
}

func (e envelope) code() string {
	b := e.Decision
	if !e.OK {
		b = e.Error
	}
	c, _ := b["code"].(string)
	return c
}

// jsonRun runs wt-hook with args and --json, and fails the test unless it
// exits with exit and prints exactly one envelope whose code is code.
func jsonRun(t *testing.T, exit int, code string, args ...string) envelope {
	t.Helper()
	r := hook(t, append(slices.Clone(args), "--json")...)
	var env envelope
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(&env); err != nil {
		t.Fatalf("%q: exit %d, no JSON on stdout (%v):\n%s\nstderr: %s", args, r.exit, err, r.stdout, r.stderr)
	}
	if dec.More() {
		t.Fatalf("%q: more than one JSON value on stdout:\n%s", args, r.stdout)
	}
	if r.exit != exit || env.code() != code || env.OK != (exit == textout.ExitOK) {
		t.Fatalf("%q: exit %d, code %s (ok %v), want exit %d and %s\nstdout: %s\nstderr: %s", args, r.exit, env.code(), env.OK, exit, code, r.stdout, r.stderr)
	}
	return env
}

// stdin makes text what this process reads on its standard input until
// the test ends.
func stdin(t *testing.T, text string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "stdin")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdin
	os.Stdin = f
	t.Cleanup(func() { os.Stdin = old; f.Close() })
}

// self is the path of this test binary, which the tests install as the
// wt-hook the shims run (TestMain).
func self(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err == nil {
		p, err = filepath.EvalSymlinks(p)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// gitOut runs git in dir and returns its output, trimmed, and
// its error (git config --get-regexp exits 1 when nothing matches).
func gitOut(dir string, args ...string) (string, error) {
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	return strings.TrimSpace(string(out)), err
}
