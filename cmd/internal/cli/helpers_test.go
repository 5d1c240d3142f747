package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wt-tool/wt/cmd/internal/textout"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wtfixture"
)

// TestMain keeps every git away from the configuration of the user and of
// the machine (gittest.Setenv), before any test runs.
func TestMain(m *testing.M) {
	gittest.Setenv()
	os.Exit(m.Run())
}

// run is one run of wt-admin: its exit code and what it wrote.
type run struct {
	exit           int
	stdout, stderr string
}

// appRuns lets one run of the app at a time in this process: urfave/cli
// writes each flag's default into the flag (Apply), and the flags every
// command shares (clikit.JSONFlag, applyFlag, ...) are package variables,
// written by each run. A binary runs its app once; the tests run it many
// times, from parallel tests, whose repositories are made in parallel.
var appRuns sync.Mutex

// admin runs wt-admin in this process with args, as its main does.
func admin(t *testing.T, args ...string) run {
	t.Helper()
	var out, errb bytes.Buffer
	appRuns.Lock()
	defer appRuns.Unlock()
	code := Admin(args, &out, &errb)
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

// body is the decision, or the error, of the envelope.
func (e envelope) body() map[string]any {
	if e.OK {
		return e.Decision
	}
	return e.Error
}

// code is the decision code of the envelope, or its error's.
func (e envelope) code() string {
	c, _ := e.body()["code"].(string)
	return c
}

// jsonRun runs wt-admin with args and --json, and fails the test unless it
// exits with exit and prints exactly one envelope whose code is code
// (ok exactly when the exit is 0).
func jsonRun(t *testing.T, exit int, code string, args ...string) envelope {
	t.Helper()
	r := admin(t, append(slices.Clone(args), "--json")...)
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

// fixture is a governed repository (wtfixture.Repo) driven through
// wt-admin's command line.
type fixture struct{ *wtfixture.Repo }

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return &fixture{wtfixture.New(t, policy.Change{})}
}

// json runs wt-admin --repo DIR ARGS --json (jsonRun).
func (f *fixture) json(exit int, code string, args ...string) envelope {
	f.T.Helper()
	return jsonRun(f.T, exit, code, append([]string{"--repo", f.Dir}, args...)...)
}

// human runs wt-admin --repo DIR ARGS without --json and fails the test
// unless it exits with exit.
func (f *fixture) human(exit int, args ...string) run {
	f.T.Helper()
	r := admin(f.T, append([]string{"--repo", f.Dir}, args...)...)
	if r.exit != exit {
		f.T.Fatalf("%q: exit %d, want %d\nstdout: %s\nstderr: %s", args, r.exit, exit, r.stdout, r.stderr)
	}
	return r
}

// records is what the store holds of the allocations and leases, as
// their JSON: a refusal leaves it as it was.
func (f *fixture) records() string {
	f.T.Helper()
	var b strings.Builder
	err := f.R.Store.Read(func(tx *store.Tx) error {
		as, err := tx.Allocations()
		if err != nil {
			return err
		}
		var ls []store.Lease
		for _, a := range as {
			l, ok, err := tx.Lease(a.AllocationID)
			if err != nil {
				return err
			}
			if ok {
				ls = append(ls, l)
			}
		}
		return json.NewEncoder(&b).Encode([]any{as, ls})
	})
	if err != nil {
		f.T.Fatal(err)
	}
	return b.String()
}

// lease is the lease of the worktree at path in the store (ok false when
// it has none).
func (f *fixture) lease(path string) (store.Lease, bool) {
	f.T.Helper()
	var out store.Lease
	var found bool
	err := f.R.Store.Read(func(tx *store.Tx) error {
		as, err := tx.Allocations()
		for _, a := range as {
			if a.WorktreePath != path || err != nil {
				continue
			}
			out, found, err = tx.Lease(a.AllocationID)
		}
		return err
	})
	if err != nil {
		f.T.Fatal(err)
	}
	return out, found
}

// str is a string member of a JSON object, "" when absent.
func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// obj is an object member of a JSON object, nil when absent.
func obj(m map[string]any, key string) map[string]any {
	o, _ := m[key].(map[string]any)
	return o
}

// list is an array member of a JSON object, nil when absent.
func list(m map[string]any, key string) []any {
	l, _ := m[key].([]any)
	return l
}

// hasRow reports whether text has a line of exactly these fields.
func hasRow(text string, fields ...string) bool {
	for _, l := range strings.Split(text, "\n") {
		if slices.Equal(strings.Fields(l), fields) {
			return true
		}
	}
	return false
}

// hasPrefixedLine reports whether text has a line whose first fields are
// these.
func hasPrefixedLine(text string, fields ...string) bool {
	for _, l := range strings.Split(text, "\n") {
		if f := strings.Fields(l); len(f) >= len(fields) && slices.Equal(f[:len(fields)], fields) {
			return true
		}
	}
	return false
}
