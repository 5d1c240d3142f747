package confine

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wt-tool/wt/core/proc"
)

// A pathname Unix socket is a door out of any file confinement: Landlock
// does not govern connect(2) to one, and whatever listens there (a tmux
// or screen server, a D-Bus bus, a container engine, another agent) acts
// outside the run. In the run's mount namespace every listening pathname
// socket of this network namespace (/proc/net/unix) is covered by an
// empty read-only file (a connect then finds no socket), but those it
// may reach: the SSH agent's ($SSH_AUTH_SOCK, for pushes over ssh), those
// named with --allow-socket, and its own (beneath a directory it may
// write). Abstract sockets are scoped by Landlock (ABI 6 and later): the
// run reaches only those of its own domain. A socket made after the run
// started is not covered; its directory, if the run could not write it,
// was made by someone outside the run.

// listeningSockets are the paths of the listening pathname sockets in
// /proc/net/unix (the flag __SO_ACCEPTCON), each once, that are sockets
// on the file system now.
func listeningSockets() ([]string, error) {
	b, err := proc.ReadFile("/proc/net/unix")
	if err != nil {
		return nil, err
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		// Num RefCount Protocol Flags Type St Inode Path
		if len(f) < 8 || f[3] != "00010000" || !strings.HasPrefix(f[7], "/") {
			continue
		}
		p := strings.Join(f[7:], " ")
		if slices.Contains(out, p) {
			continue
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
			out = append(out, p)
		}
	}
	return out, sc.Err()
}

// planSockets sorts the listening sockets into those the run may reach
// (allowed, or beneath one of its writable directories) and those
// covered. A socket list that cannot be read covers nothing and says so.
func planSockets(allowed []string, writable []Rule) (reach, hide []string, err error) {
	all, err := listeningSockets()
	if err != nil {
		return nil, nil, err
	}
	for _, p := range all {
		own := false
		for _, r := range writable {
			if within(p, r.Path) {
				own = true
				break
			}
		}
		switch {
		case slices.Contains(allowed, p):
			reach = append(reach, p)
		case own:
		default:
			hide = append(hide, p)
		}
	}
	slices.Sort(reach)
	slices.Sort(hide)
	return reach, hide, nil
}

// hiderFile is the empty file bound over each covered socket.
func (v *View) hiderFile() string { return filepath.Join(v.Dir, "socket-cover") }
