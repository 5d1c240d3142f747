package land

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/store"
)

// Handback is what a task handed back met, as wt keeps it for the task's
// agent (store.HandbackPath; its path is $WT_LAND_HANDBACK in the task's
// next run and "handback" in its landing record): enough to act on
// without a person.
type Handback struct {
	Task     string `json:"task"`
	Owner    string `json:"owner"`
	Worktree string `json:"worktree"`
	// State is LAND_CONFLICT or LAND_TEST_FAILED; Message says it in words
	// and Next is what to do (land.HandBackHint).
	State   string `json:"state"`
	Message string `json:"message"`
	Next    string `json:"next"`
	// Branch is the publication branch; Source the task's commit that was
	// integrated, Onto what it was integrated onto, Result what the
	// integration made (a failed test), AttemptRef where it is kept.
	Branch     string `json:"branch"`
	Strategy   string `json:"strategy"`
	Source     string `json:"source"`
	Onto       string `json:"onto"`
	Result     string `json:"result,omitempty"`
	Attempt    int    `json:"attempt"`
	AttemptRef string `json:"attempt_ref"`
	// Paths and Diff are a conflict's paths and git's diff of them with
	// the conflict markers (cut at DiffMax bytes).
	Paths []string `json:"paths,omitempty"`
	Diff  string   `json:"diff,omitempty"`
	// Met are the commits of Onto that Source lacks (for a conflict, those
	// that touch its paths), newest first, each with the task that landed
	// it where wt landed it.
	Met []Met `json:"met"`
	// Test is the failed test: its command, exit status, output and the
	// output's last lines.
	Test *HandbackTest `json:"test,omitempty"`
	At   string        `json:"at"`
}

// Met is a commit of the publication branch a task handed back met.
type Met struct {
	Commit  string `json:"commit"`
	Subject string `json:"subject"`
	// Task landed it ("" when no landing of wt's did).
	Task string `json:"task,omitempty"`
}

// HandbackTest is a failed test in a Handback.
type HandbackTest struct {
	Command string `json:"command"`
	Exit    int    `json:"exit"`
	Log     string `json:"log"`
	Tail    string `json:"tail"`
}

// Limits of what a Handback carries.
const (
	DiffMax  = 64 << 10
	TailMax  = 40 // lines
	metLimit = 50
)

// handbackOf writes the hand-back file of tr (state LAND_CONFLICT or
// LAND_TEST_FAILED), returning its path. diff is a conflict's diff.
func (l *lander) handbackOf(a store.Allocation, tr TaskResult, state, msg, diff string) (string, error) {
	h := Handback{Task: tr.Task, Owner: a.Owner, Worktree: a.WorktreePath, State: state, Message: msg,
		Next:   HandBackHint(l.opts.RepoArg, l.pol.PublicationBranch, a.WorktreePath, tr.Task, a.Owner, state, tr.AttemptRef, tr.TestLog),
		Branch: l.pol.PublicationBranch, Strategy: tr.Strategy, Source: tr.Source, Onto: tr.Onto, Result: tr.Result,
		Attempt: tr.Attempt, AttemptRef: tr.AttemptRef, Paths: tr.Paths, At: store.Now(), Met: []Met{}}
	if len(diff) > DiffMax {
		diff = diff[:DiffMax] + "\n[cut at " + "64 KiB]\n"
	}
	h.Diff = diff
	if state == store.LandingTestFailed {
		h.Test = &HandbackTest{Command: l.opts.Test, Exit: tr.TestExit, Log: tr.TestLog, Tail: tail(tr.TestLog, TailMax)}
	}
	h.Met = l.met(tr.Source, tr.Onto, tr.Paths)
	path := store.HandbackPath(l.r.Store.Root(), a.AllocationID)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", decision.SayWrap(decision.Internal, err, "make", filepath.Dir(path))
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // a diff's markers as git writes them
	enc.SetIndent("", "  ")
	if err := enc.Encode(h); err != nil {
		return "", decision.SayWrap(decision.Internal, err, "encode", path)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return "", decision.SayWrap(decision.Internal, err, "write", tmp)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", decision.SayWrap(decision.Internal, err, "write", path)
	}
	return path, nil
}

// met are onto's commits that source lacks (touching paths, when given),
// each with the task whose landing brought it, as landing records say.
func (l *lander) met(source, onto string, paths []string) []Met {
	out := []Met{}
	if source == "" || onto == "" {
		return out
	}
	args := []string{"log", "-n", "50", "--format=%H%x09%s", source + ".." + onto}
	if len(paths) > 0 {
		args = append(append(args, "--"), paths...)
	}
	raw, err := l.r.Git.Git(l.ctx, false, args...)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if c, s, ok := strings.Cut(line, "\t"); ok {
			out = append(out, Met{Commit: c, Subject: s})
		}
	}
	if len(out) == 0 {
		return out
	}
	// Which landing brought each: a landing's own commits are those
	// between what it integrated onto and what it made.
	var ls []store.Landing
	_ = l.r.Store.Read(func(tx *store.Tx) error {
		var err error
		ls, err = tx.Landings()
		return err
	})
	want := map[string]int{}
	for i, m := range out {
		want[m.Commit] = i
	}
	left := len(out)
	for _, rec := range ls {
		if left == 0 {
			break
		}
		if rec.State != store.LandingLanded || rec.Onto == "" || rec.Result == "" || rec.Onto == rec.Result {
			continue
		}
		raw, err := l.r.Git.Git(l.ctx, false, "rev-list", "-n", "1000", rec.Onto+".."+rec.Result)
		if err != nil {
			continue
		}
		for _, c := range strings.Fields(string(raw)) {
			if i, ok := want[c]; ok && out[i].Task == "" {
				out[i].Task = rec.TaskKey
				left--
			}
		}
	}
	return out
}

// tail is the last n lines of file path ("" when it cannot be read).
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	const most = 16 << 10
	if len(b) > most {
		b = b[len(b)-most:]
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// dropHandback removes a hand-back file (path): the task landed, or was
// marked ready again (its agent answered it).
func dropHandback(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
