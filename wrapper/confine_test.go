package wrapper

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/decision/decisiontest"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/wrapper/confine"
)

// pretendKernel makes the supervisor see a kernel with Landlock ABI abi
// and plan with plan (nil: the real planner).
func pretendKernel(t *testing.T, abi int, plan func(confine.Input) (*confine.Plan, error)) {
	a, p := landlockABI, newConfinement
	landlockABI = func() int { return abi }
	if plan != nil {
		newConfinement = plan
	}
	t.Cleanup(func() { landlockABI, newConfinement = a, p })
}

// TestConfinementDecisions: for every Landlock ABI and mode, whether the
// command is confined, refused (with its decision code) or run unconfined
// with a notice; the planner is asked only where the kernel can confine,
// with the run's own inputs. A plan without a private view is refused by
// require and taken, with a notice, by auto.
func TestConfinementDecisions(t *testing.T) {
	c := gitrepo.Checkout{TopLevel: "/r/w1", GitDir: "/r/.git/worktrees/w1", CommonDir: "/r/.git", Key: "w1"}
	pol := store.Policy{PublicationBranch: "main", ConfineAllow: []string{"/shared"}}
	type outcome struct {
		confined bool
		code     string // the refusal's, "" for none
		notice   string // what Notify says, "" for nothing
	}
	for abi := 0; abi <= 7; abi++ {
		for _, mode := range []ConfineMode{ConfineOff, ConfineAuto, ConfineRequire} {
			for _, planErr := range []error{nil, decision.Relay(decision.ConfinementUnavailable, "no view here"), decision.Relay(decision.Usage, "bad --allow-write")} {
				name := fmt.Sprintf("abi=%d/mode=%d/plan=%v", abi, mode, decision.CodeOf(planErr))
				t.Run(name, func(t *testing.T) {
					var asked []confine.Input
					pretendKernel(t, abi, func(in confine.Input) (*confine.Plan, error) {
						asked = append(asked, in)
						if planErr != nil {
							return nil, planErr
						}
						return &confine.Plan{ABI: in.ABI}, nil
					})
					var n notes
					m := mode
					tmp := t.TempDir()
					s := &supervisor{tmpDir: tmp, opts: Options{Confine: &m, Notify: n.notify, Args: []string{"/usr/bin/claude", "-p"}, Agent: "claude",
						AllowWrite: []string{"/extra"}, AllowSockets: []string{"/run/s"},
						Environ: []string{"HOME=/home/a", "XDG_CACHE_HOME=/home/a/.c", "SSH_AUTH_SOCK=/run/ssh"}}}
					conf, err := s.confinement(c, "wt/T-1", pol)
					var want outcome
					switch {
					case mode == ConfineOff:
					case abi < confine.MinABI && mode == ConfineRequire:
						want = outcome{code: decision.ConfinementUnavailable}
					case abi < confine.MinABI:
						want = outcome{notice: "the command runs unconfined (confine auto): CONFINEMENT_UNAVAILABLE"}
					case planErr == nil && mode == ConfineRequire:
						want = outcome{code: decision.ConfinementUnavailable}
					case planErr == nil:
						want = outcome{confined: true, notice: "the command is confined by Landlock's rules alone (confine auto)"}
					case decision.CodeOf(planErr) == decision.ConfinementUnavailable && mode == ConfineAuto:
						want = outcome{notice: "the command runs unconfined (confine auto): CONFINEMENT_UNAVAILABLE: no view here"}
					default:
						want = outcome{code: decision.CodeOf(planErr)}
					}
					got := outcome{confined: conf != nil, code: decision.CodeOf(err)}
					if len(n.said) > 1 {
						t.Errorf("more than one notice: %q", n.said)
					} else if len(n.said) == 1 {
						got.notice = n.said[0]
						if strings.Contains(got.notice, want.notice) && want.notice != "" {
							got.notice = want.notice
						}
					}
					if got != want {
						t.Fatalf("got %+v (%v), want %+v", got, err, want)
					}
					if d, ok := decision.As(err); ok && d.Code == decision.ConfinementUnavailable && planErr == nil && abi >= confine.MinABI {
						if !strings.Contains(d.Message, "private view") || !strings.Contains(d.Hint, "--confine auto") {
							t.Errorf("the refusal of Landlock alone: %+v", d)
						}
					}
					wantAsked := mode != ConfineOff && abi >= confine.MinABI
					if (len(asked) == 1) != wantAsked || len(asked) > 1 {
						t.Fatalf("the planner was asked %d times", len(asked))
					}
					if wantAsked {
						in := asked[0]
						in.OnView = nil
						wantIn := confine.Input{Checkout: c, Branch: "wt/T-1", Publication: "main", Home: "/home/a", CacheHome: "/home/a/.c",
							Allow: []string{"/shared", "/extra"}, TempDir: tmp, ABI: abi, Agent: "claude", Program: "/usr/bin/claude",
							SSHAuthSock: "/run/ssh", AllowSockets: []string{"/run/s"}}
						if !reflect.DeepEqual(in, wantIn) {
							t.Errorf("the planner's input:\n got %+v\nwant %+v", in, wantIn)
						}
					}
				})
			}
		}
	}
}

// TestConfinementRealPlanner: with the real planner, a run in the
// canonical checkout cannot be confined: auto runs it unconfined and says
// so, require refuses; the private TMPDIR is made in TMPDIR when the run
// has none yet, and removed after.
func TestConfinementRealPlanner(t *testing.T) {
	f := newFixture(t)
	main, err := gitrepo.Locate(filepath.Join(f.top, "repo"))
	if err != nil {
		t.Fatal(err)
	}
	pretendKernel(t, 6, nil)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for _, mode := range []ConfineMode{ConfineAuto, ConfineRequire} {
		var n notes
		m := mode
		s := &supervisor{opts: Options{Confine: &m, Notify: n.notify, Args: []string{"sh"}}}
		conf, err := s.confinement(main, "", store.Policy{})
		if conf != nil {
			t.Fatalf("mode %d: confined in the canonical checkout", mode)
		}
		if mode == ConfineRequire {
			decisiontest.Want(t, err, decision.ConfinementUnavailable)
		} else if err != nil || !n.holding("canonical checkout") {
			t.Errorf("auto: %v, notices %q", err, n.said)
		}
		if s.tmpDir == "" || filepath.Dir(s.tmpDir) != tmp {
			t.Errorf("the private TMPDIR %q is not in TMPDIR", s.tmpDir)
		}
		d := s.tmpDir
		s.removeTempDir()
		if _, err := os.Stat(d); !os.IsNotExist(err) || s.tmpDir != "" {
			t.Errorf("the private TMPDIR stays: %v", err)
		}
	}
}

func TestConfineMode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]ConfineMode{store.ConfineAuto: ConfineAuto, store.ConfineRequire: ConfineRequire, store.ConfineOff: ConfineOff, "": ConfineOff, "bogus": ConfineOff} {
		if got := ParseConfineMode(in); got != want {
			t.Errorf("ParseConfineMode(%q) = %d", in, got)
		}
	}
	req := ConfineRequire
	if (Options{}).confineMode(store.Policy{Confine: store.ConfineAuto}) != ConfineAuto || (Options{Confine: &req}).confineMode(store.Policy{Confine: store.ConfineOff}) != ConfineRequire {
		t.Error("confineMode: the flag overrides the policy")
	}
}

// TestExplain: --explain says the mode and the plan, or that the kernel
// cannot confine; the plan is a dry run in the worktree of -C.
func TestExplain(t *testing.T) {
	f := newFixture(t)
	pol := store.Policy{Confine: store.ConfineAuto, PublicationBranch: "main"}
	pretendKernel(t, 2, nil)
	got, err := Explain(Options{Dir: f.c.TopLevel}, "wt/T-1", pol)
	if err != nil || !reflect.DeepEqual(got, []string{"mode auto (policy auto)", "this kernel cannot confine: wt-exec cannot confine the command: this kernel's Landlock ABI 2 is older than 3, the first that stops truncate(2)"}) {
		t.Errorf("ABI 2: %q %v", got, err)
	}
	var asked confine.Input
	pretendKernel(t, 5, func(in confine.Input) (*confine.Plan, error) {
		asked = in
		return &confine.Plan{ABI: in.ABI, Rules: []confine.Rule{{Path: in.Checkout.TopLevel, Why: "the worktree"}}, TempDir: in.TempDir}, nil
	})
	off := ConfineOff
	got, err = Explain(Options{Dir: f.c.TopLevel, Confine: &off}, "wt/T-1", pol)
	if err != nil || got[0] != "mode off (policy auto)" || got[1] != "confinement of "+f.c.TopLevel+" (Landlock ABI 5)" || got[3] != "  write    "+f.c.TopLevel+"  (the worktree)" {
		t.Errorf("ABI 5: %q %v", got, err)
	}
	if !asked.DryRun || asked.OnView != nil || asked.Branch != "wt/T-1" || asked.Checkout.Key != f.c.Key {
		t.Errorf("the planner's input: %+v", asked)
	}
	pretendKernel(t, 5, func(confine.Input) (*confine.Plan, error) { return nil, decision.Relay(decision.Usage, "x") })
	if _, err := Explain(Options{Dir: f.c.TopLevel}, "", pol); decision.CodeOf(err) != decision.Usage {
		t.Errorf("a refused plan: %v", err)
	}
	if _, err := Explain(Options{Dir: t.TempDir()}, "", pol); err == nil {
		t.Error("explained outside a repository")
	}
}
