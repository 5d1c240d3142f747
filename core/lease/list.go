package lease

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/liveness"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/core/strictjson"
)

// Entry is one writer lease in `wt-admin lease list`: a current one, or
// with --all an ended one from events.jsonl.
type Entry struct {
	LeaseID      string `json:"lease_id"`
	AllocationID string `json:"allocation_id"`
	TaskKey      string `json:"task_key"`
	// Role is the role of the lease's allocation ("" when it is gone).
	Role         string      `json:"role"`
	WorktreePath string      `json:"worktree_path"`
	Holder       proc.Holder `json:"holder"`
	Generation   int         `json:"generation"`
	From         string      `json:"from"`
	// To and Ended say when and how an ended lease ended ("released",
	// "expired", "abandoned: <reason>", "taken over by <lease id>",
	// "adopted by <lease id>"); both are empty for a current one.
	To    string `json:"to,omitempty"`
	Ended string `json:"ended,omitempty"`
	// ExpiresAt is when the lease expires (or expired) as last granted or
	// renewed, "" for no expiry: past it, its holder has no entitlement.
	ExpiresAt string `json:"expires_at,omitempty"`
	// Freshness is that of a current lease (docs/design.md, "Writer leases").
	Freshness string `json:"freshness,omitempty"`
	// Fleet is a current lease's fleet side (fleet mode).
	Fleet *store.FleetLease `json:"fleet,omitempty"`
}

// ListOptions choose what List returns.
type ListOptions struct {
	// All adds the ended leases; Active keeps only current leases whose
	// holder is active (freshness "active"). They do not go together.
	All, Active bool
	// Role keeps the leases of allocations of that role ("" any).
	Role string
	// Limit keeps at most that many (0 all): the current ones first, then
	// the ended ones that began last.
	Limit int
}

// ListWith is List as opts choose.
func ListWith(r *alloc.Repo, opts ListOptions) ([]Entry, error) {
	if opts.All && opts.Active {
		return nil, decision.Say(decision.Usage, "active-lists")
	}
	entries, err := List(r, opts.All)
	if err != nil {
		return nil, err
	}
	out := entries[:0]
	for _, e := range entries {
		if opts.Active && e.Freshness != liveness.FreshActive || opts.Role != "" && e.Role != opts.Role {
			continue
		}
		out = append(out, e)
	}
	if opts.Limit > 0 && len(out) > opts.Limit {
		current := 0
		for current < len(out) && out[current].Ended == "" {
			current++
		}
		if current >= opts.Limit {
			return out[:opts.Limit], nil
		}
		keep := opts.Limit - current // the ended ones that began last, in order
		out = append(out[:current:current], out[len(out)-keep:]...)
	}
	return out, nil
}

// List returns the current leases with their freshness, from one /proc
// reading, and with all set also every ended lease found in events.jsonl:
// who held write entitlement on which worktree, from when to when, and how
// it ended. Current leases come first, then ended ones by start time.
func List(r *alloc.Repo, all bool) ([]Entry, error) {
	var out []Entry
	var eventsPath string
	scan := sync.OnceValues(proc.NewScan)
	allocs := map[string]store.Allocation{}
	now := time.Now()
	err := r.Store.Read(func(tx *store.Tx) error {
		eventsPath = tx.EventsPath()
		as, err := tx.Allocations()
		if err != nil {
			return err
		}
		for _, a := range as {
			allocs[a.AllocationID] = a
		}
		ids, err := tx.Leases()
		if err != nil {
			return err
		}
		for _, id := range ids {
			l, ok, err := tx.Lease(id)
			if err != nil || !ok {
				return err
			}
			a, err := tx.Allocation(id)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			s, err := scan()
			if err != nil {
				return decision.SayWrap(decision.Internal, err, "read-proc")
			}
			e := Entry{LeaseID: l.LeaseID, AllocationID: l.AllocationID, TaskKey: a.TaskKey, Role: a.Role,
				WorktreePath: l.WorktreePath, Holder: l.Holder, Generation: l.Generation, From: l.AcquiredAt,
				Freshness: liveness.Freshness(s, l, now), Fleet: l.Fleet}
			if l.ExpiresAt != nil {
				e.ExpiresAt = *l.ExpiresAt
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil || !all {
		return out, err
	}
	ended, err := endedLeases(eventsPath, out)
	for i := range ended {
		a := allocs[ended[i].AllocationID]
		ended[i].TaskKey, ended[i].WorktreePath, ended[i].Role = a.TaskKey, a.WorktreePath, a.Role
	}
	return append(out, ended...), err
}

// endedLeases reads events.jsonl for leases that began and ended. A last
// line without its newline (a power loss can cut it) is skipped; any other
// line that does not decode is INVALID_METADATA.
func endedLeases(path string, current []Entry) ([]Entry, error) {
	// events.jsonl grows without bound, so it is not capped like a record;
	// it is still read only as a regular file, never through a symlink.
	f, _, err := safefile.Open(path, safefile.NoFollow)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, decision.SayWrap(decision.InvalidMetadata, err, "read", path)
	}
	defer f.Close() // Best effort: read only.
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, decision.SayWrap(decision.InvalidMetadata, err, "read", path)
	}
	if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
		data = data[:i+1]
	}
	live := map[string]bool{}
	for _, e := range current {
		live[e.LeaseID] = true
	}
	began := map[string]*Entry{}
	var order []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for n := 1; sc.Scan(); n++ {
		var ev store.Event
		if err := strictjson.Decode(sc.Bytes(), &ev); err != nil {
			return nil, decision.SayWrap(decision.InvalidMetadata, err, "line", path, n)
		}
		if ev.LeaseID == nil {
			continue
		}
		id := *ev.LeaseID
		switch ev.Event {
		case "writer_lease_acquired", "writer_lease_taken_over", "writer_lease_adopted":
			if began[id] == nil && ev.Holder != nil {
				e := &Entry{LeaseID: id, Holder: *ev.Holder, From: ev.At}
				if ev.AllocationID != nil {
					e.AllocationID = *ev.AllocationID
				}
				if g, ok := ev.Detail["generation"].(float64); ok {
					e.Generation = int(g)
				}
				e.ExpiresAt, _ = ev.Detail["expires_at"].(string)
				began[id] = e
				order = append(order, id)
			}
			how := "taken over by "
			if ev.Event == "writer_lease_adopted" {
				how = "adopted by "
			}
			if prev, ok := ev.Detail["previous_lease_id"].(string); ok && began[prev] != nil && began[prev].To == "" {
				began[prev].To, began[prev].Ended = ev.At, how+id
			}
		case "writer_lease_renewed":
			if e := began[id]; e != nil && e.To == "" {
				e.ExpiresAt, _ = ev.Detail["expires_at"].(string)
			}
		case "writer_lease_released", "writer_lease_expired", "writer_lease_abandoned":
			if e := began[id]; e != nil && e.To == "" {
				e.To, e.Ended = ev.At, strings.TrimPrefix(ev.Event, "writer_lease_")
				if x, ok := ev.Detail["expires_at"].(string); ok {
					e.ExpiresAt = x // the expiry lease expire found passed
				}
				if why, ok := ev.Detail["reason"].(string); ok {
					e.Ended += ": " + why
				}
			}
		}
	}
	var out []Entry
	for _, id := range order {
		if e := began[id]; e.To != "" && !live[id] {
			out = append(out, *e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].From < out[j].From })
	return out, nil
}
