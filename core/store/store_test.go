package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/ids"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	common := t.TempDir()
	s, err := Create(common)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func putAlloc(t *testing.T, s *Store) Allocation {
	t.Helper()
	a := Allocation{AllocationID: ids.New(), TaskKey: "T-1", Owner: "alice", Role: RoleFeature,
		Lifecycle: Active, WorktreePath: "/tmp/w", WorktreeKey: "w", BaseCommit: strings.Repeat("a", 40)}
	if err := s.Write(func(tx *Tx) error { return tx.PutAllocation(&a) }); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestOpenMissingAndDamaged(t *testing.T) {
	if _, err := Open(t.TempDir()); decision.CodeOf(err) != decision.NotInitialized {
		t.Fatalf("Open(empty) = %v, want NOT_INITIALIZED", err)
	}
	s := newStore(t)
	lock := filepath.Join(s.Root(), "lock")
	os.Remove(lock)
	if _, err := Open(s.CommonDir()); decision.CodeOf(err) != decision.InvalidMetadata {
		t.Fatalf("missing lock: %v, want INVALID_METADATA", err)
	}
	os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), lock)
	if _, err := Open(s.CommonDir()); decision.CodeOf(err) != decision.InvalidMetadata {
		t.Fatalf("symlinked lock: %v, want INVALID_METADATA", err)
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(lock), "elsewhere")); err == nil {
		t.Fatal("the symlink's target was created")
	}
}

func TestRecordVersionAndAtomicWrite(t *testing.T) {
	s := newStore(t)
	a := putAlloc(t, s)
	if a.RecordVersion != 1 || a.SchemaVersion != SchemaVersion {
		t.Fatalf("new record: %+v", a.Meta)
	}
	err := s.Write(func(tx *Tx) error {
		got, err := tx.Allocation(a.AllocationID)
		if err != nil {
			return err
		}
		got.Owner = "bob"
		return tx.PutAllocation(&got)
	})
	if err != nil {
		t.Fatal(err)
	}
	var got Allocation
	s.Read(func(tx *Tx) error { got, err = tx.Allocation(a.AllocationID); return err })
	if got.RecordVersion != 2 || got.Owner != "bob" {
		t.Fatalf("after update: %+v", got)
	}
	one, two := 1, 2
	if err := CheckVersion("x", &got, &one); decision.CodeOf(err) != decision.RecordVersionConflict {
		t.Fatalf("stale version: %v", err)
	}
	if err := CheckVersion("x", &got, &two); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Join(s.Root(), "allocations"))
	if len(ents) != 1 {
		t.Fatalf("temp files left behind: %v", ents)
	}
}

func TestStrictReads(t *testing.T) {
	s := newStore(t)
	a := putAlloc(t, s)
	path := filepath.Join(s.Root(), "allocations", a.AllocationID+".json")
	good, _ := os.ReadFile(path)
	cases := map[string][]byte{
		"truncated":      good[:len(good)/2],
		"empty":          {},
		"not an object":  []byte("[1,2]\n"),
		"wrong schema":   bytes.Replace(good, []byte(`"schema_version": 1`), []byte(`"schema_version": 99`), 1),
		"missing field":  bytes.Replace(good, []byte(`"owner": "alice",`), nil, 1),
		"unknown field":  bytes.Replace(good, []byte(`"owner": "alice",`), []byte(`"owner": "alice", "extra": 1,`), 1),
		"trailing data":  append(append([]byte{}, good...), []byte("{}")...),
		"zero version":   bytes.Replace(good, []byte(`"record_version": 1`), []byte(`"record_version": 0`), 1),
		"id not matched": bytes.Replace(good, []byte(a.AllocationID), []byte(ids.New()), 1),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			if bytes.Equal(data, good) {
				t.Fatal("case does not change the file")
			}
			os.WriteFile(path, data, 0o644)
			err := s.Read(func(tx *Tx) error { _, err := tx.Allocation(a.AllocationID); return err })
			d, ok := decision.As(err)
			if !ok || d.Code != decision.InvalidMetadata || !strings.Contains(d.Message, path) {
				t.Fatalf("read %s: %v, want INVALID_METADATA naming the file", name, err)
			}
			if now, _ := os.ReadFile(path); !bytes.Equal(now, data) {
				t.Fatal("the bad file was changed")
			}
		})
	}
	t.Run("symlink", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "real.json")
		os.WriteFile(target, good, 0o644)
		os.Remove(path)
		os.Symlink(target, path)
		err := s.Read(func(tx *Tx) error { _, err := tx.Allocation(a.AllocationID); return err })
		if decision.CodeOf(err) != decision.InvalidMetadata {
			t.Fatalf("symlinked record: %v", err)
		}
		if l, _ := os.Readlink(path); l != target {
			t.Fatal("the symlink was changed")
		}
	})
	if err := s.Read(func(tx *Tx) error { _, err := tx.Allocation("../../etc/passwd"); return err }); decision.CodeOf(err) != decision.InvalidMetadata {
		t.Fatalf("path traversal id: %v", err)
	}
}

func TestRegistrationMarker(t *testing.T) {
	s := newStore(t)
	admin := filepath.Join(s.CommonDir(), "worktrees", "w")
	os.MkdirAll(admin, 0o755)
	id := ids.New()
	reg := Registration{RegistrationID: ids.New(), WorktreeKey: "w", WorktreePath: "/tmp/w", AllocationID: id, CreatedAt: "now"}
	if err := s.Write(func(tx *Tx) error { return tx.PutRegistration(&reg) }); err != nil {
		t.Fatal(err)
	}
	registered := func() bool {
		var ok bool
		if err := s.Read(func(tx *Tx) error { var err error; _, ok, err = tx.Registered("w"); return err }); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !registered() {
		t.Fatal("fresh registration does not count")
	}
	// git re-creates an admin dir under a reused name: the marker is gone.
	os.RemoveAll(admin)
	os.MkdirAll(admin, 0o755)
	if registered() {
		t.Fatal("a re-created admin dir inherits the registration")
	}
	// A marker from another registration does not count either.
	os.WriteFile(filepath.Join(admin, MarkerName), []byte(`{"other":1}`), 0o644)
	if registered() {
		t.Fatal("a foreign marker counts")
	}
}

func TestEventsAppend(t *testing.T) {
	s := newStore(t)
	for i := 0; i < 3; i++ {
		if err := s.Write(func(tx *Tx) error { return tx.AppendEvent(Event{At: "t", Event: "e"}) }); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(s.Root(), "events.jsonl"))
	if n := bytes.Count(b, []byte("\n")); n != 3 {
		t.Fatalf("%d lines", n)
	}
	ev := filepath.Join(s.Root(), "events.jsonl")
	os.Remove(ev)
	os.Symlink(filepath.Join(t.TempDir(), "x"), ev)
	if err := s.Write(func(tx *Tx) error { return tx.AppendEvent(Event{}) }); decision.CodeOf(err) != decision.InvalidMetadata {
		t.Fatalf("symlinked events.jsonl: %v", err)
	}
}

func TestWriteInsideReadPanics(t *testing.T) {
	s := newStore(t)
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	s.Read(func(tx *Tx) error { return tx.AppendEvent(Event{}) })
}

func TestNotFound(t *testing.T) {
	s := newStore(t)
	err := s.Read(func(tx *Tx) error { _, err := tx.Allocation(ids.New()); return err })
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("absent allocation: %v", err)
	}
}

// TestTornLeaseOfEarlierBoot: lease files are not fsynced, so a power loss
// may leave one torn. Written before this boot, it is dead whatever its
// bytes: read as absent, and a write section drops it and says so. Torn
// and written in this boot, it is INVALID_METADATA and left as it is.
func TestTornLeaseOfEarlierBoot(t *testing.T) {
	s := newStore(t)
	a := putAlloc(t, s)
	p := filepath.Join(s.Root(), "leases", a.AllocationID+".json")
	torn := []byte(`{"schema_version": 1, "record_ver`)
	if err := os.WriteFile(p, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	read := func() error {
		return s.Read(func(tx *Tx) error {
			_, ok, err := tx.Lease(a.AllocationID)
			if err == nil && ok {
				t.Fatal("a torn lease read as present")
			}
			return err
		})
	}
	if err := read(); decision.CodeOf(err) != decision.InvalidMetadata {
		t.Fatalf("torn in this boot: %v, want INVALID_METADATA", err)
	}
	old := time.Unix(1e9, 0) // 2001: before any boot of this machine
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	if err := read(); err != nil {
		t.Fatalf("torn before this boot, read: %v, want absent", err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("a read section removed the torn lease: %v", err)
	}
	if err := s.Write(func(tx *Tx) error {
		_, ok, err := tx.Lease(a.AllocationID)
		if ok {
			t.Fatal("a torn lease read as present")
		}
		return err
	}); err != nil {
		t.Fatalf("torn before this boot, write section: %v", err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the torn lease is still there: %v", err)
	}
	events, _ := os.ReadFile(filepath.Join(s.Root(), "events.jsonl"))
	if !bytes.Contains(events, []byte(`"writer_lease_torn_dropped"`)) {
		t.Fatalf("no event for the dropped lease:\n%s", events)
	}
	// A symlink is never a lease, however old.
	if err := os.Symlink("/dev/null", p); err != nil {
		t.Fatal(err)
	}
	if err := read(); decision.CodeOf(err) != decision.InvalidMetadata {
		t.Fatalf("symlink: %v, want INVALID_METADATA", err)
	}
}

// rtBinding is a runtime binding as wt-exec writes it (the store only looks
// at its prefix).
const rtBinding = `runtime:process-v1:{"holder":{},"lease_id":null,"kind":"agent"}`

func readAlloc(t *testing.T, s *Store, id string) Allocation {
	t.Helper()
	var a Allocation
	if err := s.Read(func(tx *Tx) (err error) { a, err = tx.Allocation(id); return err }); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestRuntimeFile: an allocation's runtime state (runtime bindings,
// generation) goes to its boot-scoped runtime file and never rewrites the
// record that holds the task's ownership; reads lay it over the record,
// whose opaque bindings stay; a record write keeps the two in step.
func TestRuntimeFile(t *testing.T) {
	s := newStore(t)
	a := putAlloc(t, s)
	rec := filepath.Join(s.Root(), "allocations", a.AllocationID+".json")
	rt := filepath.Join(s.Root(), "runtime", a.AllocationID+".json")
	// A store made by an older wt has no runtime directory: the first
	// runtime write makes it.
	if err := os.Remove(filepath.Join(s.Root(), "runtime")); err != nil {
		t.Fatal(err)
	}
	// An opaque binding put in the record by another tool.
	if err := s.Write(func(tx *Tx) error {
		got, err := tx.Allocation(a.AllocationID)
		got.ExternalBindings = []string{"ci:job-42"}
		if err == nil {
			err = tx.PutAllocation(&got)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(rec)
	if err := s.Write(func(tx *Tx) error {
		got, err := tx.Allocation(a.AllocationID)
		got.ExternalBindings = append(got.ExternalBindings, rtBinding)
		got.LeaseGeneration = 7
		if err == nil {
			err = tx.PutAllocationRuntime(&got)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(rec); !bytes.Equal(before, after) {
		t.Fatalf("a runtime write rewrote the record:\n%s\n%s", before, after)
	}
	got := readAlloc(t, s, a.AllocationID)
	if !slices.Equal(got.ExternalBindings, []string{"ci:job-42", rtBinding}) || got.LeaseGeneration != 7 {
		t.Fatalf("read back: %q generation %d", got.ExternalBindings, got.LeaseGeneration)
	}
	var all []Allocation
	s.Read(func(tx *Tx) (err error) { all, err = tx.Allocations(); return err })
	if len(all) != 1 || !slices.Equal(all[0].ExternalBindings, got.ExternalBindings) || all[0].LeaseGeneration != 7 {
		t.Fatalf("listed: %+v", all)
	}
	// The runtime write of an allocation whose record changed as well is a
	// record write, and a record write rewrites the runtime file with it.
	if err := s.Write(func(tx *Tx) error {
		got, err := tx.Allocation(a.AllocationID)
		got.Owner, got.ExternalBindings, got.LeaseGeneration = "bob", []string{"ci:job-42"}, 8
		if err == nil {
			err = tx.PutAllocationRuntime(&got)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(rec)
	r, _ := os.ReadFile(rt)
	if !bytes.Contains(b, []byte(`"owner": "bob"`)) || !bytes.Contains(b, []byte(`"lease_generation": 8`)) ||
		!bytes.Contains(r, []byte(`"runtime_bindings": []`)) || !bytes.Contains(r, []byte(`"lease_generation": 8`)) || !bytes.Contains(r, []byte(`"record_version": 2`)) {
		t.Fatalf("record and runtime file differ:\n%s\n%s", b, r)
	}
	// A runtime file may hold runtime bindings only.
	os.WriteFile(rt, bytes.Replace(r, []byte(`"runtime_bindings": []`), []byte(`"runtime_bindings": ["ci:job-43"]`), 1), 0o644)
	if err := s.Read(func(tx *Tx) error { _, err := tx.Allocation(a.AllocationID); return err }); decision.CodeOf(err) != decision.InvalidMetadata {
		t.Fatalf("opaque binding in the runtime file: %v, want INVALID_METADATA", err)
	}
}

// TestTornRuntimeOfEarlierBoot: a runtime file torn by a power loss (last
// written before this boot) is read as absent, the record's runtime state
// standing, and a write section removes it; torn in this boot it is
// INVALID_METADATA.
func TestTornRuntimeOfEarlierBoot(t *testing.T) {
	s := newStore(t)
	a := putAlloc(t, s)
	rt := filepath.Join(s.Root(), "runtime", a.AllocationID+".json")
	if err := os.WriteFile(rt, []byte(`{"schema_version": 1, "record_ver`), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func() error {
		return s.Read(func(tx *Tx) error { _, err := tx.Allocation(a.AllocationID); return err })
	}
	if err := read(); decision.CodeOf(err) != decision.InvalidMetadata {
		t.Fatalf("torn in this boot: %v, want INVALID_METADATA", err)
	}
	old := time.Unix(1e9, 0)
	if err := os.Chtimes(rt, old, old); err != nil {
		t.Fatal(err)
	}
	if got := readAlloc(t, s, a.AllocationID); got.Owner != "alice" || got.LeaseGeneration != 0 {
		t.Fatalf("torn before this boot: %+v", got)
	}
	if err := s.Write(func(tx *Tx) error { _, err := tx.Allocation(a.AllocationID); return err }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(rt); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the torn runtime file is still there: %v", err)
	}
	events, _ := os.ReadFile(filepath.Join(s.Root(), "events.jsonl"))
	if !bytes.Contains(events, []byte(`"allocation_runtime_torn_dropped"`)) {
		t.Fatalf("no event for the dropped runtime file:\n%s", events)
	}
}

// TestBootScopedReplace: a boot-scoped write over an existing file of at
// most a page rewrites it in place (padded with spaces to its old length),
// over a larger one swaps the new one in (no rename over it, which ext4
// makes write the data out); neither leaves a temporary file. Over a
// directory it fails as a rename does.
func TestBootScopedReplace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.json")
	var first unix.Stat_t
	longest := 0
	for i, content := range []string{"one", "three", "two"} {
		if err := writeAtomic(p, []byte(content), bootScoped); err != nil {
			t.Fatal(err)
		}
		longest = max(longest, len(content))
		if b, _ := os.ReadFile(p); strings.TrimRight(string(b), " ") != content || len(b) != longest {
			t.Fatalf("read %q, want %q padded to the longest written", b, content)
		}
		var st unix.Stat_t
		unix.Stat(p, &st)
		if i == 0 {
			first = st
		} else if st.Ino != first.Ino {
			t.Fatalf("write %d did not rewrite the file in place", i)
		}
	}
	big := strings.Repeat("x", os.Getpagesize()+1)
	for _, content := range []string{big, big + "y"} {
		if err := writeAtomic(p, []byte(content), bootScoped); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != content {
			t.Fatalf("read %d bytes, want %d", len(b), len(content))
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}
	d := filepath.Join(dir, "d.json")
	os.Mkdir(d, 0o755)
	if err := writeAtomic(d, []byte("x"), bootScoped); err == nil {
		t.Fatal("a write over a directory succeeded")
	}
	if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
		t.Fatalf("the directory is gone: %v", err)
	}
}

// TestGitAdminTurns: WithGitAdmin waits while another process holds the
// turn (flock on the store's directory), runs fn once it is free, and
// leaves the store's own lock free meanwhile.
func TestGitAdminTurns(t *testing.T) {
	s := newStore(t)
	other, err := unix.Open(s.Root(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(other)
	if err := unix.Flock(other, unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	// While the turn is taken: the store can be written, and a wait for
	// the turn ends with its context, fn not run.
	if err := s.Write(func(*Tx) error { return nil }); err != nil {
		t.Fatalf("the store's lock is held with the turn: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	ran := false
	err = s.WithGitAdmin(ctx, func() error { ran = true; return nil })
	if ran || decision.CodeOf(err) != decision.Interrupted {
		t.Fatalf("with the turn taken: ran %v, %v; want INTERRUPTED and not run", ran, err)
	}
	unix.Flock(other, unix.LOCK_UN)
	if err := s.WithGitAdmin(context.Background(), func() error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("with the turn free: ran %v, %v", ran, err)
	}
}

// TestAllocationReadOncePerSection: a section reads an allocation record
// once (PutAllocationRuntime's second look comes from what it read); what a
// caller does to its copy does not reach that memory, and the section's own
// PutAllocation is read back.
func TestAllocationReadOncePerSection(t *testing.T) {
	s := newStore(t)
	a := putAlloc(t, s)
	branch := "wt/T-1"
	a.Branch = &branch
	if err := s.Write(func(tx *Tx) error { return tx.PutAllocation(&a) }); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(s.Root(), "allocations", a.AllocationID+".json")
	if err := s.Write(func(tx *Tx) error {
		got, err := tx.Allocation(a.AllocationID)
		if err != nil {
			return err
		}
		// Gone from disk: only the section's memory can answer now.
		saved, _ := os.ReadFile(rec)
		os.Remove(rec)
		defer os.WriteFile(rec, saved, 0o644)
		got.ExternalBindings = append(got.ExternalBindings, "mutated")
		*got.Branch = "mutated"
		again, err := tx.Allocation(a.AllocationID)
		if err != nil {
			return err
		}
		if len(again.ExternalBindings) != 0 || again.Branch == nil || *again.Branch == "mutated" {
			t.Errorf("a caller's change reached the section's copy: %q %v", again.ExternalBindings, again.Branch)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(func(tx *Tx) error {
		got, err := tx.Allocation(a.AllocationID)
		if err != nil {
			return err
		}
		got.Owner = "bob"
		if err := tx.PutAllocation(&got); err != nil {
			return err
		}
		again, err := tx.Allocation(a.AllocationID)
		if err == nil && again.Owner != "bob" {
			t.Errorf("the section's own write is not read back: owner %q", again.Owner)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
