package execcli

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
)

// TestHelpAndVersionRunNothing: --help and --version print on stdout and
// exit 0.
func TestHelpAndVersionRunNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "NAME:\n   wt-exec - " + Summary},
		{[]string{"-h", "--", "false"}, "GLOBAL OPTIONS:"},
		{[]string{"--version"}, "wt-exec version "},
	} {
		code, stdout, stderr := execute(t, c.args...)
		if code != 0 || !strings.Contains(stdout, c.want) || stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 0 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
}

// TestCommandLineRefusals: a command line wt-exec cannot run is a USAGE
// (or INVALID_HOLDER) refusal with exit 125, said on stderr with its hint,
// before any repository is looked at (-C names none here).
func TestCommandLineRefusals(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "no-repository")
	for _, c := range []struct {
		args []string
		code string
		said string
	}{
		{nil, decision.Usage, "no command given"},
		{[]string{"--no-such", "ls"}, decision.Usage, "there is no flag --no-such"},
		{[]string{"--confine", "require"}, decision.Usage, "--confine takes no value"},
		{[]string{"--ttl", "0s", "ls"}, decision.InvalidHolder, "--ttl 0s: a lease ttl must be positive"},
		{[]string{"--timeout", "1m", "ls"}, decision.Usage, "--timeout takes a positive duration and goes with --wait"},
		{[]string{"--wait", "--timeout", "0s", "ls"}, decision.Usage, "--timeout takes a positive duration"},
		{[]string{"--grace", "-1s", "ls"}, decision.Usage, "--grace -1s must be positive"},
		{[]string{"--pty", "--no-pty", "ls"}, decision.Usage, "--pty and --no-pty exclude each other"},
		{[]string{"--confine", "--no-confine", "ls"}, decision.Usage, "--confine and --no-confine exclude each other"},
		{[]string{"--sandbox", "--agent", "claude", "ls"}, decision.Usage, "--sandbox and --agent exclude each other"},
		{[]string{"--sandbox", "--allow-write", "/tmp", "ls"}, decision.Usage, "--sandbox and --allow-write exclude each other"},
		{[]string{"--keep-fd", "2", "ls"}, decision.Usage, `--keep-fd "2": give a descriptor number above 2`},
		{[]string{"--keep-fd", "three", "ls"}, decision.Usage, `--keep-fd "three"`},
		{[]string{"--expect-generation", "-1", "ls"}, decision.Usage, `--expect-generation "-1"`},
		{[]string{"--expect-generation", "x", "ls"}, decision.Usage, `--expect-generation "x"`},
		{[]string{"--expect-head", "HEAD", "ls"}, decision.Usage, `--expect-head "HEAD": give the full commit id`},
		{[]string{"--base", "main", "ls"}, decision.Usage, "--base, --path and --new-task go with --task"},
		{[]string{"--new-task", "ls"}, decision.Usage, "--base, --path and --new-task go with --task"},
		{[]string{"--json", "", "ls"}, decision.Usage, "--json needs a DEST"},
		{[]string{"--json", "fd:2", "ls"}, decision.Usage, "--json fd:2: fd:N names an open descriptor above 2"},
		{[]string{"--json", "fd:x", "ls"}, decision.Usage, "--json fd:x"},
		{[]string{"--json", filepath.Join(dir, "sub", "out.json"), "ls"}, decision.Usage, "wt-exec: hint: name a file wt-exec can write, or fd:N"},
		{[]string{"--explain", "--sandbox", "--no-confine", "ls"}, decision.Usage, "--sandbox and --no-confine exclude each other"},
	} {
		args := append([]string{"-C", dir}, c.args...)
		code, stdout, stderr := execute(t, args...)
		if code != ExitRefused {
			t.Errorf("%q: exit %d, want %d; stderr:\n%s", c.args, code, ExitRefused, stderr)
		}
		if !strings.Contains(stderr, c.code+": ") || !strings.Contains(stderr, c.said) || !strings.Contains(stderr, "wt-exec: hint: ") {
			t.Errorf("%q: stderr does not say %s %q with a hint:\n%s", c.args, c.code, c.said, stderr)
		}
		if stdout != "" {
			t.Errorf("%q: stdout %q", c.args, stdout)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a refusal made %s: %v", dir, err)
	}
}

// TestJSONRefusalEnvelope: with --json, a refusal is also written to the
// destination as the error envelope (code, message, hint), whether it is
// a file or a descriptor the caller opened.
func TestJSONRefusalEnvelope(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	out := filepath.Join(tmp, "out.json")
	code, _, stderr := execute(t, "--json", out, "--pty", "--no-pty", "ls")
	if code != ExitRefused {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	env := readEnvelope(t, out)
	e, _ := env["error"].(map[string]any)
	if env["ok"] != false || e["code"] != decision.Usage || e["message"] != "--pty and --no-pty exclude each other" || e["hint"] != "see wt-exec --help" {
		t.Errorf("envelope %v", env)
	}

	// A descriptor: wt-exec writes the envelope and closes it, so the
	// reader sees the end.
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	// Non-blocking, so that a deadline bounds the read should the
	// descriptor be left open.
	if err := unix.SetNonblock(p[0], true); err != nil {
		t.Fatal(err)
	}
	r := os.NewFile(uintptr(p[0]), "json-read")
	defer r.Close()
	r.SetReadDeadline(time.Now().Add(time.Minute))
	code, _, stderr = execute(t, "--json", "fd:"+strconv.Itoa(p[1]), "-C", filepath.Join(tmp, "missing"), "ls")
	if code != ExitRefused {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := io.ReadAll(r) // returns once wt-exec closed the only writer
	if err != nil {
		t.Fatal(err)
	}
	env = decodeEnvelope(t, b)
	if e, _ := env["error"].(map[string]any); env["ok"] != false || e["code"] != decision.InvalidTarget {
		t.Errorf("envelope %v", env)
	}
}

// TestJSONRefusesAReadOnlyDescriptor: fd:N must be open for writing.
func TestJSONRefusesAReadOnlyDescriptor(t *testing.T) {
	t.Parallel()
	fd, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	dest := "fd:" + strconv.Itoa(fd)
	code, _, stderr := execute(t, "--json", dest, "ls")
	if want := "--json " + dest + ": descriptor " + strconv.Itoa(fd) + " is not open for writing"; code != ExitRefused || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, want %d saying %q:\n%s", code, ExitRefused, want, stderr)
	}
}
