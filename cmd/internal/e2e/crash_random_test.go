package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// TestAllocateKilledAnywhere kills wt-admin allocate at random moments,
// alone (its git lives on, as after a crash of the caller) or with its whole
// process group (git dies half-way too), many times. After each kill,
// wt-admin recover converges: it waits while the orphaned git still runs,
// then the task is either allocated with its worktree or not allocated at
// all (no directory, no branch), nothing pending, never "blocked".
func TestAllocateKilledAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("kills many real processes")
	}
	top, repo, _ := governed(t, 0)
	t.Parallel() // after governed: wt-admin ran in this process there
	run(t, repo, "wt-hook", "install").ok(t)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	kills := 8 // make test's share; for a longer hunt: WT_TEST_KILLS=500 go test -run KilledAnywhere
	if n, err := strconv.Atoi(os.Getenv("WT_TEST_KILLS")); err == nil && n > 0 {
		kills = n
	}
	outcomes := map[string]int{}
	for i := 0; i < kills; i++ {
		task, path := fmt.Sprintf("K-%d", i), filepath.Join(top, fmt.Sprintf("k%d", i))
		cmd, _, _ := command(repo, "wt-admin", "allocate", "--task", task, "--owner", "alice", path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The moment is the point of the test: anywhere from before the
		// journal to after the records.
		time.Sleep(time.Duration(rng.Intn(60)) * time.Millisecond)
		group := i%2 == 1
		if group {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		} else {
			cmd.Process.Kill()
		}
		cmd.Wait()
		outcomes[converge(t, repo, path, task)]++
	}
	t.Logf("%d kills (half with the whole process group): %v", kills, outcomes)
}

// converge runs wt-admin recover until nothing is in flight, then checks
// that the task is wholly allocated or wholly absent; it returns which.
func converge(t *testing.T, repo, path, task string) string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		r := run(t, repo, "wt-admin", "recover", "--json").ok(t)
		var out struct {
			Decision struct {
				Recovered []struct{ Outcome, Code, Path, Detail string }
			}
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("recover: %v\n%s", err, r.stdout)
		}
		flying := false
		for _, rec := range out.Decision.Recovered {
			want := map[string]string{"finished": "ALLOCATION_RECOVERED", "rolled_back": "ALLOCATION_ROLLED_BACK",
				"blocked": "INTERRUPTED_TRANSACTION", "in_flight": "TRANSACTION_IN_FLIGHT"}[rec.Outcome]
			if want == "" || rec.Code != want {
				t.Fatalf("recovery outcome %q has code %q, want %q", rec.Outcome, rec.Code, want)
			}
			switch rec.Outcome {
			case "blocked":
				ls, _ := exec.Command("sh", "-c", "ls -la '"+rec.Path+"'; cat '"+rec.Path+"/.git'; ls -la '"+repo+"/.git/worktrees/'*").CombinedOutput()
				t.Fatalf("recovery of %s is blocked: %s\n%s", rec.Path, rec.Detail, ls)
			case "in_flight":
				flying = true
			}
		}
		if !flying {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still in flight after a minute: %s", r.stdout)
		}
	}
	status, raw := readStatus(t, repo)
	if len(status.Decision.Pending) != 0 {
		t.Fatalf("pending after recovery: %s", raw)
	}
	allocated := false
	for _, w := range status.Decision.Worktrees {
		if w.TaskKey == task {
			allocated = true
			if w.Path != path || w.GitState != "present" {
				t.Fatalf("task %s is allocated but its worktree is %s (%s)", task, w.GitState, w.Path)
			}
		}
	}
	_, statErr := os.Stat(path)
	branch := exec.Command("git", "-C", repo, "rev-parse", "--verify", "-q", "refs/heads/wt/"+task).Run() == nil
	switch {
	case allocated:
		if statErr != nil || !branch {
			t.Fatalf("task %s is allocated without its checkout (%v) or branch (%v)", task, statErr, branch)
		}
		return "allocated"
	case statErr == nil || branch:
		wl, _ := exec.Command("git", "-C", repo, "worktree", "list").CombinedOutput()
		ls, _ := exec.Command("ls", "-la", path, filepath.Join(repo, ".git", "wt", "journal")).CombinedOutput()
		t.Fatalf("task %s is not allocated but left a directory (%v) or a branch (%v)\nstatus: %s\nworktrees:\n%s\n%s", task, statErr == nil, branch, raw, wl, ls)
	}
	return "absent"
}

// TestCommandsKilledAnywhere runs state-changing commands one after another
// (allocate, wt-exec grant and release, with --expect-generation and
// --expect-head, retain, resume, lease abandon, handoff and transfer, prune
// apply, backfill apply, land (its test in a sandbox, main under the
// publication lease, the canonical checkout brought along), land --ready
// and land --ready in batches (one failing, bisected, tests at once),
// finish apply of a landed task pushed to a fenced remote, hook
// install and uninstall) and kills each at a random moment, alone or with
// its process group. After every kill, doctor's printed fixes, run as printed, reach
// DOCTOR_OK within a few rounds; and then every allocation has its
// worktree, no git lock of a worktree is empty, and the user's own hook is
// still there, as the hook or as the chained one.
func TestCommandsKilledAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("kills many real processes")
	}
	top, repo, wts := governed(t, 2)
	t.Parallel() // after governed: wt-admin ran in this process there
	hooksDir := filepath.Join(repo, ".git", "hooks")
	foreign := "#!/bin/sh\necho the user's own hook >/dev/null\n"
	os.WriteFile(filepath.Join(hooksDir, "pre-commit"), []byte(foreign), 0o755)
	run(t, repo, "wt-hook", "install").ok(t)
	// A remote with wt's fence (local mode), and main under the
	// publication lease: the landings move it by the lander's secret, and
	// finish deletes a task's branch there through the fence.
	remote := filepath.Join(top, "remote.git")
	git(t, top, "init", "-q", "--bare", "-b", "main", remote)
	run(t, remote, "wt-hook", "install", "--server").ok(t)
	git(t, repo, "remote", "add", "origin", remote)
	git(t, repo, "push", "-q", "origin", "main")
	run(t, repo, "wt-admin", "policy", "--publication-lease", "on", "--fleet-server-fence", "on").ok(t)
	testFlags := []string{"--test", "sleep 0.01"}
	if !confineViews() {
		testFlags = append(testFlags, "--test-unconfined")
	}
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	kills := 12 // make test's share; WT_TEST_KILLS=500 for a longer hunt
	if n, err := strconv.Atoi(os.Getenv("WT_TEST_KILLS")); err == nil && n > 0 {
		kills = n
	}
	ops := []func(i int) (string, []string){
		func(i int) (string, []string) {
			return repo, []string{"wt-admin", "allocate", "--task", fmt.Sprintf("C-%d", i), "--owner", "alice", filepath.Join(top, fmt.Sprintf("c%d", i))}
		},
		func(int) (string, []string) {
			return wts[0], []string{"wt-exec", "--client-id", "agent-k", "--", "true"}
		},
		func(int) (string, []string) { return wts[1], []string{"wt-exec", "--", "sh", "-c", "exit 0"} },
		func(int) (string, []string) { return repo, []string{"wt-admin", "retain", wts[1], "--owner", "alice"} },
		func(int) (string, []string) { return repo, []string{"wt-admin", "resume", wts[1], "--owner", "alice"} },
		func(int) (string, []string) {
			return repo, []string{"wt-admin", "lease", "abandon", wts[0], "--reason", "killed in a test", "--operator"}
		},
		func(i int) (string, []string) {
			// A retained audit whose checkout is gone, then its prune's
			// apply (the one that is killed).
			r := filepath.Join(top, fmt.Sprintf("r%d", i))
			run(t, repo, "wt-admin", "allocate", "--task", fmt.Sprintf("R-%d", i), "--owner", "rev", "--role", "audit", r).ok(t)
			run(t, repo, "wt-admin", "retain", r, "--owner", "rev").ok(t)
			os.RemoveAll(r)
			dry := run(t, repo, "wt-admin", "prune", r, "--owner", "rev", "--json").ok(t)
			var env struct {
				Decision struct {
					PlanID string `json:"plan_id"`
				} `json:"decision"`
			}
			json.Unmarshal([]byte(dry.stdout), &env)
			return repo, []string{"wt-admin", "prune", r, "--owner", "rev", "--apply", env.Decision.PlanID}
		},
		func(i int) (string, []string) {
			// A binding as an older wt wrote it (no registration), then
			// the backfill's apply (the one that is killed).
			w := filepath.Join(top, fmt.Sprintf("b%d", i))
			run(t, repo, "wt-admin", "allocate", "--task", fmt.Sprintf("B-%d", i), "--owner", "alice", w).ok(t)
			key := filepath.Base(w)
			os.Remove(filepath.Join(repo, ".git", "wt", "registrations", key+".json"))
			os.Remove(filepath.Join(repo, ".git", "worktrees", key, "wt-registration"))
			dry := run(t, repo, "wt-admin", "backfill", "--json")
			var env struct {
				Decision struct {
					PlanID string `json:"plan_id"`
				} `json:"decision"`
			}
			json.Unmarshal([]byte(dry.stdout), &env)
			return repo, []string{"wt-admin", "backfill", "--apply", env.Decision.PlanID}
		},
		func(int) (string, []string) {
			return repo, []string{"wt-admin", "lease", "handoff", wts[1], "--to-client", "agent-k", "--operator", "--ttl", "1s"}
		},
		func(int) (string, []string) {
			return wts[0], []string{"wt-exec", "--client-id", "agent-k", "--expect-generation", "0", "--", "true"}
		},
		func(int) (string, []string) {
			head := git(t, wts[0], "rev-parse", "HEAD")
			return wts[0], []string{"wt-exec", "--client-id", "agent-k", "--expect-head", head, "--", "true"}
		},
		func(int) (string, []string) {
			// A transfer to what the command leaves behind, which then
			// holds the lease until it ends.
			return wts[0], []string{"wt-exec", "--client-id", "agent-t", "--", "sh", "-c",
				"sleep 0.2 >/dev/null 2>&1 & wt-admin lease transfer . --holder $! --reason crash-test"}
		},
		func(i int) (string, []string) {
			// A task with work, landed onto main (the lander is killed:
			// TestLandKilledAnywhere checks what the branch is after).
			w := filepath.Join(top, fmt.Sprintf("l%d", i))
			run(t, repo, "wt-admin", "allocate", "--task", fmt.Sprintf("L-%d", i), "--owner", "alice", w).ok(t)
			runIdent(t, w, "wt-exec", "--", "sh", "-c", fmt.Sprintf("echo %d > l%d && git add l%d && git commit --no-verify -qm l%d", i, i, i, i)).ok(t)
			return repo, append([]string{"wt-admin", "land", "--task", fmt.Sprintf("L-%d", i)}, testFlags...)
		},
		func(i int) (string, []string) {
			// A task marked ready (its tip recorded), then land --ready.
			w := filepath.Join(top, fmt.Sprintf("q%d", i))
			task := fmt.Sprintf("Q-%d", i)
			run(t, repo, "wt-admin", "allocate", "--task", task, "--owner", "alice", w).ok(t)
			runIdent(t, w, "wt-exec", "--", "sh", "-c", fmt.Sprintf("echo %d > q%d && git add q%d && git commit --no-verify -qm q%d", i, i, i, i)).ok(t)
			run(t, repo, "wt-admin", "ready", task, "--owner", "alice").ok(t)
			return repo, append([]string{"wt-admin", "land", "--ready"}, testFlags...)
		},
		func(i int) (string, []string) {
			// Three tasks marked ready, the second failing the test, then
			// land --ready in batches of two, two tests at once: killed
			// while candidates are integrated, tested at once, bisected,
			// published.
			var flags []string
			for k := 0; k < 3; k++ {
				w := filepath.Join(top, fmt.Sprintf("m%d-%d", i, k))
				task := fmt.Sprintf("M-%d-%d", i, k)
				name := fmt.Sprintf("m%d-%d", i, k)
				if k == 1 {
					name += "-bad"
				}
				run(t, repo, "wt-admin", "allocate", "--task", task, "--owner", "alice", w).ok(t)
				runIdent(t, w, "wt-exec", "--", "sh", "-c", fmt.Sprintf("echo %d > %s && git add %s && git commit --no-verify -qm %s", i, name, name, name)).ok(t)
				run(t, repo, "wt-admin", "ready", task, "--owner", "alice").ok(t)
			}
			flags = append(flags, "--test", "sleep 0.01; ! ls | grep -q -- -bad")
			if !confineViews() {
				flags = append(flags, "--test-unconfined")
			}
			return repo, append([]string{"wt-admin", "land", "--ready", "--batch", "2", "--jobs", "2"}, flags...)
		},
		func(i int) (string, []string) {
			// A task pushed to the fenced remote, one failed attempt kept,
			// then landed; then its finish's apply (the one killed): its
			// attempt ref and its branch on the remote go with it.
			w := filepath.Join(top, fmt.Sprintf("f%d", i))
			task := fmt.Sprintf("F-%d", i)
			run(t, repo, "wt-admin", "allocate", "--task", task, "--owner", "alice", w).ok(t)
			runIdent(t, w, "wt-exec", "--", "sh", "-c", fmt.Sprintf("echo %d > f%d && git add f%d && git commit --no-verify -qm f%d && git push -q origin HEAD:refs/heads/wt/%s", i, i, i, i, task)).ok(t)
			runIdent(t, repo, "wt-admin", append([]string{"land", "--task", task, "--test", "exit 1"}, testFlags[2:]...)...)
			runIdent(t, repo, "wt-admin", "land", "--task", task).ok(t)
			dry := run(t, repo, "wt-admin", "finish", "--task", task, "--owner", "alice", "--json").ok(t)
			var env struct {
				Decision struct {
					PlanID string `json:"plan_id"`
				} `json:"decision"`
			}
			json.Unmarshal([]byte(dry.stdout), &env)
			return repo, []string{"wt-admin", "finish", "--task", task, "--owner", "alice", "--apply", env.Decision.PlanID}
		},
		func(int) (string, []string) { return repo, []string{"wt-hook", "uninstall"} },
		func(int) (string, []string) { return repo, []string{"wt-hook", "install"} },
	}
	if confineViews() {
		// A confined run that commits twice, hooks off, in its private
		// view: killed before, during or after a publication, it never
		// leaves the branch ahead of its objects, and doctor's fix (the
		// next wt-exec) recovers what it had not published.
		ops = append(ops, func(i int) (string, []string) {
			return wts[0], []string{"wt-exec", "--client-id", "agent-k", "--confine", "--", "sh", "-c",
				fmt.Sprintf("git -c core.hooksPath=/dev/null commit -q --allow-empty -m k%d-1 && git -c core.hooksPath=/dev/null commit -q --allow-empty -m k%d-2", i, i)}
		})
	}
	names := map[string]int{}
	for i := 0; i < kills; i++ {
		dir, argv := ops[rng.Intn(len(ops))](i)
		names[argv[0]+" "+argv[1]]++
		cmd, _, _ := command(dir, argv[0], argv[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.Intn(40)) * time.Millisecond)
		if rng.Intn(2) == 0 {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		} else {
			cmd.Process.Kill()
		}
		cmd.Wait()
		followDoctor(t, repo)
		checkInvariants(t, repo, hooksDir, foreign)
	}
	t.Logf("%d kills: %v", kills, names)
}

// confineViews reports whether a confined run gets a private view here:
// Landlock, and root or user namespaces.
func confineViews() bool {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 3 {
		return false
	}
	if os.Geteuid() == 0 {
		return true
	}
	b, err := os.ReadFile("/proc/sys/user/max_user_namespaces")
	return err == nil && strings.TrimSpace(string(b)) != "0"
}

// followDoctor runs doctor's printed fixes, as printed (and the next: step
// a dry-run fix prints), until it says DOCTOR_OK; a finding without a fix,
// or more than five rounds of fixes, fails. Waiting for what the killed
// command left running is not a round.
func followDoctor(t *testing.T, repo string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for round := 0; ; {
		r := run(t, repo, "wt-admin", "doctor")
		if r.code == 0 {
			return
		}
		if round == 5 {
			t.Fatalf("doctor does not converge:\n%s", r.stdout)
		}
		var fixes []string
		for _, line := range strings.Split(r.stdout, "\n") {
			if f, ok := strings.CutPrefix(line, "   fix: "); ok {
				fixes = append(fixes, f)
			}
		}
		if len(fixes) == 0 {
			// A lease whose killed holder left something running (its
			// child's group still exiting, or the transfer op's
			// background sleep, found by its group or, when the holder
			// died before recording the group, by the lease id in its
			// environment) has no fix yet: wait for the event (it ends
			// on its own), however many doctor runs that takes.
			if leftRunning(r.stdout) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			t.Fatalf("doctor finds something with no fix:\n%s", r.stdout)
		}
		round++
		for _, f := range fixes {
			// A fix that fails shows in the next round. A dry run's fix
			// (prune) prints the apply as its next: step; that is part
			// of following it.
			out := run(t, repo, "sh", "-c", f).stdout
			for _, line := range strings.Split(out, "\n") {
				if next, ok := strings.CutPrefix(line, "next: "); ok {
					run(t, repo, "sh", "-c", next)
				}
			}
		}
	}
}

// leftRunning reports whether doctor names a process that still runs and
// keeps a dead holder's lease (liveness's words for it): here, one the
// killed command left, which ends on its own. Evidence that cannot be read
// is not that.
func leftRunning(doctor string) bool {
	for _, s := range []string{"remain in its", "carry the lease in their environment", "still uses the worktree"} {
		if strings.Contains(doctor, s) {
			return true
		}
	}
	return false
}

func checkInvariants(t *testing.T, repo, hooksDir, foreign string) {
	t.Helper()
	status, _ := readStatus(t, repo)
	for _, w := range status.Decision.Worktrees {
		if w.TaskKey != "" && w.GitState != "present" && w.GitState != "locked" {
			t.Fatalf("task %s has no worktree (%s at %s)", w.TaskKey, w.GitState, w.Path)
		}
	}
	locks, _ := filepath.Glob(filepath.Join(repo, ".git", "worktrees", "*", "locked"))
	for _, l := range locks {
		if b, _ := os.ReadFile(l); len(b) == 0 {
			t.Fatalf("an empty git lock: %s", l)
		}
	}
	// A ref is never published ahead of its objects.
	run(t, repo, "git", "fsck", "--connectivity-only", "--no-dangling").ok(t)
	main, _ := os.ReadFile(filepath.Join(hooksDir, "pre-commit"))
	chained, _ := os.ReadFile(filepath.Join(hooksDir, "pre-commit.wt-chained"))
	if string(main) != foreign && string(chained) != foreign {
		t.Fatalf("the user's hook is lost: pre-commit %q, chained %q", main, chained)
	}
}

// statusView is what the crash tests read of wt-admin status --json.
type statusView struct {
	Decision struct {
		Worktrees []struct {
			Path     string `json:"path"`
			TaskKey  string `json:"task_key"`
			GitState string `json:"git_state"`
		} `json:"worktrees"`
		Pending []any `json:"pending"`
	} `json:"decision"`
}

// readStatus runs wt-admin status --json, and returns it decoded and raw.
func readStatus(t *testing.T, repo string) (statusView, string) {
	t.Helper()
	st := run(t, repo, "wt-admin", "status", "--json").ok(t)
	var v statusView
	if err := json.Unmarshal([]byte(st.stdout), &v); err != nil {
		t.Fatal(err)
	}
	return v, st.stdout
}
