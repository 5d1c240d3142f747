package hooks

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
)

// ServerFence is the configuration of a remote's fence, kept in the remote
// repository's git config (wt-hook install --server writes it).
type ServerFence struct {
	Endpoints []string `json:"etcd_endpoints"`
	// KeySpace is the remote id the fleet keys of this remote live under
	// (wt/<KeySpace>/tasks/<task>).
	KeySpace string `json:"key_space"`
	// BranchPrefix selects the task branches: refs/heads/<prefix><task>.
	BranchPrefix string `json:"branch_prefix"`
}

// Git config keys of a server fence.
const (
	FenceEndpointsKey = "wt.fence.endpoints"
	FenceKeySpaceKey  = "wt.fence.keyspace"
	FencePrefixKey    = "wt.fence.branchprefix"
	// DefaultBranchPrefix is the allocation branches' prefix (wt/<task>).
	DefaultBranchPrefix = "wt/"
	// TaskDirLeaf is the last component of a task-dir layout's branch
	// (wt/<task>/work; store.Policy.TaskBranch).
	TaskDirLeaf = "work"
)

// ParseServerFence reads a fence from `git config --get-regexp ^wt\.fence\.`
// output; ok is false when none is configured.
func ParseServerFence(configLines string) (f ServerFence, ok bool) {
	f.BranchPrefix = DefaultBranchPrefix
	for _, line := range strings.Split(configLines, "\n") {
		k, v, found := strings.Cut(strings.TrimSpace(line), " ")
		if !found {
			continue
		}
		switch strings.ToLower(k) {
		case FenceEndpointsKey:
			for _, e := range strings.Split(v, ",") {
				if e = strings.TrimSpace(e); e != "" {
					f.Endpoints = append(f.Endpoints, e)
				}
			}
		case FenceKeySpaceKey:
			f.KeySpace = v
		case FencePrefixKey:
			f.BranchPrefix = v
		}
	}
	return f, len(f.Endpoints) > 0 && f.KeySpace != ""
}

// PushOptions are the push options git hands a pre-receive hook
// (GIT_PUSH_OPTION_COUNT and GIT_PUSH_OPTION_<i>).
func PushOptions(getenv func(string) string) []string {
	n, err := strconv.Atoi(getenv("GIT_PUSH_OPTION_COUNT"))
	if err != nil || n <= 0 {
		return nil
	}
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, getenv(fmt.Sprintf("GIT_PUSH_OPTION_%d", i)))
	}
	return out
}

// Checker asks the fleet whether key still has create revision revision
// (fleet.Helper.Check in the shipped hook).
type Checker func(ctx context.Context, key string, revision int64) error

// PreReceive judges a push into a fenced remote (githooks(5) pre-receive:
// "<old> <new> <ref>" lines on stdin, all refs accepted or none). Every
// update of a task branch (created, moved or deleted) needs a fencing token
// for that very task whose revision is still the task key's current one
// in etcd: none is FLEET_FENCED, a token for another task is
// FLEET_FENCED, a stale revision is FLEET_FENCED, and an etcd that cannot
// be asked is FLEET_UNREACHABLE (fail closed). Other refs pass untouched.
func PreReceive(f ServerFence, in io.Reader, options []string, check Checker) error {
	updates, err := ParseRefUpdates(in)
	if err != nil {
		return err
	}
	tokens := map[string][]int64{}
	for _, o := range options {
		v, ok := strings.CutPrefix(o, fleet.FenceOption+"=")
		if !ok {
			continue
		}
		at := strings.LastIndexByte(v, '@')
		rev, err := strconv.ParseInt(v[at+1:], 10, 64)
		if at <= 0 || err != nil {
			return decision.New(decision.InvalidHookInput, "push option %q is not %s=TASK@REVISION", o, fleet.FenceOption)
		}
		if !slices.Contains(tokens[v[:at]], rev) {
			tokens[v[:at]] = append(tokens[v[:at]], rev)
		}
	}
	for _, u := range updates {
		task, ok := strings.CutPrefix(u.Ref, "refs/heads/"+f.BranchPrefix)
		if !ok || task == "" {
			continue
		}
		// The task-dir layout's branch is <prefix><task>/work: a token for
		// that task is the one it needs (a flat task key ending in /work
		// keeps its own reading).
		if t, dir := strings.CutSuffix(task, "/"+TaskDirLeaf); dir && len(tokens[task]) == 0 && t != "" {
			task = t
		}
		revs := tokens[task]
		if len(revs) > 1 {
			// Exactly one token per task: a pusher that tries several
			// revisions is guessing.
			return decision.New(decision.FleetFenced, "this push updates %s, task %s's branch, with %d different fencing tokens for it: exactly one is accepted", u.Ref, task, len(revs)).
				WithHint("push from the task's writer, whose wt-exec gives every push its one token")
		}
		if len(revs) == 0 {
			others := make([]string, 0, len(tokens))
			for t := range tokens {
				others = append(others, t)
			}
			why := "carries no fencing token"
			if len(others) > 0 {
				why = "carries a fencing token for task " + strings.Join(others, ", ") + ", not for " + task
			}
			return decision.New(decision.FleetFenced, "this push updates %s, task %s's branch, and %s", u.Ref, task, why).
				WithHint("push from the task's writer: a wt-exec run in fleet mode with wt-admin policy --fleet-server-fence on gives every git push its token")
		}
		key := fleet.Key(f.KeySpace, task)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		last := check(ctx, key, revs[0])
		cancel()
		if last != nil {
			d, ok := decision.As(last)
			if !ok {
				d = decision.Wrap(decision.FleetUnreachable, last, "check the fleet key %s", key)
			}
			if d.Code == decision.FleetUnreachable {
				return decision.New(d.Code, "this push updates %s, task %s's branch, and etcd cannot be asked whether its token is current: %s", u.Ref, task, d.Message).
					WithHint("task branches take pushes again once etcd answers; other refs are not affected")
			}
			return decision.New(d.Code, "this push updates %s with a stale fencing token (revision %d): %s", u.Ref, revs[len(revs)-1], d.Message).
				WithHint("the task's fleet lease was lost or taken over; the current writer pushes (wt-admin fleet status shows who holds task %s)", task)
		}
	}
	return nil
}

// FenceChecker is the Checker of the shipped hook: the wt-fleet helper.
func FenceChecker(f ServerFence) (Checker, error) {
	h, err := fleet.NewHelper(f.Endpoints, os.Stderr)
	if err != nil {
		return nil, err
	}
	return h.Check, nil
}
