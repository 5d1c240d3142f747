package proc

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Scan is one reading of /proc. Every check in a pass (group liveness, path
// users of several worktrees) answers from the same reading, so a pass costs
// one walk over the processes, not one per question. The reading is as old as
// the Scan: a process may start or end just after it.
//
// The references of each process (cwd, open files, mappings) are the expensive
// part and are read once, on the first call of PathsInUse. A Scan is safe for
// use by one goroutine at a time.
type Scan struct {
	self int
	// exclude is the asker and its ancestors; own is its descendants
	// (what it started itself), left out of PathsInUse only: a process the
	// asker started that carries a lease in its environment is still that
	// lease's.
	exclude  map[int]bool
	own      map[int]bool
	procs    []Stat
	byPID    map[int]int
	refsOnce sync.Once
	refs     [][]ref // indexed like procs
}

// Why a process uses a path.
const (
	WhyCwd     = "cwd"
	WhyFile    = "open file"
	WhyMapping = "mapping"
)

type ref struct {
	why  string
	path string
}

// Use is one process found using a path.
type Use struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
	Why     string `json:"why"`
	Path    string `json:"path"`
}

// NewScan reads the stat of every process once. The calling process, its
// ancestors and its descendants are marked so that PathsInUse never
// reports them: what the asker started (wt-exec's fleet helper, the git it
// asks for the fleet's remote, before any command of its own exists) is
// its own doing, never evidence that another process uses a path.
func NewScan() (*Scan, error) { return NewScanOf(nil) }

// NewScanOf is NewScan of the processes whose pid keep accepts (nil: all):
// a partial reading, in which only those are known (their groups,
// descendants and ancestors beyond them are not).
func NewScanOf(keep func(pid int) bool) (*Scan, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close() // Best effort: read-only directory.
	if err != nil {
		return nil, err
	}
	s := &Scan{self: os.Getpid(), byPID: make(map[int]int, len(names))}
	var pids []int
	for _, n := range names {
		if n == "" || n[0] < '0' || n[0] > '9' {
			continue
		}
		if pid, err := strconv.Atoi(n); err == nil && (keep == nil || keep(pid)) {
			pids = append(pids, pid)
		}
	}
	// The kernel makes each stat file as it is read (most of a scan's
	// time): the reads are shared among a few goroutines, one per CPU.
	stats := make([]Stat, len(pids))
	ok := make([]bool, len(pids))
	workers := min(runtime.GOMAXPROCS(0), 4, max(1, len(pids)/32))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := NewReader()
			for i := w; i < len(pids); i += workers {
				st, err := r.Stat(pids[i])
				stats[i], ok[i] = st, err == nil // an error: it ended between the listing and the read
			}
		}()
	}
	wg.Wait()
	for i, st := range stats {
		if ok[i] {
			s.byPID[st.PID] = len(s.procs)
			s.procs = append(s.procs, st)
		}
	}
	s.exclude = s.chainOf(s.self)
	s.own = map[int]bool{}
	for _, pid := range s.Descendants(s.self) {
		s.own[pid] = true
	}
	return s, nil
}

// chainOf is pid and its ancestors, from this reading.
func (s *Scan) chainOf(pid int) map[int]bool {
	set := map[int]bool{}
	for i := 0; i < maxChain && pid >= 1; i++ {
		set[pid] = true
		j, ok := s.byPID[pid]
		if !ok {
			break
		}
		pid = s.procs[j].PPID
	}
	return set
}

// Len is the number of processes in the reading.
func (s *Scan) Len() int { return len(s.procs) }

// Process returns the stat of pid in this reading.
func (s *Scan) Process(pid int) (Stat, bool) {
	j, ok := s.byPID[pid]
	if !ok {
		return Stat{}, false
	}
	return s.procs[j], true
}

// IsLive reports whether the process id is in this reading with the same start
// ticks (and the boot is the same), and has not exited: a zombie waiting for
// its parent to reap it runs no more code.
func (s *Scan) IsLive(id Identity) bool {
	boot, err := BootID()
	if err != nil || id.BootID != boot {
		return false
	}
	st, ok := s.Process(id.PID)
	return ok && st.StartTicks == id.StartTicks && st.Running()
}

// GroupMembers returns the pids of the running processes (zombies excluded)
// in the process group led (originally) by leader, which started at
// leaderTicks.
//
// The kernel does not hand out a pid while it is still in use as a process
// group id, so: if a process with the leader's pid is running but started at
// other ticks, the pid was reused and the original group is empty. Otherwise
// members are the processes whose pgrp is the leader's pid and which did not
// start before the leader (a member of the original group cannot be older
// than the group). Doubt counts as membership: it keeps a lease alive.
func (s *Scan) GroupMembers(leader int, leaderTicks uint64) []int {
	if st, ok := s.Process(leader); ok && st.StartTicks != leaderTicks {
		return nil
	}
	var out []int
	for _, p := range s.procs {
		if p.PGRP == leader && p.StartTicks >= leaderTicks && p.Running() {
			out = append(out, p.PID)
		}
	}
	return out
}

// Descendants returns every process in the reading below pid (not pid itself).
func (s *Scan) Descendants(pid int) []int {
	children := map[int][]int{}
	for _, p := range s.procs {
		children[p.PPID] = append(children[p.PPID], p.PID)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 && len(out) < len(s.procs) {
		cur := queue[0]
		queue = queue[1:]
		for _, c := range children[cur] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// PathsInUse returns the processes whose cwd, open files or file mappings lie
// inside dir (dir itself included), excluding the asking process, its
// ancestors and its descendants. dir is made absolute and its symlinks resolved, because the
// kernel reports resolved paths. One Use per process: the first reason found.
func (s *Scan) PathsInUse(dir string) ([]Use, error) {
	root, err := Canonical(dir)
	if err != nil {
		return nil, err
	}
	s.refsOnce.Do(s.readRefs)
	var out []Use
	for i, refs := range s.refs {
		for _, rf := range refs {
			if within(rf.path, root) {
				pid := s.procs[i].PID
				out = append(out, Use{PID: pid, Why: rf.why, Path: rf.path, Command: Command(pid)})
				break
			}
		}
	}
	return out, nil
}

// UsesBy is PathsInUse among the processes keep accepts: only theirs are
// read (their cwd, open files and mappings), which is what makes it cheap
// when keep accepts few.
func (s *Scan) UsesBy(dir string, keep func(Stat) bool) ([]Use, error) {
	root, err := Canonical(dir)
	if err != nil {
		return nil, err
	}
	rr := &refReader{Reader: NewReader(), link: make([]byte, unix.PathMax), dirent: make([]byte, 8192)}
	var out []Use
	for _, p := range s.procs {
		if s.exclude[p.PID] || s.own[p.PID] || !keep(p) {
			continue
		}
		for _, rf := range rr.refs(p.PID) {
			if within(rf.path, root) {
				out = append(out, Use{PID: p.PID, Why: rf.why, Path: rf.path, Command: Command(p.PID)})
				break
			}
		}
	}
	return out, nil
}

func within(path, root string) bool {
	if root == "/" {
		return strings.HasPrefix(path, "/")
	}
	return strings.HasPrefix(path, root) && (len(path) == len(root) || path[len(root)] == '/')
}

// Canonical makes dir absolute (relative to the process's cwd) and resolves
// the symlinks of its longest existing prefix, the way git and the kernel
// report paths; a missing tail is kept as written.
func Canonical(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	rest := ""
	cur := abs
	for {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest), nil
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// readRefs reads cwd, fds and maps of every process but the asker, its
// ancestors and its descendants,
// spread over the available CPUs: the work is system calls on independent
// files, and on a 2-core machine two readers halve the wall time.
func (s *Scan) readRefs() {
	s.refs = make([][]ref, len(s.procs))
	workers := runtime.GOMAXPROCS(0)
	if workers > 4 {
		workers = 4
	}
	var wg sync.WaitGroup
	next := make(chan int, len(s.procs))
	for i := range s.procs {
		if pid := s.procs[i].PID; !s.exclude[pid] && !s.own[pid] {
			next <- i
		}
	}
	close(next)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rr := &refReader{Reader: NewReader(), link: make([]byte, unix.PathMax), dirent: make([]byte, 8192)}
			for i := range next {
				s.refs[i] = rr.refs(s.procs[i].PID)
			}
		}()
	}
	wg.Wait()
}

type refReader struct {
	*Reader
	link   []byte
	dirent []byte
	names  []string
}

func (rr *refReader) readlink(path string) (string, bool) {
	n, err := unix.Readlink(path, rr.link)
	if err != nil || n <= 0 || rr.link[0] != '/' {
		return "", false // sockets, pipes and anon inodes are not paths
	}
	// A path removed since it was opened reads "PATH (deleted)": it still
	// names where the process is (a worktree deleted under it).
	return strings.TrimSuffix(string(rr.link[:n]), deletedSuffix), true
}

const deletedSuffix = " (deleted)"

// readdir lists a /proc directory with raw system calls (os.Open would
// also try to register each one with the poller: two more calls a process,
// thousands a scan). A process that exits mid-read lists what was read.
func (rr *refReader) readdir(dir string) []string {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	rr.names = rr.names[:0]
	for {
		n, err := unix.ReadDirent(fd, rr.dirent)
		if err != nil || n <= 0 {
			return rr.names
		}
		_, _, rr.names = unix.ParseDirent(rr.dirent[:n], -1, rr.names)
	}
}

func (rr *refReader) refs(pid int) []ref {
	var out []ref
	base := "/proc/" + strconv.Itoa(pid)
	if p, ok := rr.readlink(base + "/cwd"); ok {
		out = append(out, ref{WhyCwd, p})
	}
	fdBase := base + "/fd/"
	for _, n := range rr.readdir(fdBase) {
		if p, ok := rr.readlink(fdBase + n); ok {
			out = append(out, ref{WhyFile, p})
		}
	}
	if b, err := rr.readFile(rr.procPath(pid, "maps"), false); err == nil {
		last := ""
		for len(b) > 0 {
			line := b
			if i := bytes.IndexByte(b, '\n'); i >= 0 {
				line, b = b[:i], b[i+1:]
			} else {
				b = nil
			}
			// address perms offset dev inode pathname: only the pathname may hold '/'.
			i := bytes.IndexByte(line, '/')
			if i < 0 {
				continue
			}
			p := line[i:]
			if string(p) == last { // consecutive segments of one file
				continue
			}
			last = string(p)
			out = append(out, ref{WhyMapping, strings.TrimSuffix(last, deletedSuffix)})
		}
	}
	return out
}

// BootID is this boot's id (see the package-level BootID).
func (s *Scan) BootID() (string, error) { return BootID() }

// CarryingEnv returns the running processes (other than the asking process
// and its ancestors) whose initial environment holds name=value, read from
// /proc/<pid>/environ. The environment is set at execve, so a child started
// with WT_LEASE_ID carries it from its first instruction, before anyone can
// have recorded its pid: evidence that survives its wt-exec being killed
// between fork and bookkeeping. Processes whose environment cannot be read
// (another user's) are skipped.
func (s *Scan) CarryingEnv(name, value string) []int {
	want := []byte(name + "=" + value)
	r := NewReader()
	var out []int
	for _, p := range s.procs {
		if s.exclude[p.PID] || !p.Running() {
			continue
		}
		b, err := r.readFile(r.procPath(p.PID, "environ"), false)
		if err != nil {
			continue
		}
		for len(b) > 0 {
			v := b
			if i := bytes.IndexByte(b, 0); i >= 0 {
				v, b = b[:i], b[i+1:]
			} else {
				b = nil
			}
			if bytes.Equal(v, want) {
				out = append(out, p.PID)
				break
			}
		}
	}
	return out
}

// LastPID is the pid the kernel handed out last in this process's pid
// namespace (/proc/sys/kernel/ns_last_pid).
func LastPID() (int, error) {
	b, err := ReadFile("/proc/sys/kernel/ns_last_pid")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// UsesPath tells whether process pid uses a path inside dir (its cwd, an
// open file, a mapping), reading that process alone. known is false when
// what it uses cannot be read (another user's process: its cwd link is
// not ours to read): then whether it uses dir is not known, and it is
// never taken to be elsewhere.
func UsesPath(pid int, dir string) (u Use, uses, known bool) {
	root, err := Canonical(dir)
	if err != nil {
		return Use{}, false, false
	}
	base := "/proc/" + strconv.Itoa(pid)
	link := make([]byte, unix.PathMax)
	if _, err := unix.Readlink(base+"/cwd", link); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
			return Use{}, false, true // gone
		}
		return Use{}, false, false
	}
	rr := &refReader{Reader: NewReader(), link: link, dirent: make([]byte, 8192)}
	for _, rf := range rr.refs(pid) {
		if within(rf.path, root) {
			return Use{PID: pid, Why: rf.why, Path: rf.path, Command: Command(pid)}, true, true
		}
	}
	return Use{}, false, true
}

// StartTime is when a process with start ticks started on this boot (zero
// when the boot's start cannot be read).
func StartTime(startTicks uint64) time.Time {
	boot, err := BootTime()
	if err != nil {
		return time.Time{}
	}
	return boot.Add(time.Duration(startTicks) * time.Second / clockTicks)
}

// clockTicks is USER_HZ, the unit of /proc's start times:
// sysconf(_SC_CLK_TCK), 100 on every Linux architecture Go supports.
const clockTicks = 100
