package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// TestConfineWithoutLandlock pretends a kernel without Landlock (and one
// with an ABI too old) through the wt_testseams build of wt-exec, which the
// shipped binary is not: require refuses with CONFINEMENT_UNAVAILABLE
// (exit 125, nothing runs), auto says so once and runs the command
// unconfined, off says nothing.
func TestConfineWithoutLandlock(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	t.Parallel()
	top, repo, w1, bin, adminBin := seamRepo(t)
	run := func(abi string, args ...string) (string, int) {
		return runSeam(t, bin, w1, "WT_TEST_LANDLOCK_ABI="+abi, args...)
	}
	marker := filepath.Join(top, "ran")
	out, code := run("0", "--confine", "--", "touch", marker)
	if code != 125 || !strings.Contains(out, "refused: CONFINEMENT_UNAVAILABLE: wt-exec cannot confine the command: this kernel has no Landlock") ||
		!strings.Contains(out, "hint: run it unconfined with wt-exec -C "+w1+" --no-confine") {
		t.Fatalf("require without Landlock: %d %s", code, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran although confinement was required and unavailable")
	}
	out, code = run("2", "--confine", "--", "true")
	if code != 125 || !strings.Contains(out, "Landlock ABI 2 is older than 3") {
		t.Fatalf("require with ABI 2: %d %s", code, out)
	}
	if out, code := admin(t, adminBin, repo, "", "policy", "--confine", "auto"); code != 0 {
		t.Fatalf("policy: %d %s", code, out)
	}
	out, code = run("0", "--", "touch", marker)
	if code != 0 || strings.Count(out, "warning: the command runs unconfined (confine auto): CONFINEMENT_UNAVAILABLE") != 1 {
		t.Fatalf("auto without Landlock: %d %s", code, out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("auto did not run the command")
	}
	out, code = run("0", "--no-confine", "--", "true")
	if code != 0 || out != "" {
		t.Fatalf("--no-confine without Landlock: %d %q", code, out)
	}
	// With the real kernel (the seam unset here means the kernel's ABI),
	// auto confines: a write outside the worktree fails.
	outside := filepath.Join(top, "outside")
	out, code = run(strings.TrimSpace(abiOf(t, bin, w1)), "--", "touch", outside)
	if code == 0 || !strings.Contains(out, "Permission denied") {
		t.Fatalf("auto on a Landlock kernel did not confine: %d %s", code, out)
	}
}

// abiOf is the kernel's Landlock ABI as wt-exec --explain reports it.
func abiOf(t *testing.T, bin, dir string) string {
	t.Helper()
	out, err := exec.Command(bin, "-C", dir, "--confine", "--explain").CombinedOutput()
	if err != nil {
		t.Fatalf("explain: %v %s", err, out)
	}
	_, rest, ok := strings.Cut(string(out), "(Landlock ABI ")
	if !ok {
		t.Skipf("this kernel cannot confine: %s", out)
	}
	abi, _, _ := strings.Cut(rest, ")")
	return abi
}

// TestConfineWithoutView pretends a machine where wt-exec can make no
// private view (not root, no user namespaces; the wt_testseams build's
// WT_TEST_NO_VIEW): require refuses, naming what is missing, and runs
// nothing; auto says it falls back to Landlock's rules alone, and runs
// the command confined by them.
func TestConfineWithoutView(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	if v, err := llsys.LandlockGetABIVersion(); err != nil || v < 3 {
		t.Skip("this kernel cannot confine")
	}
	t.Parallel()
	top, repo, w1, bin, adminBin := seamRepo(t)
	run := func(args ...string) (string, int) { return runSeam(t, bin, w1, "WT_TEST_NO_VIEW=1", args...) }
	marker := filepath.Join(w1, "ran")
	out, code := run("--confine", "--", "touch", marker)
	if code != 125 || !strings.Contains(out, "CONFINEMENT_UNAVAILABLE: wt-exec cannot give the command its private view of the repository: wt-exec is not root, and this kernel lets no ordinary user make a user namespace") ||
		!strings.Contains(out, "hint: run it as root, or allow user namespaces") {
		t.Fatalf("require without a view: %d %s", code, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran although its view was required and unavailable")
	}
	if out, code := admin(t, adminBin, repo, "", "policy", "--confine", "auto"); code != 0 {
		t.Fatalf("policy: %d %s", code, out)
	}
	out, code = run("--", "sh", "-c", "touch "+marker+" && touch "+filepath.Join(top, "outside"))
	if code == 0 || !strings.Contains(out, "the command is confined by Landlock's rules alone (confine auto)") || !strings.Contains(out, "Permission denied") {
		t.Fatalf("auto without a view: %d %s", code, out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("auto did not run the command")
	}
	out, code = run("--explain")
	if code != 0 || !strings.Contains(out, "refs     guarded by landlock only") {
		t.Fatalf("--explain without a view: %d %s", code, out)
	}
}

// seamRepo builds the wt_testseams wt-exec and wt-admin and a governed
// repository with one worktree, w1, for task T-1.
func seamRepo(t *testing.T) (top, repo, w1, bin, adminBin string) {
	t.Helper()
	bin = buildTagged(t, "wt-exec", "wt_testseams")
	adminBin = buildTagged(t, "wt-admin", "wt_testseams")
	top = t.TempDir()
	repo = filepath.Join(top, "repo")
	git(t, top, "init", "-q", "-b", "main", repo)
	git(t, repo, "commit", "-q", "--allow-empty", "-m", "init")
	w1 = filepath.Join(top, "w1")
	for _, args := range [][]string{{"init", "--no-hooks"}, {"allocate", "--task", "T-1", "--owner", "alice", w1}} {
		if out, code := admin(t, adminBin, repo, "", args...); code != 0 {
			t.Fatalf("%v: %d %s", args, code, out)
		}
	}
	installGate(t, repo)
	return top, repo, w1, bin, adminBin
}

// runSeam runs the seam build of wt-exec in w1 with one seam variable set,
// and returns its combined output and exit code.
func runSeam(t *testing.T, bin, w1, seam string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-C", w1}, args...)...)
	cmd.Env = append(os.Environ(), seam)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}
