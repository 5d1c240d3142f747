package liveness

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// fake is a reading of the processes made up by a test.
type fake struct {
	boot    string
	bootErr error
	live    map[proc.Identity]bool
	groups  map[int][]int // leader pid -> members
	env     map[string][]int
	cgroups map[string][]int
	cgErr   error
	uses    []proc.Use
}

func (f fake) BootID() (string, error)            { return f.boot, f.bootErr }
func (f fake) IsLive(id proc.Identity) bool       { return f.live[id] }
func (f fake) GroupMembers(l int, _ uint64) []int { return f.groups[l] }
func (f fake) PathsInUse(string) ([]proc.Use, error) {
	return f.uses, nil
}
func (f fake) CarryingEnv(name, value string) []int { return f.env[name+"="+value] }
func (f fake) CgroupMembers(dir string) ([]int, error) {
	return f.cgroups[dir], f.cgErr
}

var holder = proc.Holder{ClientID: "agent", PID: 100, BootID: "boot-1", StartTicks: 7}

// TestAlive: what keeps a holder alive, and what never proves it dead.
func TestAlive(t *testing.T) {
	child := &store.ChildGroup{PID: 200, StartTicks: 9, Cgroup: "/sys/fs/cgroup/wt-lease-x"}
	for _, c := range []struct {
		name  string
		ev    fake
		child *store.ChildGroup
		skip  []int
		want  string // a part of the answer; "" for none
	}{
		{"the holder runs", fake{boot: "boot-1", live: map[proc.Identity]bool{holder.Identity(): true}}, nil, nil, "its holder is running"},
		{"nothing runs", fake{boot: "boot-1"}, child, nil, ""},
		{"another boot's holder is dead whatever runs", fake{boot: "boot-2", groups: map[int][]int{100: {101}}}, child, nil, ""},
		{"an unreadable boot id proves nothing dead", fake{bootErr: errors.New("no /proc")}, nil, nil, "cannot be proven dead"},
		{"its process group remains", fake{boot: "boot-1", groups: map[int][]int{100: {101, 102}}}, nil, nil, "2 process(es) remain in its holder's process group"},
		{"the asker's own are no evidence", fake{boot: "boot-1", groups: map[int][]int{100: {101}}}, nil, []int{101}, ""},
		{"its child's group remains", fake{boot: "boot-1", groups: map[int][]int{200: {201}}}, child, nil, "remain in its child's process group (leader pid 200)"},
		{"its cgroup holds a daemon", fake{boot: "boot-1", cgroups: map[string][]int{child.Cgroup: {300}}}, child, nil, "remain in its command's cgroup"},
		{"an unreadable cgroup is not empty", fake{boot: "boot-1", cgErr: errors.New("EACCES")}, child, nil, "cannot be proven empty"},
	} {
		got := Alive(c.ev, holder, c.child, c.skip...)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: Alive = %q, want %q", c.name, got, c.want)
		}
		if Occupied(c.ev, store.Lease{Holder: holder, Child: c.child}) != (Alive(c.ev, holder, c.child) != "") {
			t.Errorf("%s: Occupied disagrees with Alive", c.name)
		}
	}
}

// TestFreshness: a missing worktree wins over a dead holder, which wins
// over expiry; a dead holder whose processes remain is orphaned.
func TestFreshness(t *testing.T) {
	dir := t.TempDir()
	past, future := "2020-01-01T00:00:00Z", "2999-01-01T00:00:00Z"
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	running := fake{boot: "boot-1", live: map[proc.Identity]bool{holder.Identity(): true}}
	lease := func(path string, expires *string) store.Lease {
		return store.Lease{LeaseID: "L", WorktreePath: path, Holder: holder, ExpiresAt: expires}
	}
	for _, c := range []struct {
		name string
		ev   fake
		l    store.Lease
		want string
	}{
		{"active", running, lease(dir, &future), FreshActive},
		{"active, no expiry", running, lease(dir, nil), FreshActive},
		{"expired", running, lease(dir, &past), FreshExpired},
		{"dead", fake{boot: "boot-1"}, lease(dir, &past), FreshDeadProcess},
		{"orphaned: its group remains", fake{boot: "boot-1", groups: map[int][]int{100: {101}}}, lease(dir, nil), FreshOrphaned},
		{"orphaned: a process carries the lease", fake{boot: "boot-1", env: map[string][]int{LeaseEnv + "=L": {400}}}, lease(dir, nil), FreshOrphaned},
		{"missing worktree", running, lease(filepath.Join(dir, "gone"), nil), FreshMissingWorktree},
	} {
		if got := Freshness(c.ev, c.l, now); got != c.want {
			t.Errorf("%s: Freshness = %s, want %s", c.name, got, c.want)
		}
	}
	bad := "not a time"
	if !Expired(lease(dir, &bad), now) {
		t.Error("an unreadable expiry does not count as expired (fail closed)")
	}
}

// TestCarriersAndUsers: the lease's carriers and the worktree's users,
// less the processes that are not evidence.
func TestCarriersAndUsers(t *testing.T) {
	ev := fake{env: map[string][]int{LeaseEnv + "=L": {5, 6}}, uses: []proc.Use{{PID: 5, Why: "cwd"}, {PID: 6, Why: "open file"}}}
	if got := Carriers(ev, "L"); !strings.Contains(got, "2 process(es) carry the lease") || !strings.Contains(got, "pid 5") {
		t.Errorf("Carriers = %q", got)
	}
	if got := Carriers(ev, "L", 5, 6); got != "" {
		t.Errorf("Carriers skipping both = %q", got)
	}
	if got := Carriers(ev, "other"); got != "" {
		t.Errorf("Carriers of another lease = %q", got)
	}
	users, err := Users(ev, "/w", 5)
	if err != nil || len(users) != 1 || users[0].PID != 6 {
		t.Errorf("Users skipping 5 = %v, %v", users, err)
	}
}

// TestHolderLocked: only a lock file that names the lease and is held
// proves the holder alive; anything else (absent, another lease, free, a
// directory) does not.
func TestHolderLocked(t *testing.T) {
	dir := t.TempDir()
	if HolderLocked(dir, "L") {
		t.Error("no lock file: locked")
	}
	p := HolderLockPath(dir)
	if err := os.WriteFile(p, []byte("L"), 0o644); err != nil {
		t.Fatal(err)
	}
	if HolderLocked(dir, "L") {
		t.Error("a free lock file: locked")
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	// A flock(2) belongs to the open file: one held through another open
	// file of this process is held for HolderLocked's.
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if !HolderLocked(dir, "L") {
		t.Error("a held lock file naming the lease: not locked")
	}
	if HolderLocked(dir, "M") {
		t.Error("a held lock file naming another lease: locked")
	}
}
