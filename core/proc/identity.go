package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wt-tool/wt/core/decision"
)

const bootIDFile = "/proc/sys/kernel/random/boot_id"

var bootID = sync.OnceValues(func() (string, error) {
	b, err := ReadFile(bootIDFile)
	if err != nil {
		return "", decision.SayWrap(decision.InvalidHolder, err, "boot-identity")
	}
	id := string(bytes.TrimSpace(b))
	if id == "" {
		return "", decision.Say(decision.InvalidHolder, "boot-identity-empty")
	}
	return id, nil
})

// BootID returns this boot's id. It is read once per process: a process never
// outlives its boot.
func BootID() (string, error) { return bootID() }

// Identity is the unforgeable part of a holder: no later process, on this
// boot or another, has the same triple.
type Identity struct {
	BootID     string `json:"boot_id"`
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"`
}

// Holder is a process identity plus the caller-chosen names that go with a
// writer lease (docs/design.md, "Allocations, roles and lifecycles"). Two holders are the same only if every field is
// equal: omitting the session id cannot inherit another session's entitlement.
type Holder struct {
	ClientID   string  `json:"client_id"`
	PID        int     `json:"pid"`
	BootID     string  `json:"boot_id"`
	StartTicks uint64  `json:"start_ticks"`
	SessionID  *string `json:"session_id"`
	RunID      *string `json:"run_id"`
}

// Identity returns the holder's process triple.
func (h Holder) Identity() Identity {
	return Identity{BootID: h.BootID, PID: h.PID, StartTicks: h.StartTicks}
}

// Same reports whether h and o name the same holder, every field compared.
func (h Holder) Same(o Holder) bool {
	return h.ClientID == o.ClientID && h.Identity() == o.Identity() &&
		eqPtr(h.SessionID, o.SessionID) && eqPtr(h.RunID, o.RunID)
}

func eqPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// ClientIDPattern is the form of a client id (docs/design.md, "Allocations, roles and lifecycles"). ValidClientID
// checks it by hand: compiling {0,127} as a regexp costs close to a
// millisecond at every start of every binary.
const ClientIDPattern = `^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`

// ValidClientID reports whether id matches ClientIDPattern.
func ValidClientID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != ':' && c != '-') {
			return false
		}
	}
	return true
}

// Self returns the identity of the calling process.
func Self() (Identity, error) { return Describe(os.Getpid()) }

// Describe reads the identity of a running process.
func Describe(pid int) (Identity, error) {
	boot, err := BootID()
	if err != nil {
		return Identity{}, err
	}
	st, err := ReadStat(pid)
	if errors.Is(err, ErrNoProcess) {
		return Identity{}, decision.Say(decision.InvalidHolder, "process-not", pid)
	}
	if err != nil {
		return Identity{}, decision.SayWrap(decision.InvalidHolder, err, "process-cannot", pid)
	}
	return Identity{BootID: boot, PID: pid, StartTicks: st.StartTicks}, nil
}

// IsLive reports whether the exact process named by id is still running: the
// same boot, and a process with that pid whose start ticks are the recorded
// ones and which is not a zombie. A vanished pid, a reused pid or another boot all mean "gone", which
// never means that the process's task finished.
func IsLive(r *Reader, id Identity) (bool, error) {
	boot, err := BootID()
	if err != nil {
		return false, err
	}
	if id.BootID == "" {
		return false, decision.Say(decision.InvalidHolder, "recorded-boot")
	}
	if id.BootID != boot {
		return false, nil
	}
	st, err := r.Stat(id.PID)
	if errors.Is(err, ErrNoProcess) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return st.StartTicks == id.StartTicks && st.Running(), nil
}

// ValidateClientID refuses a client id that does not match ClientIDPattern.
func ValidateClientID(id string) error {
	if !ValidClientID(id) {
		return decision.Say(decision.InvalidHolder, "client-id", id, ClientIDPattern).
			WithHint("pass --client-id NAME with letters, digits and . _ : -")
	}
	return nil
}

func (id Identity) String() string {
	return fmt.Sprintf("pid %d (start ticks %d, boot %.8s)", id.PID, id.StartTicks, id.BootID)
}

// Actor is this process's identity as journals and events record it (its
// pid alone when /proc cannot say more), read once.
var Actor = sync.OnceValue(func() Identity {
	id, err := Self()
	if err != nil {
		return Identity{PID: os.Getpid()}
	}
	return id
})

// BootTime is when this boot began, from the btime line of /proc/stat
// (whole seconds). A file last modified before it was written in an
// earlier boot: whatever process it describes is dead.
func BootTime() (time.Time, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || secs <= 0 {
				return time.Time{}, fmt.Errorf("/proc/stat: bad btime %q", strings.TrimSpace(v))
			}
			return time.Unix(secs, 0), nil
		}
	}
	return time.Time{}, errors.New("/proc/stat has no btime line")
}
