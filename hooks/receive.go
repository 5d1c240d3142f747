package hooks

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/safefile"
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
	// Local: no coordinator; the remote accepts the newest grant's token
	// (LocalChecker).
	Local bool `json:"local,omitempty"`
}

// Git config keys of a server fence.
const (
	FenceEndpointsKey = "wt.fence.endpoints"
	FenceKeySpaceKey  = "wt.fence.keyspace"
	FencePrefixKey    = "wt.fence.branchprefix"
	FenceLocalKey     = "wt.fence.local"
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
		case FenceLocalKey:
			f.Local = v == "true"
		}
	}
	return f, (len(f.Endpoints) > 0 || f.Local) && f.KeySpace != ""
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
// (fleet.Helper.Check in the shipped hook), and whether fenceHash is the
// SHA-256 of its grant's secret; LocalChecker in local mode.
type Checker func(ctx context.Context, key string, revision int64, fenceHash string) error

// token is one task's fencing token in a push.
type token struct {
	epoch  int64
	secret string
}

// PreReceive judges a push into a fenced remote (githooks(5) pre-receive:
// "<old> <new> <ref>" lines on stdin, all refs accepted or none). Every
// update of a task branch (created, moved or deleted) needs exactly one
// fencing token for that very task (fleet.FenceToken), which check accepts:
// in fleet mode its epoch is still the task key's create revision in etcd
// and its secret the one that key's holder was given; in local mode no
// newer token of the task has been accepted, and the secret is the one
// accepted with its epoch. None, several, a token for another task, a
// stale or forged one are FLEET_FENCED; a check that cannot be made is
// FLEET_UNREACHABLE (fail closed). Other refs pass untouched.
func PreReceive(f ServerFence, in io.Reader, options []string, check Checker) error {
	updates, err := ParseRefUpdates(in)
	if err != nil {
		return err
	}
	tokens := map[string][]token{}
	for _, o := range options {
		v, ok := strings.CutPrefix(o, fleet.FenceOption+"=")
		if !ok {
			continue
		}
		task, epoch, secret, err := fleet.ParseFenceToken(v)
		if err != nil {
			return decision.New(decision.InvalidHookInput, "push option %s: %v", fleet.FenceOption, err).
				WithHint("push from the task's writer under a wt-exec of this version, which gives every push its token")
		}
		t := token{epoch, secret}
		if !slices.Contains(tokens[task], t) {
			tokens[task] = append(tokens[task], t)
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
		toks := tokens[task]
		if len(toks) > 1 {
			// Exactly one token per task: a pusher that tries several is
			// guessing.
			return decision.New(decision.FleetFenced, "this push updates %s, task %s's branch, with %d different fencing tokens for it: exactly one is accepted", u.Ref, task, len(toks)).
				WithHint("push from the task's writer, whose wt-exec gives every push its one token")
		}
		if len(toks) == 0 {
			others := make([]string, 0, len(tokens))
			for t := range tokens {
				others = append(others, t)
			}
			sort.Strings(others)
			why := "carries no fencing token"
			if len(others) > 0 {
				why = "carries a fencing token for task " + strings.Join(others, ", ") + ", not for " + task
			}
			return decision.New(decision.FleetFenced, "this push updates %s, task %s's branch, and %s", u.Ref, task, why).
				WithHint("push from the task's writer: a wt-exec run with wt-admin policy --fleet-server-fence on gives every git push its token")
		}
		key := fleet.Key(f.KeySpace, task)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		last := check(ctx, key, toks[0].epoch, fleet.FenceHash(toks[0].secret))
		cancel()
		if last != nil {
			d, ok := decision.As(last)
			if !ok {
				d = decision.Wrap(decision.FleetUnreachable, last, "check the fencing token of %s", key)
			}
			if d.Code == decision.FleetUnreachable {
				asked := "etcd cannot be asked"
				if f.Local {
					asked = "the remote's fence record cannot be read"
				}
				return decision.New(d.Code, "this push updates %s, task %s's branch, and %s whether its token is current: %s", u.Ref, task, asked, d.Message).
					WithHint("task branches take pushes again once the fence can be asked; other refs are not affected")
			}
			return decision.New(d.Code, "this push updates %s with a stale or forged fencing token (epoch %d): %s", u.Ref, toks[0].epoch, d.Message).
				WithHint("the task's lease was lost, taken over, or never this pusher's; the current writer pushes (wt-admin status, or wt-admin fleet status, shows who holds task %s)", task)
		}
	}
	return nil
}

// LocalChecker is the Checker of a fence in local mode (no coordinator):
// the remote's git dir keeps, per task, the newest epoch it has accepted
// and the SHA-256 of that grant's secret (wt-fence/<sha256 of the key>,
// under an flock). A token with a newer epoch is a newer grant, which
// fences the older one; the same epoch must carry the same secret; an
// older epoch is stale. A record that cannot be read is never accepted
// over (FLEET_UNREACHABLE).
func LocalChecker(gitDir string) Checker {
	return func(_ context.Context, key string, epoch int64, fenceHash string) error {
		dir := filepath.Join(gitDir, "wt-fence")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return decision.Wrap(decision.FleetUnreachable, err, "make %s", dir)
		}
		sum := sha256.Sum256([]byte(key))
		p := filepath.Join(dir, hex.EncodeToString(sum[:16])+".json")
		lock, err := os.OpenFile(p+".lock", os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return decision.Wrap(decision.FleetUnreachable, err, "open %s.lock", p)
		}
		defer lock.Close()
		if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
			return decision.Wrap(decision.FleetUnreachable, err, "lock %s", p)
		}
		var rec struct {
			Key   string `json:"key"`
			Epoch int64  `json:"epoch"`
			Hash  string `json:"fence_hash"`
		}
		b, err := safefile.Read(p, 1<<16, safefile.NoFollow) // never blocking on a FIFO planted there
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return decision.Wrap(decision.FleetUnreachable, err, "read %s", p)
		default:
			if jerr := json.Unmarshal(b, &rec); jerr != nil || rec.Key != key || rec.Epoch <= 0 {
				return decision.New(decision.FleetUnreachable, "%s is not a fence record of %s: no push to the task is accepted until it is repaired", p, key).
					WithHint("look at it; removing it lets the next grant's token in")
			}
		}
		switch {
		case rec.Epoch > epoch:
			return decision.New(decision.FleetFenced, "a newer grant of the task (epoch %d) has pushed since this token's (epoch %d)", rec.Epoch, epoch)
		case rec.Epoch == epoch:
			if subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(fenceHash)) != 1 {
				return decision.New(decision.FleetFenced, "the token has the epoch of the grant that pushed last (%d), but not its secret", epoch)
			}
			return nil
		}
		rec.Key, rec.Epoch, rec.Hash = key, epoch, fenceHash
		out, _ := json.Marshal(rec)
		if err := safefile.Replace(p, append(out, '\n'), 0o644); err != nil {
			return decision.Wrap(decision.FleetUnreachable, err, "write %s", p)
		}
		return nil
	}
}

// FenceChecker is the Checker of the shipped hook: the wt-fleet helper.
func FenceChecker(f ServerFence) (Checker, error) {
	h, err := fleet.NewHelper(f.Endpoints, os.Stderr)
	if err != nil {
		return nil, err
	}
	return h.Check, nil
}
