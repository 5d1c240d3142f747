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
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/store"
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
	// that landed (LocalFence).
	Local bool `json:"local,omitempty"`
	// Auth is how the remote's hook proves itself to etcd (files on the
	// server, never their contents).
	Auth store.EtcdAuth `json:"etcd_auth"`
	// URLBase and Root: a repository fenced under a forge's root
	// (install --server --server-root) with no key space of its own takes
	// URLBase followed by its path under Root as its URL.
	URLBase string `json:"url_base,omitempty"`
	Root    string `json:"root,omitempty"`
	// CaseSensitive keeps the URL path's case in the key space.
	CaseSensitive bool `json:"case_sensitive,omitempty"`
	// Shared is the repository's core.sharedRepository, read with the
	// fence's keys (SharedModes: the local fence's file modes).
	Shared string `json:"-"`
}

// Git config keys of a server fence.
const (
	FenceEndpointsKey = "wt.fence.endpoints"
	FenceKeySpaceKey  = "wt.fence.keyspace"
	FencePrefixKey    = "wt.fence.branchprefix"
	FenceLocalKey     = "wt.fence.local"
	FenceURLBaseKey   = "wt.fence.urlbase"
	FenceRootKey      = "wt.fence.root"
	FenceCaseKey      = "wt.fence.casesensitive"
	// etcd's credentials on the server: files, and a user.
	FenceCertKey         = "wt.fence.etcdcert"
	FenceKeyKey          = "wt.fence.etcdkey"
	FenceCACertKey       = "wt.fence.etcdcacert"
	FenceUserKey         = "wt.fence.etcduser"
	FencePasswordFileKey = "wt.fence.etcdpasswordfile"
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
		case FenceURLBaseKey:
			f.URLBase = v
		case FenceRootKey:
			f.Root = v
		case FenceCaseKey:
			f.CaseSensitive = v == "true"
		case "core.sharedrepository":
			f.Shared = v
		case FenceCertKey:
			f.Auth.Cert = v
		case FenceKeyKey:
			f.Auth.Key = v
		case FenceCACertKey:
			f.Auth.CACert = v
		case FenceUserKey:
			f.Auth.User = v
		case FencePasswordFileKey:
			f.Auth.PasswordFile = v
		}
	}
	// No key space: the hook derives it (its own path in local mode, the
	// URL base and root in fleet mode; see install --server-root).
	return f, len(f.Endpoints) > 0 || f.Local
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
	tokens, err := pushTokens(options)
	if err != nil {
		return err
	}
	for _, u := range updates {
		task, ok := f.taskOf(u.Ref, tokens)
		if !ok {
			continue
		}
		if space, ok := pushSpace(options); ok && !f.Local && space != f.KeySpace {
			return decision.Say(decision.FleetKeySpaceMismatch, "this-push", u.Ref, space, f.KeySpace).
				WithHint("make them one: install the fence with the URL the clients use (wt-hook install --server --remote-url URL), or have the clients name the remote as the fence does (git remote set-url origin URL); wt-admin fleet status shows a clone's key space")
		}
		toks := tokens[task]
		if len(toks) > 1 {
			// Exactly one token per task: a pusher that tries several is
			// guessing.
			return decision.Say(decision.FleetFenced, "this-push", u.Ref, task, len(toks)).
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
			return decision.Say(decision.FleetFenced, "this-push-updates", u.Ref, task, why).
				WithHint("push from the task's writer: a wt-exec run with wt-admin policy --fleet-server-fence on gives every git push its token")
		}
		key := fleet.Key(f.KeySpace, task)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		last := check(ctx, key, toks[0].epoch, fleet.FenceHash(toks[0].secret))
		cancel()
		if last != nil {
			d, ok := decision.As(last)
			if !ok {
				d = decision.SayWrap(decision.FleetUnreachable, last, "check-fencing", key)
			}
			if d.Code == decision.FleetUnreachable {
				unasked := decision.Say(decision.FleetUnreachable, "push-unasked-etcd", u.Ref, task, d.Message)
				if f.Local {
					unasked = decision.Say(decision.FleetUnreachable, "push-unasked-fence", u.Ref, task, d.Message)
				}
				return unasked.WithHint("task branches take pushes again once the fence can be asked; other refs are not affected")
			}
			return decision.Within(d, "push-stale-token", u.Ref, toks[0].epoch).
				WithHint("the task's lease was lost, taken over, or never this pusher's; the current writer pushes (wt-admin status, or wt-admin fleet status, shows who holds task %s)", task)
		}
		if f.Local {
			if err := leaseLive(u.Ref, task, options); err != nil {
				return err
			}
		}
	}
	return nil
}

// leaseLive is local mode's check that the token's lease has not ended,
// where the remote can know it: the push names its lease's holder
// (fleet.HolderOption), and a holder on this machine (the same boot) must
// still run. A holder of another boot cannot be checked here, and passes;
// what cannot be read is no evidence that it ended, and passes.
func leaseLive(ref, task string, options []string) error {
	var v string
	for _, o := range options {
		if h, ok := strings.CutPrefix(o, fleet.HolderOption+"="); ok {
			v = h
		}
	}
	if v == "" {
		return decision.Say(decision.FleetFenced, "this-push-updates-task", ref, task).
			WithHint("push from the task's writer, under the wt-exec that holds the lease: it gives every push its token and its holder")
	}
	id, err := fleet.ParseHolderValue(v)
	if err != nil {
		return decision.Say(decision.InvalidHookInput, "push-option", fleet.HolderOption, err).
			WithHint("push from the task's writer under a wt-exec of this version")
	}
	boot, err := proc.BootID()
	if err != nil || boot != id.BootID {
		return nil
	}
	live, err := proc.IsLive(proc.NewReader(), id)
	if err != nil || live {
		return nil
	}
	return decision.Say(decision.FleetFenced, "this-push-updates-token", ref, id).
		WithHint("push from the task's current writer: a new wt-exec run takes the lease and gives its pushes a token of their own (wt-admin status shows task %s)", task)
}

// pushTokens reads the fencing tokens of a push's options, per task.
func pushTokens(options []string) (map[string][]token, error) {
	tokens := map[string][]token{}
	for _, o := range options {
		v, ok := strings.CutPrefix(o, fleet.FenceOption+"=")
		if !ok {
			continue
		}
		task, epoch, secret, err := fleet.ParseFenceToken(v)
		if err != nil {
			return nil, decision.Say(decision.InvalidHookInput, "push-option", fleet.FenceOption, err).
				WithHint("push from the task's writer under a wt-exec of this version, which gives every push its token")
		}
		t := token{epoch, secret}
		if !slices.Contains(tokens[task], t) {
			tokens[task] = append(tokens[task], t)
		}
	}
	return tokens, nil
}

// pushSpace is the key space a push names (fleet.SpaceOption), if any.
func pushSpace(options []string) (string, bool) {
	for _, o := range options {
		if v, ok := strings.CutPrefix(o, fleet.SpaceOption+"="); ok {
			return v, true
		}
	}
	return "", false
}

// taskOf is the task whose branch ref is, if it is a task branch.
func (f ServerFence) taskOf(ref string, tokens map[string][]token) (string, bool) {
	task, ok := strings.CutPrefix(ref, "refs/heads/"+f.BranchPrefix)
	if !ok || task == "" {
		return "", false
	}
	// The task-dir layout's branch is <prefix><task>/work: a token for
	// that task is the one it needs (a flat task key ending in /work
	// keeps its own reading).
	if t, dir := strings.CutSuffix(task, "/"+TaskDirLeaf); dir && len(tokens[task]) == 0 && t != "" {
		task = t
	}
	return task, true
}

// PostReceive records, after a push has landed (githooks(5)
// post-receive: the refs that were updated on stdin), the token of each
// task branch it updated: in local mode the remote knows a grant only
// once a push of it has landed, so that a push refused after the fence
// let it through (by another hook, a protected branch, a failed ref
// update) records nothing and locks no one out. A push with no token or
// several for a task records nothing for it (pre-receive refused those).
func PostReceive(f ServerFence, in io.Reader, options []string, record func(key string, epoch int64, fenceHash string) error) error {
	updates, err := ParseRefUpdates(in)
	if err != nil {
		return err
	}
	tokens, err := pushTokens(options)
	if err != nil {
		return err
	}
	var errs []error
	for _, u := range updates {
		task, ok := f.taskOf(u.Ref, tokens)
		if !ok || len(tokens[task]) != 1 {
			continue
		}
		t := tokens[task][0]
		if err := record(fleet.Key(f.KeySpace, task), t.epoch, fleet.FenceHash(t.secret)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// LocalFence is a remote's fence in local mode (no coordinator): its git
// dir keeps, per task, the newest epoch of a push that landed and the
// SHA-256 of that grant's secret (wt-fence/<sha256 of the key>.json,
// under an flock). Check judges a push before it lands (pre-receive) and
// writes nothing; Record advances the record once it has landed
// (post-receive).
//
// A token with a newer epoch is a newer grant, which fences the older one
// once it has landed; the same epoch must carry the same secret; an older
// epoch is stale. Local mode's epochs are the grants' times, which the
// remote cannot verify: one dated more than MaxAhead past the remote's
// clock is refused, so that no token, however minted, can fence a task
// for longer than that. A record that cannot be read is never accepted
// over (FLEET_UNREACHABLE).
type LocalFence struct {
	GitDir string
	// DirMode and FileMode are the modes of wt-fence and its files: as
	// the repository's core.sharedRepository has them (SharedModes).
	DirMode, FileMode os.FileMode
	// MaxAhead bounds an epoch past Now (DefaultMaxAhead).
	MaxAhead time.Duration
	Now      func() time.Time
}

// DefaultMaxAhead is how far past the remote's clock a local-mode epoch
// (its grant's time) may be: clocks of the machines that push to one
// remote may disagree by this much.
const DefaultMaxAhead = 10 * time.Minute

// localRecord is a task's fence record in local mode.
type localRecord struct {
	Key   string `json:"key"`
	Epoch int64  `json:"epoch"`
	Hash  string `json:"fence_hash"`
}

// Check is l's Checker.
func (l LocalFence) Check(_ context.Context, key string, epoch int64, fenceHash string) error {
	if now := l.now(); epoch > now.Add(l.maxAhead()).UnixNano() {
		return decision.Say(decision.FleetFenced, "token-grant",
			time.Unix(0, epoch).UTC().Format(time.RFC3339), l.maxAhead(), now.UTC().Format(time.RFC3339))
	}
	return l.locked(key, false, func(rec *localRecord, _ bool) (bool, error) {
		switch {
		case rec.Epoch > epoch:
			return false, decision.Say(decision.FleetFenced, "newer-grant", rec.Epoch, epoch)
		case rec.Epoch == epoch && subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(fenceHash)) != 1:
			return false, decision.Say(decision.FleetFenced, "token-has", epoch)
		}
		return false, nil
	})
}

// Record advances key's record to epoch once a push with that token has
// landed; an older epoch leaves it (a newer grant landed in between).
func (l LocalFence) Record(key string, epoch int64, fenceHash string) error {
	return l.locked(key, true, func(rec *localRecord, _ bool) (bool, error) {
		if epoch <= rec.Epoch {
			return false, nil
		}
		rec.Key, rec.Epoch, rec.Hash = key, epoch, fenceHash
		return true, nil
	})
}

func (l LocalFence) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l LocalFence) maxAhead() time.Duration {
	if l.MaxAhead > 0 {
		return l.MaxAhead
	}
	return DefaultMaxAhead
}

// locked runs fn on key's record under its lock, and writes the record
// when fn says so. Without write, a missing fence directory is an empty
// record and nothing is created.
func (l LocalFence) locked(key string, write bool, fn func(rec *localRecord, found bool) (bool, error)) error {
	dir := filepath.Join(l.GitDir, "wt-fence")
	dirMode, fileMode := l.DirMode, l.FileMode
	if dirMode == 0 {
		dirMode, fileMode = 0o755, 0o644
	}
	sum := sha256.Sum256([]byte(key))
	p := filepath.Join(dir, hex.EncodeToString(sum[:16])+".json")
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) && !write {
		_, err := fn(&localRecord{}, false)
		return err
	}
	if err := mkdirMode(dir, dirMode); err != nil {
		return l.fenceAccess(err, "make", dir)
	}
	lock, err := os.OpenFile(p+".lock", os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return l.fenceAccess(err, "open", p+".lock")
	}
	defer lock.Close()
	lock.Chmod(fileMode) // past the umask; a lock someone else made stays theirs
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return decision.SayWrap(decision.FleetUnreachable, err, "lock", p)
	}
	var rec localRecord
	b, err := safefile.Read(p, 1<<16, safefile.NoFollow) // never blocking on a FIFO planted there
	found := err == nil
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return l.fenceAccess(err, "read", p)
	default:
		if jerr := json.Unmarshal(b, &rec); jerr != nil || rec.Key != key || rec.Epoch <= 0 {
			return decision.Say(decision.FleetUnreachable, "not-fence", p, key).
				WithHint("look at it; removing it lets the next grant's token in")
		}
	}
	changed, err := fn(&rec, found)
	if err != nil || !changed {
		return err
	}
	out, _ := json.Marshal(rec)
	if err := safefile.Replace(p, append(out, '\n'), fileMode); err != nil {
		return l.fenceAccess(err, "write", p)
	}
	return nil
}

// mkdirMode makes dir with mode (past the umask, setgid included) unless
// it exists.
func mkdirMode(dir string, mode os.FileMode) error {
	if err := os.Mkdir(dir, mode.Perm()); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	return os.Chmod(dir, mode)
}

// fenceAccess is FLEET_UNREACHABLE for a fence record this process could
// not use; a permission error's hint names the fix (a repository that
// several server users push to must be shared, and its fence with it).
func (l LocalFence) fenceAccess(err error, op, path string) error {
	d := decision.SayWrap(decision.FleetUnreachable, err, "as-given", op, path)
	if errors.Is(err, fs.ErrPermission) {
		repo := l.GitDir
		return d.WithHint("the fence record belongs to another server user: share the repository with the users that push to it, and its fence with it: git --git-dir %s config core.sharedRepository group && chmod -R g+w %s",
			repo, filepath.Join(repo, "wt-fence"))
	}
	return d
}

// SharedModes are the modes of a repository's fence directory and files
// for its core.sharedRepository value (git-config(1)): group-writable (and
// setgid, so new files keep the group) where the repository is shared;
// 0755 and 0644 where it is not.
func SharedModes(shared string) (dir, file os.FileMode) {
	switch v := strings.ToLower(strings.TrimSpace(shared)); v {
	case "", "false", "umask", "0", "no", "off":
		return 0o755, 0o644
	case "group", "true", "1", "yes", "on":
		return 0o775 | os.ModeSetgid, 0o664
	case "all", "world", "everybody", "2":
		return 0o775 | os.ModeSetgid, 0o664
	default:
		n, err := strconv.ParseUint(v, 8, 32)
		if err != nil || n&0o600 != 0o600 {
			return 0o755, 0o644 // git refuses such a value itself
		}
		file = os.FileMode(n) & 0o666
		dir = file | (file&0o444)>>2 | os.ModeSetgid // x where r
		return dir, file
	}
}

// FenceChecker is the Checker of the shipped hook: the wt-fleet helper.
func FenceChecker(f ServerFence) (Checker, error) {
	h, err := fleet.NewHelper(f.Endpoints, f.Auth, os.Stderr)
	if err != nil {
		return nil, err
	}
	return h.Check, nil
}
