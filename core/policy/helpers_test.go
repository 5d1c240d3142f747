package policy

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
)

// TestMain keeps every git away from the configuration of the user and of
// the machine (gittest.Setenv), before any test runs.
func TestMain(m *testing.M) {
	gittest.Setenv()
	os.Exit(m.Run())
}

// fixture is a repository set up by Init in a temporary directory: its
// canonical checkout (dir) on main, at one commit (base), with its git
// (g) and store (s).
type fixture struct {
	t    *testing.T
	ctx  context.Context
	dir  string
	base string
	g    *gitrepo.Repo
	s    *store.Store
}

// newFixture makes the repository and runs Init with change.
func newFixture(t *testing.T, change Change) *fixture {
	t.Helper()
	_, dir, base := gittest.Repo(t)
	f := &fixture{t: t, ctx: context.Background(), dir: dir, base: base}
	res, err := Init(f.ctx, f.dir, change)
	if err != nil || res.Code != decision.StoreInitialized {
		t.Fatalf("Init: %+v %v", res, err)
	}
	if f.g, err = gitrepo.Discover(f.ctx, f.dir); err != nil {
		t.Fatal(err)
	}
	if f.s, err = store.Open(f.g.CommonDir); err != nil {
		t.Fatal(err)
	}
	return f
}

// git runs git in the canonical checkout.
func (f *fixture) git(args ...string) string {
	f.t.Helper()
	return gittest.Git(f.t, f.dir, args...)
}

// eventNames are the names of the events, oldest first.
func (f *fixture) eventNames() []string {
	f.t.Helper()
	var names []string
	for _, e := range f.events() {
		names = append(names, e.Event)
	}
	return names
}

// events are the events of events.jsonl, oldest first.
func (f *fixture) events() []store.Event {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.s.Root(), "events.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	var out []store.Event
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e store.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			f.t.Fatalf("events.jsonl: %v: %s", err, line)
		}
		out = append(out, e)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// sameJSON reports whether a and b encode alike (a nil and an empty list
// are not).
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}
