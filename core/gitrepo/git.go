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

// run runs git -C dir args... and returns its stdout.
func run(ctx context.Context, dir string, readOnly bool, args ...string) ([]byte, error) {
	full := append([]string{"-C", dir}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = gitEnv(readOnly)
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
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
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
