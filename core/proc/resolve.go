package proc

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/wt-tool/wt/core/decision"
)

// MaxAncestorHops bounds the search of ancestor:NAME (docs/design.md, "wt-exec").
const MaxAncestorHops = 32

// HolderResolverVersion names the rules below (self, PID, ancestor:NAME
// by argv[0] or exe basename, read consistently, at most MaxAncestorHops
// up); a grant records it, so a lease says which rules chose its holder.
// It changes whenever those rules do.
const HolderResolverVersion = 1

// Names are the caller-chosen parts of a holder.
type Names struct {
	ClientID  string
	SessionID *string
	RunID     *string
}

// Resolve turns a holder selector into a Holder:
//
//   - "self" (or ""): the calling process;
//   - "PID": that process, which must be running;
//   - "ancestor:NAME": the nearest ancestor (at most MaxAncestorHops up) whose
//     argv[0] basename or /proc/<pid>/exe basename is NAME. Other arguments are
//     never matched (a shell's "-c 'claude ...'" is not a claude process). Each
//     candidate is read consistently: its start ticks before and after reading
//     argv[0] and exe must be equal, or the process changed under us.
func Resolve(selector string, n Names) (Holder, error) { return resolve(selector, n, true) }

// ResolveAdopter is Resolve for `wt-admin lease adopt`, which hands a dead
// holder's lease to a live process that need not be wt-admin's ancestor
// (the orphaned command of a killed wt-exec, typically): "PID" may name any
// running process but init.
func ResolveAdopter(selector string, n Names) (Holder, error) { return resolve(selector, n, false) }

func resolve(selector string, n Names, lineage bool) (Holder, error) {
	if err := ValidateClientID(n.ClientID); err != nil {
		return Holder{}, err
	}
	for _, s := range []*string{n.SessionID, n.RunID} {
		if s != nil && (*s == "" || strings.IndexFunc(*s, unicode.IsControl) >= 0) {
			return Holder{}, decision.Say(decision.InvalidHolder, "session-run")
		}
	}
	var id Identity
	var err error
	switch {
	case selector == "" || selector == "self":
		id, err = Self()
	case strings.HasPrefix(selector, "ancestor:"):
		id, err = resolveAncestor(NewReader(), os.Getpid(), strings.TrimPrefix(selector, "ancestor:"))
	default:
		pid, perr := strconv.Atoi(selector)
		if perr != nil || pid < 1 || strconv.Itoa(pid) != selector {
			return Holder{}, decision.Say(decision.InvalidHolder, "holder-selector", selector).
				WithHint("use --holder self, --holder PID or --holder ancestor:NAME")
		}
		if id, err = Describe(pid); err == nil {
			if lineage {
				err = callerLineage(id)
			} else if id.PID == 1 {
				err = decision.Say(decision.InvalidHolder, "holder-pid").
					WithHint("name the process that is to hold the lease")
			}
		}
	}
	if err != nil {
		return Holder{}, err
	}
	return Holder{ClientID: n.ClientID, PID: id.PID, BootID: id.BootID, StartTicks: id.StartTicks,
		SessionID: n.SessionID, RunID: n.RunID}, nil
}

// callerLineage refuses a holder pid that is neither the calling process nor
// one of its ancestors, and pid 1: a holder is where entitlement descends
// from, so naming an unrelated live process (another agent's wt-exec) would
// make two writers, and naming init would entitle every process.
func callerLineage(id Identity) error {
	if id.PID == 1 {
		return decision.Say(decision.InvalidHolder, "holder-pid").
			WithHint("use --holder self, or the pid of the agent this wt-exec runs under")
	}
	if id.PID == os.Getpid() {
		return nil
	}
	// HasAncestor compares start ticks hop by hop, so a pid reused since
	// Describe read it is not taken for the process named.
	ok, err := NewReader().HasAncestor(os.Getpid(), id)
	if err != nil && !errors.Is(err, ErrNoProcess) {
		return decision.SayWrap(decision.InvalidHolder, err, "read-this")
	}
	if !ok {
		return decision.Say(decision.InvalidHolder, "holder-pid-not", id.PID).
			WithHint("run wt-exec under that process, or use --holder self or --holder ancestor:NAME")
	}
	return nil
}

func resolveAncestor(r *Reader, self int, name string) (Identity, error) {
	if name == "" || filepath.Base(name) != name || name == "." || name == ".." {
		return Identity{}, decision.Say(decision.InvalidHolder, "ancestor-selector", name).
			WithHint("use --holder ancestor:NAME with a bare program name, e.g. ancestor:claude")
	}
	boot, err := BootID()
	if err != nil {
		return Identity{}, err
	}
	st, err := r.Stat(self)
	if err != nil {
		return Identity{}, decision.SayWrap(decision.InvalidHolder, err, "cannot-read")
	}
	pid := st.PPID
	for hop := 0; hop < MaxAncestorHops && pid > 1; hop++ {
		before, err := r.Stat(pid)
		if err != nil {
			return Identity{}, decision.SayWrap(decision.InvalidHolder, err, "ancestor-cannot", pid)
		}
		argv0, exe := programNames(pid)
		after, err := r.Stat(pid)
		if err != nil || after.StartTicks != before.StartTicks {
			return Identity{}, decision.Say(decision.InvalidHolder, "ancestor-process", pid)
		}
		if argv0 == name || exe == name {
			return Identity{BootID: boot, PID: pid, StartTicks: before.StartTicks}, nil
		}
		pid = before.PPID
	}
	return Identity{}, decision.Say(decision.InvalidHolder, "no-ancestor", name, MaxAncestorHops).
		WithHint("start the agent as %s, or pass --holder PID", name)
}

// programNames returns the basenames of argv[0] and of the executable. Either
// may be empty when it cannot be read.
func programNames(pid int) (argv0, exe string) {
	p := strconv.Itoa(pid)
	if b, err := os.ReadFile("/proc/" + p + "/cmdline"); err == nil {
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		if len(b) > 0 {
			argv0 = filepath.Base(string(b))
		}
	}
	if l, err := os.Readlink("/proc/" + p + "/exe"); err == nil {
		exe = filepath.Base(strings.TrimSuffix(l, " (deleted)"))
	}
	return argv0, exe
}

// Command returns a process's command line, arguments joined by spaces and cut
// to 200 bytes, or "" if it cannot be read.
func Command(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	b = bytes.TrimRight(b, "\x00")
	b = bytes.ReplaceAll(b, []byte{0}, []byte{' '})
	if len(b) > 200 {
		b = b[:200]
	}
	return strings.ToValidUTF8(string(b), "?")
}
