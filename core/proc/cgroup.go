package proc

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CgroupMembers lists the processes in the cgroup v2 directory dir (its
// cgroup.procs). A cgroup that no longer exists has none: the kernel
// removes only an empty cgroup. Any other error is returned, and is never
// evidence that the cgroup is empty.
func CgroupMembers(dir string) ([]int, error) {
	b, err := ReadFile(filepath.Join(dir, "cgroup.procs"))
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Lstat(dir); errors.Is(serr, fs.ErrNotExist) {
			return nil, nil
		}
	}
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a pid", filepath.Join(dir, "cgroup.procs"), f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// CgroupMembers implements liveness.Evidence: it reads the cgroup now.
func (s *Scan) CgroupMembers(dir string) ([]int, error) { return CgroupMembers(dir) }

// OwnCgroup is the directory of this process's cgroup in the cgroup v2
// hierarchy: where cgroup2 is mounted (the unified /sys/fs/cgroup, or
// /sys/fs/cgroup/unified on a hybrid system, asked of the kernel with
// statfs; anywhere else, from /proc/self/mountinfo) joined with the "0::"
// line of /proc/self/cgroup.
func OwnCgroup() (string, error) {
	mount, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	b, err := ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Join(mount, rel), nil
		}
	}
	return "", errors.New("this process has no cgroup v2 membership (/proc/self/cgroup has no 0:: line)")
}

// cgroup2Places are where systems mount cgroup2: a statfs of each is a
// few microseconds, where /proc/self/mountinfo, which the kernel
// formats line by line, costs ten times that at every wt-exec start.
var cgroup2Places = []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}

func cgroup2Mount() (string, error) {
	for _, dir := range cgroup2Places {
		var st unix.Statfs_t
		if unix.Statfs(dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return dir, nil
		}
	}
	return cgroup2FromMountinfo()
}

// cgroup2FromMountinfo is the mount point of the first cgroup2 mount in
// /proc/self/mountinfo.
func cgroup2FromMountinfo() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ... mount-point ... - fstype source options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		fields := strings.Fields(pre)
		if len(fields) >= 5 {
			return fields[4], nil
		}
	}
	return "", errors.New("no cgroup v2 hierarchy is mounted")
}
