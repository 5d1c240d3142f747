// Package fleet is wt's fleet mode (docs/design.md, "Fleet mode"): one writer per task across
// machines, kept in etcd. A task's fleet lease is the key
// wt/<remote-id>/tasks/<task_key>, created only if absent and attached to an
// etcd lease whose TTL the holder keeps alive; the key's create revision is
// the fencing token, recorded in the local writer lease and checked at push.
//
// This package holds what every binary needs: the key space, the holder
// record, and the Coordinator interface. It imports no etcd code. The etcd
// client costs about 3 ms at every start of a binary that links it
// (docs/performance.md, "Start-up costs"), so wt-exec, wt-hook and wt-admin reach etcd
// through the wt-fleet helper binary (Helper), and only when the policy
// says coordinator etcd; core/fleet/etcdfleet is the etcd implementation,
// linked into wt-fleet and the tests.
package fleet

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// Coordinator is the distributed side of fleet mode.
type Coordinator interface {
	// Acquire creates the task key for holder if it is absent, attached to
	// a lease of ttl that the returned Session keeps alive.
	// FLEET_LEASE_HELD names the holder that has it; FLEET_UNREACHABLE
	// when etcd cannot be asked.
	Acquire(ctx context.Context, key string, holder Holder, ttl time.Duration) (Session, error)
	// Check refuses (FLEET_FENCED) unless key exists with create revision
	// revision and, when fenceHash is not "", a holder whose FenceHash is
	// fenceHash; FLEET_UNREACHABLE when etcd cannot be asked.
	Check(ctx context.Context, key string, revision int64, fenceHash string) error
	// List returns every task key under prefix.
	List(ctx context.Context, prefix string) ([]Entry, error)
	// Revoke ends the lease the key is attached to (the key goes with it)
	// and returns what it held; FLEET_NO_LEASE when there is no such key.
	Revoke(ctx context.Context, key string) (Entry, error)
	Close() error
}

// Session is a fleet lease being kept alive.
type Session interface {
	// Revision is the key's create revision: the fencing token.
	Revision() int64
	// LeaseID is etcd's lease id.
	LeaseID() int64
	// Lost is closed when the lease could not be kept alive (etcd
	// unreachable past the TTL): the entitlement to push is gone.
	Lost() <-chan struct{}
	// Release revokes the lease, which deletes the key.
	Release(ctx context.Context) error
}

// Holder is the value of a task key: who holds the task, from which
// machine. Host and MachineID name the machine; BootID, PID and
// StartTicks the process, as in a local lease.
type Holder struct {
	Host       string `json:"host"`
	MachineID  string `json:"machine_id"`
	BootID     string `json:"boot_id"`
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"`
	ClientID   string `json:"client_id"`
	LeaseID    string `json:"lease_id"`
	TaskKey    string `json:"task_key"`
	Since      string `json:"since"`
	// FenceHash is the SHA-256 of the grant's fencing secret (FenceSecret):
	// a remote that is handed the secret in a push can check it here, and
	// whoever reads etcd learns nothing that would let them push.
	FenceHash string `json:"fence_hash,omitempty"`
}

// HolderOf is the value a key takes for holder h, a process of this
// machine, under its local lease leaseID for task: the machine named by
// its host name and /etc/machine-id.
func HolderOf(h proc.Holder, leaseID, task string) Holder {
	host, _ := os.Hostname()
	machine, _ := os.ReadFile("/etc/machine-id")
	return Holder{Host: host, MachineID: strings.TrimSpace(string(machine)), BootID: h.BootID, PID: h.PID,
		StartTicks: h.StartTicks, ClientID: h.ClientID, LeaseID: leaseID, TaskKey: task, Since: store.Now()}
}

// Entry is one task key as etcd holds it.
type Entry struct {
	Key      string `json:"key"`
	TaskKey  string `json:"task_key"`
	Holder   Holder `json:"holder"`
	Revision int64  `json:"revision"`
	LeaseID  int64  `json:"etcd_lease"`
	// TTL is the lease's remaining time to live in seconds (-1 unknown).
	TTL int64 `json:"ttl"`
}

// Prefix is the key space of one remote.
func Prefix(remoteID string) string { return "wt/" + remoteID + "/tasks/" }

// PublicationKey is the key of one remote's publication lease: one lander
// per remote, across machines (wt-admin land). It is outside the tasks'
// prefix, so no task key can name it and the remote's fence never takes
// it for a task.
func PublicationKey(remoteID string) string { return "wt/" + remoteID + "/publication" }

// FenceOption is the push option that carries a task's fencing token to a
// remote that checks it: "wt-fence=<task>@<epoch>.<secret>". The epoch
// orders the grants of a task: in fleet mode the create revision of the
// task's fleet key, in local mode the grant's time in nanoseconds. The
// secret is 128 random bits made at the grant, which only the holder's
// command is given (in its environment, as a push option); the fleet key
// and the remote keep its SHA-256 alone.
const FenceOption = "wt-fence"

// SpaceOption is the push option that names the key space the pusher's
// fleet lease lives in ("wt-fence-space=<id>"): a remote whose fence
// checks another key space refuses the push as FLEET_KEY_SPACE_MISMATCH,
// which says what to fix, rather than as a lost lease.
const SpaceOption = "wt-fence-space"

// HolderOption is the push option that names, in local mode, the process
// that holds the lease the push's token was made for
// ("wt-fence-holder=<boot id>.<pid>.<start ticks>"): a remote on the same
// machine (the same boot) refuses the token once that process is gone,
// which is the lease's end. Elsewhere the remote cannot know.
const HolderOption = "wt-fence-holder"

// HolderValue is the value of HolderOption for id.
func HolderValue(id proc.Identity) string {
	return fmt.Sprintf("%s.%d.%d", id.BootID, id.PID, id.StartTicks)
}

// ParseHolderValue reads a HolderOption's value.
func ParseHolderValue(v string) (proc.Identity, error) {
	parts := strings.Split(v, ".")
	if len(parts) != 3 || parts[0] == "" {
		return proc.Identity{}, fmt.Errorf("%q is not BOOT.PID.START", v)
	}
	pid, err1 := strconv.Atoi(parts[1])
	start, err2 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return proc.Identity{}, fmt.Errorf("%q is not BOOT.PID.START", v)
	}
	return proc.Identity{BootID: parts[0], PID: pid, StartTicks: start}, nil
}

// SpaceOfKey is the key space of a fleet key (wt/<space>/tasks/<task>).
func SpaceOfKey(key string) string {
	rest, ok := strings.CutPrefix(key, "wt/")
	if !ok {
		return ""
	}
	space, _, ok := strings.Cut(rest, "/tasks/")
	if !ok {
		return ""
	}
	return space
}

// FenceToken is the push option for task at epoch with secret.
func FenceToken(task string, epoch int64, secret string) string {
	return fmt.Sprintf("%s=%s@%d.%s", FenceOption, task, epoch, secret)
}

// NewFenceSecret makes a grant's fencing secret: 128 random bits, hex.
func NewFenceSecret() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// FenceHash is the SHA-256, hex, of a fencing secret.
func FenceHash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// ParseFenceToken reads the value of a wt-fence push option (after "=").
func ParseFenceToken(v string) (task string, epoch int64, secret string, err error) {
	at := strings.LastIndexByte(v, '@')
	if at <= 0 {
		return "", 0, "", fmt.Errorf("%q is not TASK@EPOCH.SECRET", v)
	}
	num, sec, ok := strings.Cut(v[at+1:], ".")
	epoch, perr := strconv.ParseInt(num, 10, 64)
	if !ok || perr != nil || epoch <= 0 || len(sec) != 32 || strings.Trim(sec, "0123456789abcdef") != "" {
		return "", 0, "", fmt.Errorf("%q is not TASK@EPOCH.SECRET (a token of an older wt has no secret)", v)
	}
	return v[:at], epoch, sec, nil
}

// Key is the fleet key of a task.
func Key(remoteID, taskKey string) string { return Prefix(remoteID) + taskKey }

// RemoteID names a remote's key space: the first 16 hex digits of the
// SHA-256 of its normalized URL (Spelling{}: paths case-folded, ssh host
// aliases kept).
func RemoteID(remoteURL string) string { return RemoteIDIn(remoteURL, "") }

// RemoteIDIn is RemoteID for a remote URL as the repository whose working
// tree top is base reads it: a relative local path is resolved against
// base (where git resolves it), as it would be by git there, and a local
// path's symlinks are resolved, so that every spelling of one remote gives
// one key space.
func RemoteIDIn(remoteURL, base string) string { return Spelling{}.RemoteIDIn(remoteURL, base) }

// Spelling is how the spellings of one remote's URL are made one key
// space. By default a network URL's path is case-folded, whatever the
// host: forges (GitHub, GitLab, Gitea, Forgejo, Bitbucket) treat
// Team/App and team/app as one repository, and a clone that spelled it
// otherwise would get a key space of its own, a second holder of every
// task. CaseSensitive keeps the case, for a server whose paths differ by
// case (a plain ssh or http-backend server on a case-sensitive file
// system, where both spellings may be two repositories). ResolveHost, when
// set, maps an ssh host (an alias of ~/.ssh/config) to the host it
// connects to (SSHResolver). Local paths keep their case.
type Spelling struct {
	CaseSensitive bool
	ResolveHost   func(host string) string
}

// RemoteIDIn is RemoteIDIn under sp.
func (sp Spelling) RemoteIDIn(remoteURL, base string) string {
	sum := sha256.Sum256([]byte(sp.NormalizeURLIn(remoteURL, base)))
	return hex.EncodeToString(sum[:8])
}

// NormalizeURLIn is NormalizeURL with a relative local path resolved
// against base ("" for the working directory) and a local path's symlinks
// resolved (with or without its ".git").
func NormalizeURLIn(raw, base string) string { return Spelling{}.NormalizeURLIn(raw, base) }

// NormalizeURLIn is NormalizeURLIn under sp.
func (sp Spelling) NormalizeURLIn(raw, base string) string {
	s := strings.TrimPrefix(strings.TrimSpace(raw), "file://")
	if isLocalPath(s) {
		if !filepath.IsAbs(s) && base != "" {
			s = filepath.Join(base, s)
		}
		for _, p := range []string{s, strings.TrimRight(s, "/") + ".git"} {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				s = real
				break
			}
		}
	}
	return sp.NormalizeURL(s)
}

// LocalRemoteDir is the git dir of a remote URL that names a repository on
// this machine (symlinks resolved; a bare repository or a checkout's
// .git), "" otherwise.
func LocalRemoteDir(raw, base string) string {
	s := strings.TrimPrefix(strings.TrimSpace(raw), "file://")
	if !isLocalPath(s) {
		return ""
	}
	if !filepath.IsAbs(s) && base != "" {
		s = filepath.Join(base, s)
	}
	for _, p := range []string{s, strings.TrimRight(s, "/") + ".git", filepath.Join(s, ".git")} {
		if fi, err := os.Stat(filepath.Join(p, "config")); err == nil && fi.Mode().IsRegular() {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				return real
			}
		}
	}
	return ""
}

// isLocalPath reports whether a remote URL (file:// taken off) is a path
// on this machine: no scheme, and not scp-like host:path.
func isLocalPath(s string) bool {
	if u, err := url.Parse(s); err == nil && u.Scheme != "" && u.Host != "" {
		return false
	}
	i := strings.Index(s, ":")
	return i <= 0 || strings.Contains(s[:i], "/")
}

// hostPath is a hosted remote's host and path, the host lower-cased and,
// on a service whose paths are not case sensitive, the path too.
func (sp Spelling) hostPath(host, p string, ssh bool) string {
	if ssh && sp.ResolveHost != nil {
		host = sp.ResolveHost(host)
	}
	host = strings.ToLower(host)
	p = path.Clean("/" + p)
	if !sp.CaseSensitive {
		p = strings.ToLower(p)
	}
	return host + p
}

// NormalizeURL reduces a git remote URL to host and path: scheme, user,
// port, a trailing ".git" and trailing slashes go, the host and the path
// are lower-cased (Spelling), and scp-like "user@host:path" is read as ssh. A local path is made clean
// (and absolute when it is not). So https://Host/a/b.git,
// ssh://git@host:22/a/b and git@host:a/b all give "host/a/b".
func NormalizeURL(raw string) string { return Spelling{}.NormalizeURL(raw) }

// NormalizeURL is NormalizeURL under sp.
func (sp Spelling) NormalizeURL(raw string) string {
	s := strings.TrimSpace(raw)
	trim := func(p string) string {
		p = strings.TrimRight(p, "/")
		p = strings.TrimSuffix(p, ".git")
		return strings.TrimRight(p, "/")
	}
	if u, err := url.Parse(s); err == nil && u.Scheme != "" && u.Host != "" {
		return sp.hostPath(u.Hostname(), trim(u.Path), u.Scheme == "ssh" || u.Scheme == "git+ssh" || u.Scheme == "ssh+git")
	}
	s = strings.TrimPrefix(s, "file://")
	// scp-like: [user@]host:path, where host has no slash before the colon.
	if i := strings.Index(s, ":"); i > 0 && !strings.Contains(s[:i], "/") {
		host := s[:i]
		if j := strings.LastIndex(host, "@"); j >= 0 {
			host = host[j+1:]
		}
		return sp.hostPath(host, trim(s[i+1:]), true)
	}
	if abs, err := filepath.Abs(s); err == nil {
		s = abs
	}
	return trim(filepath.Clean(s))
}
