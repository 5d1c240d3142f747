package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
)

// TestPlanEveryABI plans the same run for each Landlock ABI from none (0)
// to 7, with and without a private view: what it may write does not
// depend on the ABI, signals (and abstract sockets) are scoped from ABI 6
// on, and the plan, its record and its explanation say so. No Landlock
// call is made: the ABI is the planner's input.
func TestPlanEveryABI(t *testing.T) {
	r := newRepo(t, "wt/T-1")
	c := r.c
	tmp := t.TempDir()
	for _, view := range []bool{false, true} {
		pretend(t, view, false)
		for abi := 0; abi <= 7; abi++ {
			t.Run(fmt.Sprintf("view=%v/abi=%d", view, abi), func(t *testing.T) {
				p, err := New(Input{Checkout: c, Branch: "wt/T-1", Publication: "main", TempDir: tmp, ABI: abi, DryRun: true})
				if err != nil {
					t.Fatal(err)
				}
				want := []string{c.TopLevel, c.GitDir, filepath.Join(c.CommonDir, "objects"),
					filepath.Join(c.CommonDir, "refs", "heads", "wt"), filepath.Join(c.CommonDir, "logs", "refs", "heads", "wt"),
					filepath.Join(c.CommonDir, "refs", "remotes"), filepath.Join(c.CommonDir, "logs", "refs", "remotes"), tmp}
				refs := GuardLandlock
				if view {
					want = []string{c.TopLevel, c.GitDir, c.CommonDir, tmp}
					refs = GuardView
				}
				if got := ruleDirs(p); !reflect.DeepEqual(got, want) {
					t.Errorf("writable:\n got %q\nwant %q", got, want)
				}
				scoped := abi >= 6
				if p.ABI != abi || p.Signals != scoped || p.Refs != refs || p.TempDir != tmp || p.Agent != "" || len(p.Dropped) != 0 || (p.View() != nil) != view {
					t.Errorf("plan: %+v", p)
				}
				rec := p.Record()
				if rec.ABI != abi || rec.SignalsScoped != scoped || !reflect.DeepEqual(rec.Write, want) || rec.TempDir != tmp ||
					!reflect.DeepEqual(rec.Devices, devices) || (rec.View != "") != view {
					t.Errorf("record: %+v", rec)
				}
				text := p.Explain(c.TopLevel)
				if text[0] != fmt.Sprintf("confinement of %s (Landlock ABI %d)", c.TopLevel, abi) {
					t.Errorf("first line: %q", text[0])
				}
				sig := lines(text, "  signals  ")
				wantSig := []string{fmt.Sprintf("  signals  not scoped (Landlock ABI %d < 6)", abi)}
				if scoped {
					wantSig = []string{"  signals  only to processes the command started"}
				}
				if !reflect.DeepEqual(sig, wantSig) {
					t.Errorf("signals: %q, want %q", sig, wantSig)
				}
				if got := len(lines(text, "abstract ones only of its own")); got != map[bool]int{false: 0, true: 1}[scoped] {
					t.Errorf("abstract sockets said %d times:\n%s", got, strings.Join(text, "\n"))
				}
				for _, w := range want {
					if len(lines(text, "  write    "+w+"  (")) != 1 {
						t.Errorf("--explain does not list %s as writable:\n%s", w, strings.Join(text, "\n"))
					}
				}
			})
		}
	}
}

// TestRefusal: the refusal for a kernel below MinABI says which it is.
func TestRefusal(t *testing.T) {
	t.Parallel()
	for abi := 0; abi < MinABI; abi++ {
		d := Refusal(abi)
		if d.Code != decision.ConfinementUnavailable || !strings.Contains(d.Hint, "--no-confine") || !strings.Contains(d.Hint, "--confine auto") {
			t.Errorf("ABI %d: %+v", abi, d)
		}
		want := "this kernel has no Landlock"
		if abi > 0 {
			want = fmt.Sprintf("Landlock ABI %d is older than 3", abi)
		}
		if !strings.Contains(d.Message, want) {
			t.Errorf("ABI %d: %q does not say %q", abi, d.Message, want)
		}
	}
}

// TestNewLandlockLayouts: without a view, what the planner makes writable
// beneath the common dir follows the branch: its ref directory (shared in
// the flat layout, its own in the task-dir layout), none for a detached
// worktree, and the whole table stack in a reftable repository; and a
// real run (not --explain) makes the directories its rules name.
func TestNewLandlockLayouts(t *testing.T) {
	pretend(t, false, false)
	t.Run("task-dir layout, made", func(t *testing.T) {
		r := newRepo(t, "wt/T-1/work")
		c := r.c
		tmp := t.TempDir()
		p, err := New(Input{Checkout: c, Branch: "wt/T-1/work", Publication: "main", TempDir: tmp, ABI: 4})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{c.TopLevel, c.GitDir, filepath.Join(c.CommonDir, "objects"),
			filepath.Join(c.CommonDir, "refs", "heads", "wt", "T-1"), filepath.Join(c.CommonDir, "logs", "refs", "heads", "wt", "T-1"),
			filepath.Join(c.CommonDir, "refs", "remotes"), filepath.Join(c.CommonDir, "logs", "refs", "remotes"), tmp}
		if got := ruleDirs(p); !reflect.DeepEqual(got, want) {
			t.Fatalf("writable:\n got %q\nwant %q", got, want)
		}
		for _, d := range want[3:7] {
			if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
				t.Errorf("the ref directory %s was not made: %v", d, err)
			}
		}
		text := strings.Join(p.Explain(c.TopLevel), "\n")
		if strings.Contains(text, "shared: other branches") || !strings.Contains(text, "refs     writable: refs/heads/wt/T-1/ (its branch's directory)") {
			t.Errorf("a branch in a directory of its own:\n%s", text)
		}
	})
	t.Run("detached", func(t *testing.T) {
		r := newRepo(t, "wt/T-1")
		c := r.c
		tmp := t.TempDir()
		p, err := New(Input{Checkout: c, TempDir: tmp, ABI: 3})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{c.TopLevel, c.GitDir, filepath.Join(c.CommonDir, "objects"),
			filepath.Join(c.CommonDir, "refs", "remotes"), filepath.Join(c.CommonDir, "logs", "refs", "remotes"), tmp}
		if got := ruleDirs(p); !reflect.DeepEqual(got, want) {
			t.Fatalf("writable:\n got %q\nwant %q", got, want)
		}
		if !exists(filepath.Join(c.CommonDir, "logs", "refs", "remotes")) {
			t.Error("the remote-tracking reflog directory was not made")
		}
		text := strings.Join(p.Explain(c.TopLevel), "\n")
		if strings.Contains(text, "its branch's directory") || !strings.Contains(text, "read-only refs/ and the common dir's root") {
			t.Errorf("a detached worktree:\n%s", text)
		}
	})
	t.Run("reftable", func(t *testing.T) {
		// gitrepo.Reftable tells a reftable repository by its table
		// stack's directory: the planner's input here.
		r := newRepo(t, "wt/T-1")
		c := r.c
		mkdirs(t, filepath.Join(c.CommonDir, "reftable"))
		tmp := t.TempDir()
		p, err := New(Input{Checkout: c, Branch: "wt/T-1", TempDir: tmp, ABI: 7})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{c.TopLevel, c.GitDir, filepath.Join(c.CommonDir, "objects"), filepath.Join(c.CommonDir, "reftable"), tmp}
		if got := ruleDirs(p); !reflect.DeepEqual(got, want) {
			t.Fatalf("writable:\n got %q\nwant %q", got, want)
		}
		if exists(filepath.Join(c.CommonDir, "refs", "remotes")) {
			t.Error("a reftable repository got loose ref directories")
		}
		text := strings.Join(p.Explain(c.TopLevel), "\n")
		if !strings.Contains(text, "refs     writable: every ref: a reftable repository") {
			t.Errorf("reftable:\n%s", text)
		}
	})
}

// TestNewDefaultsAndAllowed: the default state directories under HOME are
// writable where they exist (XDG_CACHE_HOME replacing ~/.cache), a
// relative HOME gives none, and --allow-write's directories come last.
func TestNewDefaultsAndAllowed(t *testing.T) {
	pretend(t, false, false)
	r := newRepo(t, "wt/T-1")
	c := r.c
	home := filepath.Join(r.top, "home")
	cache := filepath.Join(r.top, "xdg-cache")
	shared := filepath.Join(r.top, "shared")
	mkdirs(t, filepath.Join(home, ".cache"), filepath.Join(home, "go", "pkg", "mod"), cache, shared)
	tmp := t.TempDir()
	base := []string{c.TopLevel, c.GitDir, filepath.Join(c.CommonDir, "objects"),
		filepath.Join(c.CommonDir, "refs", "heads", "wt"), filepath.Join(c.CommonDir, "logs", "refs", "heads", "wt"),
		filepath.Join(c.CommonDir, "refs", "remotes"), filepath.Join(c.CommonDir, "logs", "refs", "remotes"), tmp}
	cases := []struct {
		name        string
		home, cache string
		allow       []string
		want        []string
	}{
		{"home", home, "", nil, []string{filepath.Join(home, ".cache"), filepath.Join(home, "go", "pkg", "mod")}},
		{"XDG_CACHE_HOME", home, cache, []string{shared + "/"}, []string{filepath.Join(home, "go", "pkg", "mod"), cache, shared}},
		{"relative HOME", "home", "", []string{shared}, []string{shared}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(Input{Checkout: c, Branch: "wt/T-1", Home: tc.home, CacheHome: tc.cache, Allow: tc.allow, TempDir: tmp, ABI: 6, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			want := append(append([]string(nil), base...), tc.want...)
			if got := ruleDirs(p); !reflect.DeepEqual(got, want) {
				t.Errorf("writable:\n got %q\nwant %q", got, want)
			}
		})
	}
}
