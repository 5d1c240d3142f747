package install

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/proc"
)

// TestReferenceTransactionPass runs the reference-transaction shim as git
// does (its parent, this test process, plays git) with a pass in $GIT_DIR,
// and a stand-in wt-hook that records that it ran and what it read. The
// stand-in is skipped only when the pass names the parent exactly and the
// transaction moves nothing but HEAD and the pass's ref; otherwise it gets
// every byte of stdin, as does a chained hook in every case.
func TestReferenceTransactionPass(t *testing.T) {
	self, err := proc.Self()
	if err != nil {
		t.Fatal(err)
	}
	const (
		oid  = "1111111111111111111111111111111111111111"
		head = oid + " " + oid + " HEAD\n"
		own  = oid + " " + oid + " refs/heads/wt/T-1\n"
		tag  = oid + " " + oid + " refs/tags/v1\n"
		br   = oid + " " + oid + " refs/heads/other\n"
		auto = "0000000000000000000000000000000000000000 0000000000000000000000000000000000000000 AUTO_MERGE\n"
	)
	ledgerDir := t.TempDir()
	ledger := filepath.Join(ledgerDir, "a ledger.jsonl")
	pass := func(v, boot string, pid int, start uint64, ref string) string {
		return fmt.Sprintf("%s %s %d %d %s L-1 3 client-1 %s\n", v, boot, pid, start, ref, ledger)
	}
	valid := pass("v2", self.BootID, self.PID, self.StartTicks, "refs/heads/wt/T-1")
	// A bulk transaction: past the lines the shim reads one at a time.
	tags := strings.Repeat(tag, 200)
	cases := []struct {
		name, pass, stdin string
		chained, judged   bool
	}{
		{"a commit judged by its pre-commit", valid, head + own, false, false},
		{"with a chained hook", valid, head + own, true, false},
		{"another branch in the transaction", valid, head + own + br, false, true},
		{"another branch, chained", valid, br + head, true, true},
		{"a tag beside the commit's refs", valid, head + own + tag, false, false},
		{"no pass", "", head + own, false, true},
		{"no pass, nothing the gate judges (git's AUTO_MERGE, a tag)", "", auto + tag, false, false},
		{"no pass, nothing judged, chained", "", auto, true, false},
		{"no pass, a worktree's HEAD", "", oid + " " + oid + " worktrees/w1/HEAD\n", false, true},
		{"another process's pass", pass("v2", self.BootID, self.PID+1, self.StartTicks, "refs/heads/wt/T-1"), head + own, false, true},
		{"a reused pid", pass("v2", self.BootID, self.PID, self.StartTicks+1, "refs/heads/wt/T-1"), head + own, false, true},
		{"another boot", pass("v2", "00000000-0000-0000-0000-000000000000", self.PID, self.StartTicks, "refs/heads/wt/T-1"), head + own, false, true},
		{"another branch", pass("v2", self.BootID, self.PID, self.StartTicks, "refs/heads/other"), head + own, false, true},
		{"a pass of the format before the ledger", fmt.Sprintf("v1 %s %d %d refs/heads/wt/T-1\n", self.BootID, self.PID, self.StartTicks), head + own, false, true},
		{"an unknown pass version", "v9" + valid[2:], head + own, false, true},
		{"a torn pass", valid[:20], head + own, false, true},
		{"many tags", "", tags, true, false},
		{"many tags and a branch after them", valid, tags + br, true, true},
		{"many tags and a worktree's HEAD, no newline at the end", "", tags + oid + " " + oid + " worktrees/w1/HEAD", true, true},
		{"a commit among many tags", valid, head + own + tags, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, gitDir, stand, path := shimWithStandIn(t)
			os.Remove(ledger)
			if tc.pass != "" {
				os.WriteFile(filepath.Join(gitDir, "wt-hook-pass"), []byte(tc.pass), 0o644)
			}
			if tc.chained {
				os.WriteFile(path+".wt-chained", []byte("#!/bin/sh\ncat > \"$0.stdin\"\n"), 0o755)
			}
			cmd := exec.Command(path, "prepared")
			cmd.Env = append(os.Environ(), "GIT_DIR="+gitDir)
			cmd.Stdin = strings.NewReader(tc.stdin)
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			args, argErr := os.ReadFile(stand + ".args")
			if tc.judged {
				if code != 7 || argErr != nil || string(args) != "run reference-transaction prepared\n" {
					t.Fatalf("wt-hook was not asked: exit %d, args %q (%v), output %q", code, args, argErr, out)
				}
				if got, _ := os.ReadFile(stand + ".stdin"); string(got) != tc.stdin {
					t.Errorf("wt-hook read %q, git wrote %q", got, tc.stdin)
				}
			} else if code != 0 || argErr == nil {
				t.Fatalf("wt-hook ran, or the shim failed: exit %d, args %q, output %q", code, args, out)
			}
			// The move a pass lets through is in the ledger the pass names,
			// exactly (and nothing else is: the judged are wt-gate's to
			// record, the rest moves nothing wt records).
			got, _ := os.ReadFile(ledger)
			want := ""
			if tc.pass == valid && !tc.judged && strings.Contains(tc.stdin, own) {
				want = `{"via":"pass","ref":"refs/heads/wt/T-1","old":"` + oid + `","new":"` + oid + `","lease_id":"L-1","generation":3,"client_id":"client-1"}` + "\n"
			}
			if string(got) != want {
				t.Errorf("the ledger holds %q, want %q", got, want)
			}
			// wt judges first: the chained hook runs, with every byte,
			// only when the transaction was let through (the stand-in
			// refuses whatever it judges).
			if got, err := os.ReadFile(path + ".wt-chained.stdin"); tc.chained && !tc.judged && string(got) != tc.stdin {
				t.Errorf("the chained hook read %q, git wrote %q", got, tc.stdin)
			} else if tc.judged && err == nil {
				t.Errorf("the chained hook ran after wt refused the transaction")
			}
		})
	}
}

// TestReferenceTransactionPassOddName: the shim finds the start ticks of
// its parent after the last ") " of /proc/PPID/stat, so a parent whose name
// holds ") " and what look like fields is still recognised by its pass
// (a shim that cut at the first ") " would read the name's fake fields,
// miss the start ticks and ask wt-hook).
func TestReferenceTransactionPassOddName(t *testing.T) {
	dir, gitDir, stand, path := shimWithStandIn(t)
	const oid = "1111111111111111111111111111111111111111"
	input := filepath.Join(dir, "input")
	os.WriteFile(input, []byte(oid+" "+oid+" HEAD\n"+oid+" "+oid+" refs/heads/wt/T-1\n"), 0o644)
	// The parent plays git: a script whose name (its comm) reads like
	// stat fields. It waits for the pass, then runs the shim as git would.
	parent := filepath.Join(dir, "g) S 1 2 3 4 5")
	os.WriteFile(parent, []byte("#!/bin/sh\nread -r go\n\"$1\" prepared <\"$2\"\n"), 0o755)
	cmd := exec.Command(parent, path, input)
	cmd.Env = append(os.Environ(), "GIT_DIR="+gitDir)
	goLine, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := proc.ReadStat(cmd.Process.Pid)
	if err != nil || st.Comm != filepath.Base(parent) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the parent's stat: %+v %v", st, err)
	}
	self, err := proc.Self()
	if err != nil {
		t.Fatal(err)
	}
	pass := fmt.Sprintf("v2 %s %d %d refs/heads/wt/T-1 - 0 - -\n", self.BootID, cmd.Process.Pid, st.StartTicks)
	os.WriteFile(filepath.Join(gitDir, "wt-hook-pass"), []byte(pass), 0o644)
	goLine.Write([]byte("go\n"))
	goLine.Close()
	if err := cmd.Wait(); err != nil {
		args, _ := os.ReadFile(stand + ".args")
		t.Fatalf("the pass of %q was not accepted: %v (wt-hook asked with %q), output %q", st.Comm, err, args, out.String())
	}
	if _, err := os.Stat(stand + ".args"); err == nil {
		t.Fatal("wt-hook ran though the pass names the parent")
	}
}

// shimWithStandIn writes the reference-transaction shim into DIR/hooks,
// recording a stand-in wt-hook at DIR/wt-hook that writes its arguments to
// wt-hook.args and its stdin to wt-hook.stdin and exits 7 (so that its
// status is seen to come through), and makes an empty git dir DIR/gitdir.
func shimWithStandIn(t *testing.T) (dir, gitDir, stand, shimPath string) {
	t.Helper()
	dir = t.TempDir()
	hooksDir, gitDir := filepath.Join(dir, "hooks"), filepath.Join(dir, "gitdir")
	os.Mkdir(hooksDir, 0o755)
	os.Mkdir(gitDir, 0o755)
	stand = filepath.Join(dir, "wt-hook")
	os.WriteFile(stand, []byte("#!/bin/sh\necho \"$*\" > \"$0.args\"\ncat > \"$0.stdin\"\nexit 7\n"), 0o755)
	shim, err := Render("reference-transaction", stand)
	if err != nil {
		t.Fatal(err)
	}
	shimPath = filepath.Join(hooksDir, "reference-transaction")
	os.WriteFile(shimPath, []byte(shim), 0o755)
	return dir, gitDir, stand, shimPath
}
