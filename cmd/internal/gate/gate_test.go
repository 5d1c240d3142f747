package gate

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/cmd/internal/textout"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/policy"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/hooks"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wtfixture"
	"github.com/wt-tool/wt/internal/wttest"
)

// TestMain keeps every git away from the configuration of the user and of
// the machine (gittest.Setenv), before any test runs.
func TestMain(m *testing.M) {
	gittest.Setenv()
	os.Exit(m.Run())
}

const zeroOID = "0000000000000000000000000000000000000000"

// run is wt-gate run with args, in the current directory, with stdin:
// its exit code and what it printed.
func run(t *testing.T, stdin string, args ...string) (int, string) {
	t.Helper()
	var stderr bytes.Buffer
	code := Main(append([]string{"run"}, args...), strings.NewReader(stdin), &stderr)
	return code, stderr.String()
}

// refusals makes the run's refusals file (as wt-exec does) and points
// the gate at it; noted reads what the gate wrote there.
func refusals(t *testing.T) (noted func() string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), store.RefusalsName)
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(store.RefusalsEnv, p)
	return func() string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
}

// wantLines fails unless out is exactly the lines given, each matched as
// a prefix.
func wantLines(t *testing.T, what, out string, prefixes ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if out == "" {
		lines = nil
	}
	if len(lines) != len(prefixes) {
		t.Errorf("%s: printed %q, want %d lines starting %q", what, out, len(prefixes), prefixes)
		return
	}
	for i, p := range prefixes {
		if !strings.HasPrefix(lines[i], p) {
			t.Errorf("%s: line %d is %q, want it to start %q", what, i+1, lines[i], p)
		}
	}
}

// TestMainRefusesACallNoShimMakes: wt-gate answers only "run HOOK", for a
// hook git has and with the arguments git passes it; each other call is
// USAGE (exit 2) and no refusal of a run.
func TestMainRefusesACallNoShimMakes(t *testing.T) {
	noted := refusals(t)
	t.Chdir(t.TempDir())
	for _, c := range []struct {
		args  []string
		lines []string
	}{
		{nil, []string{"wt-gate: USAGE: wt-gate answers for wt's installed hooks", "wt-gate: hint: run the hook as git does"}},
		{[]string{"run"}, []string{"wt-gate: USAGE: ", "wt-gate: hint: "}},
		{[]string{"check", "pre-commit"}, []string{"wt-gate: USAGE: ", "wt-gate: hint: "}},
		{[]string{"run", "pre-rebase"}, []string{`wt-hook: USAGE: run: unknown hook "pre-rebase"`, "wt-hook: hint: wt-hook"}},
		{[]string{"run", "pre-commit", "extra"}, []string{"wt-hook: USAGE: run pre-commit takes no arguments", "wt-hook: hint: see wt-hook run pre-commit --help"}},
		{[]string{"run", "pre-push", "origin"}, []string{"wt-hook: USAGE: run pre-push takes REMOTE and URL", "wt-hook: hint: "}},
		{[]string{"run", "reference-transaction"}, []string{"wt-hook: USAGE: run reference-transaction takes the transaction's STATE", "wt-hook: hint: "}},
		{[]string{"run", "post-checkout", "a", "b"}, []string{"wt-hook: USAGE: run post-checkout takes PREV, NEW and FLAG", "wt-hook: hint: "}},
	} {
		var stderr bytes.Buffer
		code := Main(c.args, strings.NewReader(""), &stderr)
		if code != textout.ExitUsage {
			t.Errorf("%q: exit %d, want %d", c.args, code, textout.ExitUsage)
		}
		wantLines(t, strings.Join(c.args, " "), stderr.String(), c.lines...)
	}
	if got := noted(); got != "" {
		t.Errorf("usage errors were noted as refusals: %q", got)
	}
}

// TestPreCommitVerdicts: in a task's worktree a commit without the lease
// is refused (exit 1, noted for the run) with its verdict; the holder's is
// allowed in silence; under enforcement "warn" the refusal is a warning;
// the canonical checkout is not wt's to judge.
func TestPreCommitVerdicts(t *testing.T) {
	noted := refusals(t)
	f := wtfixture.New(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	t.Chdir(a.WorktreePath)

	v, warnings, err := Judge("pre-commit", nil, strings.NewReader(""))
	wttest.WantCode(t, err, decision.WriterLeaseRequired)
	if v == nil || v.Allowed || v.Code != decision.WriterLeaseRequired || warnings != nil {
		t.Errorf("the verdict of a refused commit: %+v, warnings %q", v, warnings)
	}
	code, out := run(t, "", "pre-commit")
	if code != textout.ExitRefused {
		t.Errorf("refused commit: exit %d", code)
	}
	wantLines(t, "refused commit", out, "wt-hook: refused: "+decision.WriterLeaseRequired+": ", "wt-hook: hint: ")
	if got := noted(); got != decision.WriterLeaseRequired+"\n"+decision.WriterLeaseRequired+"\n" {
		t.Errorf("the run's refusals: %q, want the code once a refusal", got)
	}

	f.Lease(a, wttest.Self(t), nil)
	v, warnings, err = Judge("pre-commit", nil, strings.NewReader(""))
	if err != nil || v == nil || !v.Allowed || v.Code != decision.Entitled || warnings != nil {
		t.Errorf("the holder's commit: %+v, %q, %v", v, warnings, err)
	}
	if code, out := run(t, "", "pre-commit"); code != textout.ExitOK || out != "" {
		t.Errorf("the holder's commit: exit %d, printed %q", code, out)
	}

	f.SetPolicy(policy.Change{Enforcement: ptr(store.EnforcementWarn)})
	b := f.Allocate("T-2", "", "t2")
	t.Chdir(b.WorktreePath)
	v, warnings, err = Judge("pre-commit", nil, strings.NewReader(""))
	if err != nil || v == nil || !v.Allowed || v.Code != decision.WriterLeaseRequired || len(warnings) != 1 {
		t.Fatalf("a warned commit: %+v, %q, %v", v, warnings, err)
	}
	code, out = run(t, "", "pre-commit")
	if code != textout.ExitOK {
		t.Errorf("a warned commit: exit %d", code)
	}
	wantLines(t, "a warned commit", out,
		"wt-hook: warning: policy enforcement is warn, so this is allowed; it would be refused: "+decision.WriterLeaseRequired+": ")

	t.Chdir(f.Dir)
	v, _, err = Judge("pre-commit", nil, strings.NewReader(""))
	if err != nil || v == nil || !v.Allowed || v.Code != decision.Unmanaged {
		t.Errorf("the canonical checkout: %+v, %v", v, err)
	}
	if got := noted(); strings.Count(got, "\n") != 2 {
		t.Errorf("allowed commits were noted: %q", got)
	}
}

// TestPreCommitOutsideARepository: the failure is the hooks' own, printed
// as a refusal.
func TestPreCommitOutsideARepository(t *testing.T) {
	t.Setenv(store.RefusalsEnv, "")
	t.Chdir(gittest.Outside(t))
	code, out := run(t, "", "pre-commit")
	if code != textout.ExitRefused {
		t.Errorf("exit %d", code)
	}
	if !strings.HasPrefix(out, "wt-hook: refused: "+decision.NotAGitRepository+": ") {
		t.Errorf("printed %q", out)
	}
}

// TestReferenceTransactionVerdicts: only "prepared" is judged; a move of
// a task branch without its lease refuses the transaction; the holder's
// passes; under "warn" it is a warning; input git would not write is
// INVALID_HOOK_INPUT.
func TestReferenceTransactionVerdicts(t *testing.T) {
	t.Setenv(store.RefusalsEnv, "")
	f := wtfixture.New(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	next := gittest.Git(t, f.Dir, "commit-tree", "-p", f.Base, "-m", "next", f.Base+"^{tree}")
	move := f.Base + " " + next + " refs/heads/wt/T-1\n"
	t.Chdir(f.Dir)

	for _, state := range []string{"preparing", "committed", "aborted"} {
		if code, out := run(t, move, "reference-transaction", state); code != textout.ExitOK || out != "" {
			t.Errorf("%s: exit %d, printed %q", state, code, out)
		}
	}
	code, out := run(t, move, "reference-transaction", "prepared")
	if code != textout.ExitRefused {
		t.Errorf("no lease: exit %d", code)
	}
	wantLines(t, "no lease", out, "wt-hook: refused: "+decision.WriterLeaseRequired+": this transaction moves refs/heads/wt/T-1", "wt-hook: hint: ")
	code, out = run(t, "garbage\n", "reference-transaction", "prepared")
	if code != textout.ExitRefused || !strings.HasPrefix(out, "wt-hook: refused: "+decision.InvalidHookInput+": ") {
		t.Errorf("garbage: exit %d, printed %q", code, out)
	}

	f.SetPolicy(policy.Change{Enforcement: ptr(store.EnforcementWarn)})
	v, warnings, err := Judge("reference-transaction", []string{"prepared"}, strings.NewReader(move))
	if err != nil || v != nil || len(warnings) != 1 || !strings.Contains(warnings[0], decision.WriterLeaseRequired) {
		t.Errorf("under warn: %+v, %q, %v", v, warnings, err)
	}
	f.SetPolicy(policy.Change{Enforcement: ptr(store.EnforcementEnforce)})

	f.Lease(a, wttest.Self(t), nil)
	if code, out := run(t, move, "reference-transaction", "prepared"); code != textout.ExitOK || out != "" {
		t.Errorf("the holder: exit %d, printed %q", code, out)
	}
}

// TestPrePushVerdicts: from a task's worktree its branch is pushed only by
// the writer; a confined command's push to a local remote is refused
// before git's lines are read; a push to a remote elsewhere is not.
func TestPrePushVerdicts(t *testing.T) {
	t.Setenv(store.RefusalsEnv, "")
	t.Setenv("WT_CONFINED", "")
	f := wtfixture.New(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	own := "refs/heads/wt/T-1"
	line := own + " " + f.Base + " " + own + " " + zeroOID + "\n"
	t.Chdir(a.WorktreePath)

	code, out := run(t, line, "pre-push", "origin", "git@example.invalid:r.git")
	if code != textout.ExitRefused {
		t.Errorf("no lease: exit %d", code)
	}
	wantLines(t, "no lease", out, "wt-hook: refused: "+decision.WriterLeaseRequired+": ", "wt-hook: hint: ")

	f.Lease(a, wttest.Self(t), nil)
	if code, out := run(t, line, "pre-push", "origin", "git@example.invalid:r.git"); code != textout.ExitOK || out != "" {
		t.Errorf("the writer: exit %d, printed %q", code, out)
	}
	if code, out := run(t, line, "pre-push", "origin", "../elsewhere.git"); code != textout.ExitOK || out != "" {
		t.Errorf("unconfined, to a local remote: exit %d, printed %q", code, out)
	}

	// Confined: a local path is refused whatever the lines say (garbage
	// would be INVALID_HOOK_INPUT had they been read); a remote elsewhere
	// is judged as before.
	t.Setenv("WT_CONFINED", "1")
	for _, url := range []string{"/srv/r.git", "file:///srv/r.git", "../r.git"} {
		code, out := run(t, "garbage\n", "pre-push", "local", url)
		if code != textout.ExitRefused {
			t.Errorf("%s: exit %d", url, code)
		}
		wantLines(t, url, out, "wt-hook: refused: "+decision.PushLocalRemoteConfined+": a confined command cannot push to local ("+url+")",
			"wt-hook: hint: once the run has ended")
	}
	if code, out := run(t, line, "pre-push", "origin", "https://example.invalid/r.git"); code != textout.ExitOK || out != "" {
		t.Errorf("confined, to a remote elsewhere: exit %d, printed %q", code, out)
	}
	if code, out := run(t, "garbage\n", "pre-push", "origin", "https://example.invalid/r.git"); code != textout.ExitRefused ||
		!strings.HasPrefix(out, "wt-hook: refused: "+decision.InvalidHookInput) {
		t.Errorf("garbage to a remote elsewhere: exit %d, printed %q", code, out)
	}
}

// TestPostCheckoutVerdicts: a feature worktree on its task branch says
// nothing; switched off it, the report is a refusal (exit 1), or a
// warning line under "warn".
func TestPostCheckoutVerdicts(t *testing.T) {
	t.Setenv(store.RefusalsEnv, "")
	f := wtfixture.New(t, policy.Change{})
	a := f.Allocate("T-1", "", "t1")
	t.Chdir(a.WorktreePath)
	args := []string{"post-checkout", f.Base, f.Base, "1"}
	if code, out := run(t, "", args...); code != textout.ExitOK || out != "" {
		t.Errorf("on its branch: exit %d, printed %q", code, out)
	}
	gittest.Git(t, a.WorktreePath, "switch", "-q", "-c", "side")
	code, out := run(t, "", args...)
	if code != textout.ExitRefused {
		t.Errorf("off its branch: exit %d", code)
	}
	wantLines(t, "off its branch", out, "wt-hook: refused: "+decision.HeadOffTaskBranch+": ", "wt-hook: hint: ")

	f.SetPolicy(policy.Change{Enforcement: ptr(store.EnforcementWarn)})
	_, warnings, err := Judge("post-checkout", args[1:], strings.NewReader(""))
	if err != nil || len(warnings) != 1 || !strings.HasPrefix(warnings[0], decision.HeadOffTaskBranch+": ") || !strings.Contains(warnings[0], " (hint: ") {
		t.Errorf("under warn: %q, %v", warnings, err)
	}
	code, out = run(t, "", args...)
	if code != textout.ExitOK {
		t.Errorf("under warn: exit %d", code)
	}
	wantLines(t, "under warn", out, "wt-hook: warning: "+decision.HeadOffTaskBranch+": ")
}

// TestWarningsOnlyOfAWarnedRefusal: an allowed verdict with no refusal,
// or a refusal that is not a warning, has no warning line.
func TestWarningsOnlyOfAWarnedRefusal(t *testing.T) {
	t.Parallel()
	r := decision.Relay(decision.WriterLeaseRequired, "no lease").WithHint("take it")
	for _, c := range []struct {
		v    hooks.Verdict
		want []string
	}{
		{hooks.Verdict{Allowed: true}, nil},
		{hooks.Verdict{Allowed: true, Warning: true}, nil},
		{hooks.Verdict{Allowed: false, Refusal: r}, nil},
		{hooks.Verdict{Allowed: true, Warning: true, Refusal: r},
			[]string{"policy enforcement is warn, so this is allowed; it would be refused: " + decision.WriterLeaseRequired + ": no lease (hint: take it)"}},
	} {
		got := Warnings(c.v)
		if strings.Join(got, "|") != strings.Join(c.want, "|") || (got == nil) != (c.want == nil) {
			t.Errorf("Warnings(%+v) = %q, want %q", c.v, got, c.want)
		}
	}
	var b bytes.Buffer
	PrintWarnings(&b, "wt-hook", []string{"one", "two"})
	PrintWarnings(&b, "wt-hook", nil)
	if b.String() != "wt-hook: warning: one\nwt-hook: warning: two\n" {
		t.Errorf("PrintWarnings wrote %q", b.String())
	}
}

// TestNoteRefusalNeverBlocksNorGrowsWithoutBound: a FIFO of the file's
// name is not opened for a blocking write, a directory and a file past
// 64 KiB are not written, and an error that is no decision is not noted.
func TestNoteRefusalNeverBlocksNorGrowsWithoutBound(t *testing.T) {
	refused := decision.Relay(decision.WriterLeaseHeld, "held")

	fifo := filepath.Join(t.TempDir(), store.RefusalsName)
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(store.RefusalsEnv, fifo)
	noteRefusal(refused) // with no reader, a blocking open would hang here
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO after the note: %v, %v", fi, err)
	}
	// With a reader, the open succeeds: still not a regular file, so
	// nothing is written to it.
	r, err := os.OpenFile(fifo, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	noteRefusal(refused)
	buf := make([]byte, 64)
	if n, err := unix.Read(int(r.Fd()), buf); n > 0 {
		t.Errorf("the FIFO was written: %q", buf[:n])
	} else if err != nil && !errors.Is(err, unix.EAGAIN) {
		t.Errorf("reading the FIFO: %v", err)
	}
	r.Close()

	dir := filepath.Join(t.TempDir(), store.RefusalsName)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv(store.RefusalsEnv, dir)
	noteRefusal(refused)
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the directory got %v", ents)
	}

	big := filepath.Join(t.TempDir(), store.RefusalsName)
	full := bytes.Repeat([]byte("X\n"), 64<<10/2+1)
	if err := os.WriteFile(big, full, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(store.RefusalsEnv, big)
	noteRefusal(refused)
	if b, _ := os.ReadFile(big); !bytes.Equal(b, full) {
		t.Errorf("a file past 64 KiB grew to %d bytes", len(b))
	}

	plain := filepath.Join(t.TempDir(), store.RefusalsName)
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(store.RefusalsEnv, plain)
	noteRefusal(errors.New("not a decision"))
	noteRefusal(nil)
	if b, _ := os.ReadFile(plain); len(b) != 0 {
		t.Errorf("an error of no decision was noted: %q", b)
	}
}

func ptr[T any](v T) *T { return &v }
