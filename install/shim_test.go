package install

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/wt-tool/wt/core/shell"
)

// TestShellQuote: every path comes back exactly from the shell.
func TestShellQuote(t *testing.T) {
	for _, p := range []string{"/usr/bin/wt-hook", "/a b/c", "/it's/$HOME/`x`/\\n/\"q\"", "/''/'"} {
		out, err := exec.Command("sh", "-c", "printf %s "+shell.Quote(p)).Output()
		if err != nil || string(out) != p {
			t.Errorf("%q: sh printed %q (%v)", p, out, err)
		}
		if back, ok := shell.Unquote(shell.Quote(p)); !ok || back != p {
			t.Errorf("unquote(%q) = %q %v", shell.Quote(p), back, ok)
		}
	}
	for _, bad := range []string{"", "'", "abc", "'a'b'", "'a'\\''"} {
		if _, ok := shell.Unquote(bad); ok {
			t.Errorf("shell.Unquote(%q) accepted", bad)
		}
	}
}

// TestRecognize: a rendered shim is recognised with its binary; an edited
// one, or another hook's, is not.
func TestRecognize(t *testing.T) {
	for _, h := range Hooks {
		s, err := Render(h, "/opt/it's here/wt-hook")
		if err != nil {
			t.Fatal(err)
		}
		if v, bin, ok := Recognize(h, []byte(s)); !ok || v != CurrentVersion(h) || bin != "/opt/it's here/wt-hook" {
			t.Errorf("%s: %v %q %v", h, v, bin, ok)
		}
		if _, _, ok := Recognize(h, []byte(s+"# edited\n")); ok {
			t.Errorf("%s: an edited shim was recognised", h)
		}
		other := "pre-commit"
		if h == other {
			other = "pre-push"
		}
		if _, _, ok := Recognize(other, []byte(s)); ok {
			t.Errorf("%s shim recognised as %s", h, other)
		}
	}
}

// TestRecognizeOld: a shim written before the first release (no seal) is
// still recognised by its text, with its version and binary, so install
// updates it and uninstall removes it; edited, or as another hook, it is
// not. The samples are shims as those versions wrote them.
func TestRecognizeOld(t *testing.T) {
	samples, err := filepath.Glob("testdata/pre-release/v*/*")
	if err != nil || len(samples) < 5 {
		t.Fatalf("samples: %v %v", samples, err)
	}
	for _, f := range samples {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h := filepath.Base(f)
		v, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(filepath.Dir(f)), "v"))
		if h == "forward" {
			if !IsForwarder(b) || IsForwarder(append(b, "# edited\n"...)) {
				t.Errorf("%s: forwarder recognised %v, edited %v", f, IsForwarder(b), IsForwarder(append(b, "# edited\n"...)))
			}
			continue
		}
		s := strings.Replace(string(b), binMark, shell.Quote("/usr/bin/it's wt-hook"), 1)
		if got, bin, ok := Recognize(h, []byte(s)); !ok || got != v || bin != "/usr/bin/it's wt-hook" {
			t.Errorf("%s: %v %q %v", f, got, bin, ok)
		}
		if _, _, ok := Recognize(h, []byte(strings.Replace(s, "\n", "\n\n", 3))); ok {
			t.Errorf("%s: an edited pre-release shim was recognised", f)
		}
		if _, _, ok := Recognize("pre-applypatch", []byte(s)); ok {
			t.Errorf("%s: recognised as another hook's", f)
		}
	}
	if len(preRelease) != 33 {
		t.Errorf("preRelease knows %d shims; versions 1 to 9 wrote 33", len(preRelease))
	}
}

// TestSeal: any version's sealed shim is recognised by its marker lines,
// a newer one's too; a change anywhere above the seal, a seal for other
// text, or a marker naming another hook is not wt's unedited shim.
func TestSeal(t *testing.T) {
	s, err := Render("pre-push", "/usr/bin/wt-hook")
	if err != nil {
		t.Fatal(err)
	}
	body, last, _ := strings.Cut(s, sumMark)
	if last == "" || strings.Count(s, "\n"+sumMark) != 1 || !strings.HasSuffix(s, "\n") {
		t.Fatalf("no seal as the last line:\n%s", s)
	}
	newer := seal(strings.Replace(body, fmt.Sprintf("shim v%d (", Version), "shim v11 (", 1))
	if v, bin, ok := Recognize("pre-push", []byte(newer)); !ok || v != 11 || bin != "/usr/bin/wt-hook" {
		t.Errorf("a newer sealed shim: %v %q %v", v, bin, ok)
	}
	for name, bad := range map[string]string{
		"edited above the seal":      strings.Replace(s, "exit 1", "exit 0", 1),
		"resealed for another hook":  seal(strings.Replace(body, "(pre-push)", "(pre-commit)", 1)),
		"seal of other text":         body + sumMark + hexSum([]byte("x")) + "\n",
		"no newline after the seal":  strings.TrimSuffix(s, "\n"),
		"no marker line":             seal(strings.Replace(body, "# wt-hook shim v", "# shim v", 1)),
		"no binary line":             seal(strings.Replace(body, "wt_bin='", "bin='", 1)),
		"a foreign hook, no newline": "#!/bin/sh\nexec husky",
		"empty":                      "",
	} {
		if _, _, ok := Recognize("pre-push", []byte(bad)); ok {
			t.Errorf("%s: recognised", name)
		}
	}
	fwd, err := template("forward")
	if err != nil {
		t.Fatal(err)
	}
	if !IsForwarder([]byte(seal(fwd))) || IsForwarder([]byte(fwd)) {
		t.Errorf("forwarder: sealed %v, unsealed %v", IsForwarder([]byte(seal(fwd))), IsForwarder([]byte(fwd)))
	}
	if IsForwarder([]byte(s)) {
		t.Error("a shim taken for a forwarder")
	}
}

// TestShimRunsGate: the client hooks' shims run wt-gate when it is an
// executable file beside the recorded wt-hook, with the arguments they
// would pass wt-hook; without it (missing, or not executable) they run
// wt-hook run, as before.
func TestShimRunsGate(t *testing.T) {
	dir := t.TempDir()
	bin, hooks := filepath.Join(dir, "bin"), filepath.Join(dir, "hooks")
	for _, d := range []string{bin, hooks} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(dir, "log")
	for _, name := range []string{"wt-hook", "wt-gate"} {
		script := "#!/bin/sh\necho " + name + " \"$@\" >>" + shell.Quote(log) + "\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	calls := map[string][]string{"pre-commit": nil, "pre-push": {"origin", "/r"},
		"reference-transaction": {"prepared"}, "post-checkout": {"a", "b", "1"}}
	run := func(hook string) string {
		t.Helper()
		os.Remove(log)
		s, err := Render(hook, filepath.Join(bin, "wt-hook"))
		if err != nil {
			t.Fatal(err)
		}
		shim := filepath.Join(hooks, hook)
		if err := os.WriteFile(shim, []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(shim, calls[hook]...)
		cmd.Env = append(os.Environ(), "GIT_DIR="+dir) // no pass there
		// A branch to judge (a transaction that moves no HEAD and no
		// branch starts no judgement).
		cmd.Stdin = strings.NewReader("1111111111111111111111111111111111111111 2222222222222222222222222222222222222222 refs/heads/x\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", hook, err, out)
		}
		b, _ := os.ReadFile(log)
		return strings.TrimSpace(string(b))
	}
	for hook, args := range calls {
		want := strings.TrimSpace(strings.Join(append([]string{"run", hook}, args...), " "))
		if got := run(hook); got != "wt-gate "+want {
			t.Errorf("%s with wt-gate beside wt-hook: ran %q, want wt-gate %s", hook, got, want)
		}
	}
	if err := os.Chmod(filepath.Join(bin, "wt-gate"), 0o644); err != nil {
		t.Fatal(err)
	}
	for hook, args := range calls {
		want := strings.TrimSpace(strings.Join(append([]string{"run", hook}, args...), " "))
		if got := run(hook); got != "wt-hook "+want {
			t.Errorf("%s with no executable wt-gate: ran %q, want wt-hook %s", hook, got, want)
		}
	}
}

// TestInstallUninstall: install keeps a foreign hook beside the shim, is
// idempotent, and uninstall restores the directory exactly.
func TestInstallUninstall(t *testing.T) {
	dir := t.TempDir()
	foreign := "#!/bin/sh\necho mine\n"
	os.WriteFile(filepath.Join(dir, "pre-push"), []byte(foreign), 0o700)
	os.WriteFile(filepath.Join(dir, "post-merge"), []byte("#!/bin/sh\n"), 0o755)
	if _, err := Install(dir, "/bin/wt-hook"); err != nil {
		t.Fatal(err)
	}
	res, err := Install(dir, "/bin/wt-hook")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range res.Hooks {
		if h.Changed != "unchanged" || h.State != "wt" {
			t.Errorf("second install: %+v", h)
		}
	}
	if res, err := Install(dir, "relative/wt-hook"); err == nil {
		t.Errorf("relative binary accepted: %+v", res)
	}
	if _, err := Uninstall(dir); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "post-merge,pre-push" {
		t.Fatalf("after uninstall: %v", names)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "pre-push"))
	fi, _ := os.Stat(filepath.Join(dir, "pre-push"))
	if string(b) != foreign || fi.Mode().Perm() != 0o700 {
		t.Fatalf("foreign hook changed: %q %v", b, fi.Mode())
	}
}

// TestInstallUninstallRace: installs racing uninstalls never lose the
// user's hook and never keep a wt shim as the chained hook (which would run
// itself); the directory ends in one of the two whole states.
func TestInstallUninstallRace(t *testing.T) {
	foreign := "#!/bin/sh\necho mine\n"
	for trial := 0; trial < 20; trial++ {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "pre-commit"), []byte(foreign), 0o755)
		var wg sync.WaitGroup
		for i := 0; i < 10; i++ {
			wg.Add(2)
			go func() { defer wg.Done(); Install(dir, "/bin/wt-hook") }()
			go func() { defer wg.Done(); Uninstall(dir) }()
		}
		wg.Wait()
		main, _ := os.ReadFile(filepath.Join(dir, "pre-commit"))
		chained, chainErr := os.ReadFile(filepath.Join(dir, "pre-commit"+ChainSuffix))
		_, _, mainIsShim := Recognize("pre-commit", main)
		switch {
		case mainIsShim && chainErr == nil && string(chained) == foreign:
		case string(main) == foreign && os.IsNotExist(chainErr):
		default:
			t.Fatalf("trial %d: pre-commit %q, chained %q (%v)", trial, main, chained, chainErr)
		}
	}
}

// TestInstallRemovesChainedShim: a wt shim left as HOOK.wt-chained (by a
// race of older versions) is removed by install and reported by Check.
func TestInstallRemovesChainedShim(t *testing.T) {
	dir := t.TempDir()
	shim, _ := Render("pre-commit", "/bin/wt-hook")
	os.WriteFile(filepath.Join(dir, "pre-commit"), []byte(shim), 0o755)
	os.WriteFile(filepath.Join(dir, "pre-commit"+ChainSuffix), []byte(shim), 0o755)
	if ps, _ := Check(dir); len(ps) == 0 || !strings.Contains(ps[0].Message, "would run itself") {
		t.Fatalf("Check: %+v", ps)
	}
	res, err := Install(dir, "/bin/wt-hook")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pre-commit"+ChainSuffix)); !os.IsNotExist(err) {
		t.Fatal("the chained shim is still there")
	}
	if !strings.Contains(res.Hooks[0].Changed, "removed a wt shim kept as pre-commit.wt-chained") {
		t.Errorf("install did not say so: %+v", res.Hooks[0])
	}
}

// TestCheckOutdated: a shim of an older version is reported, as outdated
// (it still gates, through wt-hook run); a current one is not reported.
func TestCheckOutdated(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "wt-hook")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(dir, bin); err != nil {
		t.Fatal(err)
	}
	if ps, err := Check(dir); err != nil || len(ps) != 0 {
		t.Fatalf("current shims: %+v %v", ps, err)
	}
	tpl, err := os.ReadFile("testdata/pre-release/v7/pre-commit")
	if err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(string(tpl), binMark, shell.Quote(bin), 1)
	if err := os.WriteFile(filepath.Join(dir, "pre-commit"), []byte(old), 0o755); err != nil {
		t.Fatal(err)
	}
	ps, err := Check(dir)
	if err != nil || len(ps) != 1 || ps[0].Hook != "pre-commit" || !ps[0].Outdated || !strings.Contains(ps[0].Message, "shim v7; this wt-hook writes v11") {
		t.Fatalf("a v7 pre-commit: %+v %v", ps, err)
	}
}
