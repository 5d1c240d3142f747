package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// scrubbed are variables git sets for hooks (or a user may have exported)
// that would redirect a git command away from the directory given with -C.
var scrubbed = []string{"GIT_DIR=", "GIT_WORK_TREE=", "GIT_INDEX_FILE=", "GIT_COMMON_DIR=",
	"GIT_PREFIX=", "GIT_OBJECT_DIRECTORY=", "GIT_ALTERNATE_OBJECT_DIRECTORIES=", "GIT_NAMESPACE=",
	"GIT_CEILING_DIRECTORIES=", "GIT_DISCOVERY_ACROSS_FILESYSTEM=", "GIT_OPTIONAL_LOCKS="}

func gitEnv(readOnly bool) []string {
	var env []string
	for _, kv := range os.Environ() {
		skip := false
		for _, p := range scrubbed {
			if strings.HasPrefix(kv, p) {
				skip = true
				break
			}
		}
		if !skip {
			env = append(env, kv)
		}
	}
	if readOnly {
		env = append(env, "GIT_OPTIONAL_LOCKS=0")
	}
	return env
}

// Error is a git command that failed.
type Error struct {
	Args     []string
	ExitCode int
	Stderr   string
}

func (e *Error) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = fmt.Sprintf("exit status %d", e.ExitCode)
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

// neutral are the settings every git wt runs is given on its command line
// (which wins over every config file, and passes to the git processes it
// starts): each configuration that would start a program is off. wt's own
// git commands read and update refs, list and remove worktrees and read a
// worktree's status; none of them needs a pager, an editor, a credential
// helper or a file system monitor. Hooks are left as the repository sets
// them here, because wt asks git where they are (rev-parse --git-path
// hooks), and git worktree add runs post-checkout; the ref updates wt makes
// run with hooks off (GitUnhooked), and so does every command on a
// governed worktree (GitIn). Filters stay those of the repository's own
// config, which a confined agent cannot write (a governed worktree's
// config.worktree is checked by VerifyMetadata).
var neutral = []string{
	"-c", "core.fsmonitor=false",
	"-c", "core.pager=cat",
	"-c", "core.editor=:",
	"-c", "sequence.editor=:",
	"-c", "diff.external=",
	"-c", "credential.helper=",
	"-c", "core.askPass=",
	"-c", "core.alternateRefsCommand=",
	"-c", "uploadpack.packObjectsHook=",
	// In a reftable repository every ref update takes the one lock of the
	// table stack, held while the reference-transaction hook (wt's gate)
	// runs; git waits 100 ms for it by default, which ten agents
	// committing and allocating at once exceed on a loaded machine ("cannot
	// lock references"). wt's own git waits as long as wt waits for its
	// store's lock (10 s). Gits without reftable ignore the key.
	"-c", "reftable.lockTimeout=10000",
}

// run runs git -C dir args... and returns its stdout.
func run(ctx context.Context, dir string, readOnly bool, args ...string) ([]byte, error) {
	return runEnv(ctx, dir, readOnly, nil, args...)
}

// runEnv is run with extra variables in git's environment.
func runEnv(ctx context.Context, dir string, readOnly bool, extra []string, args ...string) ([]byte, error) {
	full := append(append([]string{"-C", dir}, neutral...), args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = append(gitEnv(readOnly), extra...)
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	err := cmd.Run()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out.Bytes(), &Error{Args: args, ExitCode: ee.ExitCode(), Stderr: errb.String()}
		}
		return out.Bytes(), fmt.Errorf("run git %s: %w", strings.Join(args, " "), err)
	}
	return out.Bytes(), nil
}

// batchAbsent runs git with args (where, and cat-file --batch-check with
// its format) on names, and returns those git answers "NAME missing" for:
// the ones the object store lacks.
func batchAbsent(ctx context.Context, args, names []string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = gitEnv(true)
	cmd.Stdin = strings.NewReader(strings.Join(names, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git cat-file --batch-check: %w", err)
	}
	var absent []string
	for _, line := range strings.Split(string(out), "\n") {
		if n, ok := strings.CutSuffix(line, " missing"); ok {
			absent = append(absent, n)
		}
	}
	return absent, nil
}

// runDetached runs git -C dir args... with marker added to its environment,
// its stdin and stdout on /dev/null and its stderr in a temporary file: no
// pipe ties git's life to the caller's.
func runDetached(ctx context.Context, dir, marker string, args ...string) error {
	errf, err := os.CreateTemp("", "wt-git-stderr-*")
	if err != nil {
		return fmt.Errorf("run git %s: %w", strings.Join(args, " "), err)
	}
	defer os.Remove(errf.Name()) // Best effort: a temporary file.
	defer errf.Close()
	cmd := exec.CommandContext(ctx, "git", append(append([]string{"-C", dir}, neutral...), args...)...)
	cmd.Env = append(gitEnv(false), marker)
	cmd.Stderr = errf
	err = cmd.Run()
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		b, _ := os.ReadFile(errf.Name())
		return &Error{Args: args, ExitCode: ee.ExitCode(), Stderr: string(b)}
	}
	return fmt.Errorf("run git %s: %w", strings.Join(args, " "), err)
}
