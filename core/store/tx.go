package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/crashpoint"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/strictjson"
)

// validID refuses ids that cannot safely name a file: record ids are uuids.
func validID(kind, id string) error {
	if !ids.Valid(id) {
		return decision.Say(decision.InvalidMetadata, "id-not", kind, id)
	}
	return nil
}

// validKey refuses worktree keys that cannot be a linked worktree's admin
// dir name.
func validKey(key string) error {
	if key == "" || key == "." || key == ".." || filepath.Base(key) != key {
		return decision.Say(decision.InvalidMetadata, "worktree-key", key)
	}
	return nil
}

// Repository reads repository.json; a missing one is INVALID_METADATA (the
// store exists, so init did not finish).
func (tx *Tx) Repository() (Repository, error) {
	var r Repository
	p := tx.path(repositoryName)
	ok, err := readRecord(p, &r)
	if err == nil && !ok {
		err = invalid(p, errors.New("missing: the store was not fully initialized")).
			WithHint("run wt-admin init to finish setting it up")
	}
	if err == nil {
		if !ids.Valid(r.RepositoryID) {
			err = invalid(p, fmt.Errorf("repository_id %q is not a uuid", r.RepositoryID))
		}
	}
	return r, err
}

// HasRepository reports whether repository.json exists (valid or not).
func (tx *Tx) HasRepository() bool {
	_, err := os.Lstat(tx.path(repositoryName))
	return err == nil
}

// PutRepository writes repository.json.
func (tx *Tx) PutRepository(r *Repository) error { return tx.put(tx.path(repositoryName), r, durable) }

// Policy reads policy.json.
func (tx *Tx) Policy() (Policy, bool, error) {
	var p Policy
	path := tx.path(policyName)
	ok, err := readRecord(path, &p)
	if err == nil && ok {
		err = p.validate()
		if err != nil {
			err = invalid(path, err)
		}
	}
	return p, ok, err
}

func (p Policy) validate() error {
	if p.Enforcement != EnforcementEnforce && p.Enforcement != EnforcementWarn {
		return fmt.Errorf("enforcement %q is not enforce or warn", p.Enforcement)
	}
	if p.Unmanaged != UnmanagedAllow && p.Unmanaged != UnmanagedRefuse {
		return fmt.Errorf("unmanaged %q is not allow or refuse", p.Unmanaged)
	}
	if p.MaxActive != nil && *p.MaxActive < 1 {
		return fmt.Errorf("max_active %d is not positive", *p.MaxActive)
	}
	if p.PublicationBranch == "" {
		return errors.New("publication_branch is empty")
	}
	return p.ValidateFleet()
}

// ValidEtcdEndpoint refuses an etcd endpoint that is not an http(s)
// host:port URL without credentials.
func ValidEtcdEndpoint(e string) error {
	u, err := url.Parse(e)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return fmt.Errorf("etcd endpoint %q is not an http(s)://host:port URL without credentials", e)
	}
	return nil
}

// ValidateFleet checks the fleet fields (docs/design.md, "Fleet mode").
func (p Policy) ValidateFleet() error {
	switch p.Coordinator {
	case "", CoordinatorNone:
		return nil
	case CoordinatorEtcd:
	default:
		return fmt.Errorf("coordinator %q is not none or etcd", p.Coordinator)
	}
	if len(p.EtcdEndpoints) == 0 {
		return errors.New("coordinator etcd needs etcd_endpoints")
	}
	for _, e := range p.EtcdEndpoints {
		if err := ValidEtcdEndpoint(e); err != nil {
			return err
		}
	}
	if _, err := p.FleetTTLDuration(); err != nil {
		return err
	}
	if strings.ContainsAny(p.FleetRemote, " \t\n/") || strings.HasPrefix(p.FleetRemote, "-") {
		return fmt.Errorf("fleet_remote %q is not a remote name", p.FleetRemote)
	}
	return p.EtcdAuth().Validate()
}

// Validate checks a's shape: absolute paths, a certificate with its key,
// a user name etcd could have.
func (a EtcdAuth) Validate() error {
	for _, f := range []struct{ name, path string }{{"etcd_cert", a.Cert}, {"etcd_key", a.Key}, {"etcd_cacert", a.CACert}, {"etcd_password_file", a.PasswordFile}} {
		if f.path != "" && !filepath.IsAbs(f.path) {
			return fmt.Errorf("%s %q is not an absolute path", f.name, f.path)
		}
	}
	if (a.Cert == "") != (a.Key == "") {
		return errors.New("etcd_cert and etcd_key go together: a client certificate and its private key")
	}
	if strings.ContainsAny(a.User, " \t\n:") {
		return fmt.Errorf("etcd_user %q is not an etcd user name", a.User)
	}
	if a.PasswordFile != "" && a.User == "" {
		return errors.New("etcd_password_file goes with etcd_user")
	}
	return nil
}

// DefaultFleetTTL and DefaultFleetRemote apply when the policy leaves them out.
const (
	DefaultFleetTTL    = 10 * time.Second
	DefaultFleetRemote = "origin"
)

// FleetTTLDuration is the fleet lease's TTL: at least a second, whole
// seconds (etcd's unit).
func (p Policy) FleetTTLDuration() (time.Duration, error) {
	if p.FleetTTL == "" {
		return DefaultFleetTTL, nil
	}
	d, err := time.ParseDuration(p.FleetTTL)
	if err != nil || d < time.Second || d%time.Second != 0 {
		return 0, fmt.Errorf("fleet_ttl %q is not a whole number of seconds, at least 1s", p.FleetTTL)
	}
	return d, nil
}

// FleetRemoteName is the remote that names the key space.
func (p Policy) FleetRemoteName() string {
	if p.FleetRemote == "" {
		return DefaultFleetRemote
	}
	return p.FleetRemote
}

// PutPolicy writes policy.json.
func (tx *Tx) PutPolicy(p *Policy) error {
	if err := p.validate(); err != nil {
		return decision.Say(decision.InvalidPolicy, "as-given", err)
	}
	return tx.put(tx.path(policyName), p, durable)
}

// Allocation reads allocations/<id>.json, and its runtime file over it
// when it has one (see [Runtime]); ErrNotFound when absent.
func (tx *Tx) Allocation(id string) (Allocation, error) {
	return tx.allocation(id, true)
}

// allocation reads an allocation; withRuntime false says it has no runtime
// file (a listing knows).
func (tx *Tx) allocation(id string, withRuntime bool) (Allocation, error) {
	a, err := tx.allocationRecord(id)
	if err != nil || !withRuntime {
		return a, err
	}
	return a, tx.layRuntime(&a)
}

// allocationRecord reads allocations/<id>.json alone, once a section.
func (tx *Tx) allocationRecord(id string) (Allocation, error) {
	var a Allocation
	if err := validID("allocation", id); err != nil {
		return a, err
	}
	if a, ok := tx.records[id]; ok {
		return a.clone(), nil
	}
	p := tx.path(allocationsDir, id+".json")
	ok, err := readRecord(p, &a)
	if err != nil {
		return a, err
	}
	if !ok {
		return a, fmt.Errorf("allocation %s: %w", id, ErrNotFound)
	}
	if a.AllocationID != id {
		return a, invalid(p, fmt.Errorf("allocation_id %q does not match the file name", a.AllocationID))
	}
	if tx.records == nil {
		tx.records = map[string]Allocation{}
	}
	tx.records[id] = a.clone()
	return a, nil
}

// clone is a copy of a that shares nothing a caller may change.
func (a Allocation) clone() Allocation {
	a.ExternalBindings = slices.Clone(a.ExternalBindings)
	if a.Branch != nil {
		b := *a.Branch
		a.Branch = &b
	}
	return a
}

// layRuntime lays the allocation's runtime file, when there is one, over
// a: its runtime bindings replace those of the record (which keeps its
// opaque ones), its generation the record's. Like a lease file, a runtime
// file is boot-scoped: one that is unreadable and was last modified before
// this boot is read as absent (the record's runtime state, of an earlier
// boot, stands) and a write section removes it.
func (tx *Tx) layRuntime(a *Allocation) error {
	p := tx.path(runtimeDir, a.AllocationID+".json")
	data, ok, err := readRecordFile(p)
	if err != nil || !ok {
		return err // unreadable is never absent
	}
	var r Runtime
	err = decodeStrict(data, &r)
	if err == nil && r.AllocationID != a.AllocationID {
		err = fmt.Errorf("allocation_id %q does not match the file name", r.AllocationID)
	}
	for _, b := range r.RuntimeBindings {
		if err == nil && !isRuntimeBinding(b) {
			err = fmt.Errorf("runtime_bindings holds %q, which is not a runtime binding", b)
		}
	}
	if err != nil {
		if earlier, _ := writtenBeforeBoot(p); earlier {
			return tx.dropTorn(p, a.AllocationID, "allocation_runtime_torn_dropped", err)
		}
		return invalid(p, err)
	}
	a.ExternalBindings = append(opaqueBindings(a.ExternalBindings), r.RuntimeBindings...)
	a.LeaseGeneration = r.LeaseGeneration
	a.runtimeVersion = r.RecordVersion
	return nil
}

func isRuntimeBinding(b string) bool { return strings.HasPrefix(b, proc.RuntimeBindingPrefix) }

// opaqueBindings returns the bindings that are not runtime bindings (never nil).
func opaqueBindings(all []string) []string {
	out := []string{}
	for _, b := range all {
		if !isRuntimeBinding(b) {
			out = append(out, b)
		}
	}
	return out
}

// runtimeBindings returns the runtime bindings of all (never nil).
func runtimeBindings(all []string) []string {
	out := []string{}
	for _, b := range all {
		if isRuntimeBinding(b) {
			out = append(out, b)
		}
	}
	return out
}

// Allocations reads every allocation record, sorted by id, each with its
// runtime file over it.
func (tx *Tx) Allocations() ([]Allocation, error) {
	ids, err := tx.list(allocationsDir)
	if err != nil {
		return nil, err
	}
	withRuntime := map[string]bool{}
	if has, err := tx.hasDir(runtimeDir); err != nil {
		return nil, err
	} else if has {
		rts, err := tx.list(runtimeDir)
		if err != nil {
			return nil, err
		}
		for _, id := range rts {
			withRuntime[id] = true
		}
	}
	out := make([]Allocation, 0, len(ids))
	for _, id := range ids {
		a, err := tx.allocation(id, withRuntime[id])
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if decision.CodeOf(err) == decision.InvalidMetadata && validID("allocation", id) != nil {
				return nil, invalid(tx.path(allocationsDir, id+".json"), errors.New("file name is not an allocation id"))
			}
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// PutAllocation writes an allocation record, whole and durably. An
// allocation with a runtime file gets that file rewritten first with the
// same runtime state, so that the two never disagree, even after a crash
// between the writes.
func (tx *Tx) PutAllocation(a *Allocation) error {
	if err := validID("allocation", a.AllocationID); err != nil {
		return err
	}
	if a.ExternalBindings == nil {
		a.ExternalBindings = []string{}
	}
	if a.runtimeVersion == 0 {
		// One not read through Allocation (a record made afresh) may
		// still have a runtime file: its version is needed to rewrite it.
		var r Runtime
		ok, err := readRecord(tx.path(runtimeDir, a.AllocationID+".json"), &r)
		if err != nil && !errors.Is(err, unix.ENOTDIR) {
			return err
		}
		if ok {
			a.runtimeVersion = r.RecordVersion
		}
	}
	if a.runtimeVersion > 0 {
		if err := tx.putRuntime(a); err != nil {
			return err
		}
	}
	delete(tx.records, a.AllocationID)
	return tx.put(tx.path(allocationsDir, a.AllocationID+".json"), a, durable)
}

// PutAllocationRuntime writes an allocation's runtime state (its runtime
// occupancy bindings and lease_generation) into its runtime file,
// boot-scoped: no sync (see the package doc). The allocation's record is
// left as it is; should anything else differ from it (an opaque binding,
// an owner), the allocation is written as a record instead (PutAllocation).
func (tx *Tx) PutAllocationRuntime(a *Allocation) error {
	cur, err := tx.allocationRecord(a.AllocationID)
	if errors.Is(err, ErrNotFound) {
		return tx.PutAllocation(a)
	}
	if err != nil {
		return err
	}
	if !sameRecord(cur, *a) {
		return tx.PutAllocation(a)
	}
	return tx.putRuntime(a)
}

// sameRecord reports whether two versions of an allocation differ at most
// in runtime state: runtime bindings, lease_generation, updated_at, versions.
func sameRecord(x, y Allocation) bool {
	return x.AllocationID == y.AllocationID && x.TaskKey == y.TaskKey && x.Owner == y.Owner && x.Role == y.Role &&
		x.Lifecycle == y.Lifecycle && x.WorktreePath == y.WorktreePath && x.WorktreeKey == y.WorktreeKey &&
		(x.Branch == nil) == (y.Branch == nil) && (x.Branch == nil || *x.Branch == *y.Branch) &&
		x.BaseCommit == y.BaseCommit && x.CreatedAt == y.CreatedAt &&
		slices.Equal(opaqueBindings(x.ExternalBindings), opaqueBindings(y.ExternalBindings))
}

// putRuntime writes a's runtime file, making the runtime directory if this
// store, made by an older wt, has none.
func (tx *Tx) putRuntime(a *Allocation) error {
	if has, err := tx.hasDir(runtimeDir); err != nil {
		return err
	} else if !has {
		if err := mkdirNoFollow(tx.path(runtimeDir)); err != nil {
			return err
		}
	}
	r := Runtime{Meta: Meta{RecordVersion: a.runtimeVersion}, AllocationID: a.AllocationID,
		RuntimeBindings: runtimeBindings(a.ExternalBindings), LeaseGeneration: a.LeaseGeneration}
	if err := tx.put(tx.path(runtimeDir, a.AllocationID+".json"), &r, bootScoped); err != nil {
		return err
	}
	a.runtimeVersion = r.RecordVersion
	return nil
}

// hasDir reports whether the store has the optional directory dir; one
// that is there but not a directory is INVALID_METADATA.
func (tx *Tx) hasDir(dir string) (bool, error) {
	p := tx.path(dir)
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, invalid(p, err)
	}
	if !fi.IsDir() {
		return false, invalid(p, errors.New("not a directory (a symlink?)"))
	}
	return true, nil
}

// Binding reads bindings/<key>.json.
func (tx *Tx) Binding(key string) (Binding, bool, error) {
	var b Binding
	if err := validKey(key); err != nil {
		return b, false, nil // the main checkout and odd names are never bound
	}
	p := tx.path(bindingsDir, key+".json")
	ok, err := readRecord(p, &b)
	if err == nil && ok && b.WorktreeKey != key {
		err = invalid(p, fmt.Errorf("worktree_key %q does not match the file name", b.WorktreeKey))
	}
	if err == nil && ok {
		if verr := validID("allocation", b.AllocationID); verr != nil {
			err = invalid(p, verr)
		}
	}
	return b, ok, err
}

// Bindings lists the keys of every binding.
func (tx *Tx) Bindings() ([]string, error) { return tx.list(bindingsDir) }

// PutBinding writes a binding.
func (tx *Tx) PutBinding(b *Binding) error {
	if err := validKey(b.WorktreeKey); err != nil {
		return err
	}
	return tx.put(tx.path(bindingsDir, b.WorktreeKey+".json"), b, durable)
}

// RemoveBinding removes a binding.
func (tx *Tx) RemoveBinding(key string) error {
	if err := validKey(key); err != nil {
		return err
	}
	return tx.remove(tx.path(bindingsDir, key+".json"), durable)
}

// Registration reads registrations/<key>.json and returns it with its bytes.
func (tx *Tx) Registration(key string) (Registration, []byte, bool, error) {
	var r Registration
	if err := validKey(key); err != nil {
		return r, nil, false, nil
	}
	p := tx.path(registrationsDir, key+".json")
	data, ok, err := readRecordFile(p)
	if err != nil || !ok {
		return r, nil, false, err
	}
	if err := decodeStrict(data, &r); err != nil {
		return r, nil, false, invalid(p, err)
	}
	if r.Contract != RegistrationContract || r.WorktreeKey != key {
		return r, nil, false, invalid(p, fmt.Errorf("not a %s document for key %q", RegistrationContract, key))
	}
	return r, data, true, nil
}

// ParseRegistration reads a registration document's bytes (a marker's, say)
// strictly, as Registration reads the document.
func ParseRegistration(data []byte) (Registration, error) {
	var r Registration
	if err := decodeStrict(data, &r); err != nil {
		return r, err
	}
	if r.Contract != RegistrationContract {
		return r, fmt.Errorf("not a %s document", RegistrationContract)
	}
	return r, nil
}

// markerPath is the registration marker in git's admin dir for key.
func (tx *Tx) markerPath(key string) string {
	return filepath.Join(tx.s.commonDir, "worktrees", key, MarkerName)
}

// Marker reads the registration marker in git's admin dir. ok is false when
// it (or the admin dir) is absent.
func (tx *Tx) Marker(key string) ([]byte, bool, error) {
	if err := validKey(key); err != nil {
		return nil, false, nil
	}
	p := tx.markerPath(key)
	data, err := readNoFollow(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, invalid(p, err)
	}
	return data, true, nil
}

// Registered reports whether key's binding counts: the registration document
// exists and the marker in git's admin dir is byte for byte the same. A
// worktree that git re-created under a reused admin name has no marker, so it
// never inherits the old allocation.
func (tx *Tx) Registered(key string) (Registration, bool, error) {
	r, doc, ok, err := tx.Registration(key)
	if err != nil || !ok {
		return r, false, err
	}
	marker, ok, err := tx.Marker(key)
	if err != nil || !ok {
		return r, false, err
	}
	return r, bytes.Equal(doc, marker), nil
}

// PutRegistration writes the marker and then the registration document, the
// same bytes. The admin dir must exist. The order matters after a crash
// between the two: a marker without its document is a worktree not yet
// registered (the document decides; backfill, or allocate's recovery,
// writes both again), where a document without its marker would read as a
// worktree git re-created under a reused name, which never inherits its
// allocation.
func (tx *Tx) PutRegistration(r *Registration) error {
	if err := validKey(r.WorktreeKey); err != nil {
		return err
	}
	r.Contract = RegistrationContract
	r.SchemaVersion = SchemaVersion
	r.RecordVersion++
	data, err := strictjson.MarshalIndent(r)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	tx.mustWrite()
	tx.durable = true
	if err := writeAtomic(tx.markerPath(r.WorktreeKey), data, durable); err != nil {
		return err
	}
	crashpoint.Here("registration:first-written")
	return writeAtomic(tx.path(registrationsDir, r.WorktreeKey+".json"), data, durable)
}

// RemoveRegistration removes the marker, then the document.
func (tx *Tx) RemoveRegistration(key string) error {
	if err := validKey(key); err != nil {
		return err
	}
	if err := tx.remove(tx.markerPath(key), durable); err != nil && !errors.Is(err, unix.ENOTDIR) {
		return err
	}
	return tx.remove(tx.path(registrationsDir, key+".json"), durable)
}

// Lease reads leases/<allocation_id>.json.
func (tx *Tx) Lease(allocationID string) (Lease, bool, error) {
	var l Lease
	if err := validID("allocation", allocationID); err != nil {
		return l, false, err
	}
	p := tx.path(leasesDir, allocationID+".json")
	data, ok, err := readRecordFile(p)
	if err != nil || !ok {
		return l, false, err // unreadable is never dead
	}
	if err := decodeStrict(data, &l); err != nil {
		if earlier, _ := writtenBeforeBoot(p); earlier {
			// Lease files are not fsynced (boot-scoped, see the package
			// doc): a power loss may leave one torn. Its holder was of
			// an earlier boot, so it is dead, whatever the bytes say.
			return Lease{}, false, tx.dropTorn(p, allocationID, "writer_lease_torn_dropped", err)
		}
		return l, false, invalid(p, err)
	}
	if l.AllocationID != allocationID {
		return l, false, invalid(p, fmt.Errorf("allocation_id %q does not match the file name", l.AllocationID))
	}
	return l, true, nil
}

// dropTorn removes, in a write section, a boot-scoped file (a lease or a
// runtime file) torn before this boot (in a read section it is only read
// as absent), and records it as event.
func (tx *Tx) dropTorn(p, allocationID, event string, why error) error {
	if !tx.exclusive {
		return nil
	}
	if err := tx.remove(p, bootScoped); err != nil {
		return err
	}
	return tx.AppendEvent(Event{At: Now(), Event: event,
		AllocationID: &allocationID, Actor: proc.Actor(),
		Detail: map[string]any{"file": p, "error": why.Error(), "why": "written before this boot and unreadable: a power loss tore it; what it described was of that boot"}})
}

// writtenBeforeBoot reports whether the regular file p was last modified
// before this boot began.
func writtenBeforeBoot(p string) (bool, error) {
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return false, err
	}
	boot, err := proc.BootTime()
	if err != nil {
		return false, err
	}
	return fi.ModTime().Before(boot), nil
}

// Leases lists the allocation ids that have a lease file.
func (tx *Tx) Leases() ([]string, error) { return tx.list(leasesDir) }

// PutLease writes a lease.
func (tx *Tx) PutLease(l *Lease) error {
	if err := validID("allocation", l.AllocationID); err != nil {
		return err
	}
	return tx.put(tx.path(leasesDir, l.AllocationID+".json"), l, bootScoped)
}

// RemoveLease removes a lease.
func (tx *Tx) RemoveLease(allocationID string) error {
	if err := validID("allocation", allocationID); err != nil {
		return err
	}
	return tx.remove(tx.path(leasesDir, allocationID+".json"), bootScoped)
}

// Handoff reads handoffs/<allocation_id>.json: the next grant of the
// allocation's worktree, reserved (ok false when none is).
func (tx *Tx) Handoff(allocationID string) (Handoff, bool, error) {
	var h Handoff
	if err := validID("allocation", allocationID); err != nil {
		return h, false, err
	}
	p := tx.path(handoffsDir, allocationID+".json")
	ok, err := readRecord(p, &h)
	if err != nil || !ok {
		return h, false, err
	}
	if h.AllocationID != allocationID {
		return h, false, invalid(p, fmt.Errorf("allocation_id %q does not match the file name", h.AllocationID))
	}
	return h, true, nil
}

// PutHandoff writes a reservation, making the handoffs directory if this
// store has none yet.
func (tx *Tx) PutHandoff(h *Handoff) error {
	if err := validID("allocation", h.AllocationID); err != nil {
		return err
	}
	if has, err := tx.hasDir(handoffsDir); err != nil {
		return err
	} else if !has {
		if err := mkdirNoFollow(tx.path(handoffsDir)); err != nil {
			return err
		}
	}
	return tx.put(tx.path(handoffsDir, h.AllocationID+".json"), h, durable)
}

// RemoveHandoff removes a reservation (none is fine).
func (tx *Tx) RemoveHandoff(allocationID string) error {
	if err := validID("allocation", allocationID); err != nil {
		return err
	}
	if has, err := tx.hasDir(handoffsDir); err != nil || !has {
		return err
	}
	return tx.remove(tx.path(handoffsDir, allocationID+".json"), durable)
}

// Journals reads every journal entry in flight.
func (tx *Tx) Journals() ([]Journal, error) {
	ids, err := tx.list(journalDir)
	if err != nil {
		return nil, err
	}
	var out []Journal
	for _, id := range ids {
		p := tx.path(journalDir, id+".json")
		if err := validID("transaction", id); err != nil {
			return nil, invalid(p, err)
		}
		var j Journal
		ok, err := readRecord(p, &j)
		if err != nil {
			return nil, err
		}
		if ok && j.TransactionID != id {
			return nil, invalid(p, fmt.Errorf("transaction_id %q does not match the file name", j.TransactionID))
		}
		if ok {
			out = append(out, j)
		}
	}
	return out, nil
}

// PutJournal writes a journal entry.
func (tx *Tx) PutJournal(j *Journal) error {
	if err := validID("transaction", j.TransactionID); err != nil {
		return err
	}
	return tx.put(tx.path(journalDir, j.TransactionID+".json"), j, durable)
}

// FinishJournal writes the receipt and then removes the journal entry.
func (tx *Tx) FinishJournal(j Journal, outcome string, payload json.RawMessage, at string) error {
	r := Receipt{TransactionID: j.TransactionID, Operation: j.Operation, Outcome: outcome,
		Target: j.Target, Payload: payload, FinishedAt: at}
	if r.Payload == nil {
		r.Payload = json.RawMessage("null")
	}
	if err := tx.put(tx.path(receiptsDir, j.TransactionID+".json"), &r, durable); err != nil {
		return err
	}
	return tx.remove(tx.path(journalDir, j.TransactionID+".json"), durable)
}

// Receipts reads every receipt of a finished multi-step operation.
func (tx *Tx) Receipts() ([]Receipt, error) {
	ids, err := tx.list(receiptsDir)
	if err != nil {
		return nil, err
	}
	out := make([]Receipt, 0, len(ids))
	for _, id := range ids {
		p := tx.path(receiptsDir, id+".json")
		if err := validID("transaction", id); err != nil {
			return nil, invalid(p, err)
		}
		var r Receipt
		ok, err := readRecord(p, &r)
		if err != nil {
			return nil, err
		}
		if ok && r.TransactionID != id {
			return nil, invalid(p, fmt.Errorf("transaction_id %q does not match the file name", r.TransactionID))
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// AppendEvent appends one line to events.jsonl. The file is opened without
// following a symlink, once per section, and each line is one write(2) in
// append mode, so a crashed process leaves whole lines. The lines are
// fsynced when the section ends, if it made a durable write (see the
// package doc for runtime sections).
func (tx *Tx) AppendEvent(e Event) error {
	tx.mustWrite()
	if e.Detail == nil {
		e.Detail = map[string]any{}
	}
	line, err := strictjson.Marshal(e)
	if err != nil {
		return err
	}
	if err := tx.PrepareEvents(); err != nil {
		return err
	}
	line = append(line, '\n')
	n, err := unix.Write(tx.events, line)
	for err == unix.EINTR && n <= 0 {
		n, err = unix.Write(tx.events, line)
	}
	if err == nil && n != len(line) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return notWritable(tx.path(eventsName), fmt.Errorf("append: %w", err))
	}
	return nil
}

// PrepareEvents opens events.jsonl for the section's appends, if it is not
// open yet. A section that must not change anything it cannot record (a
// lease grant, whose child must never start unlogged) calls it before its
// first write. O_NONBLOCK: a FIFO planted there fails the open (ENXIO) or
// the regular-file check instead of blocking the section forever.
func (tx *Tx) PrepareEvents() error {
	tx.mustWrite()
	if tx.eventsOpen {
		return nil
	}
	p := tx.path(eventsName)
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o644)
	if err != nil {
		if isNotWritable(err) {
			return notWritable(p, err)
		}
		return invalid(p, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd) // Best effort: already failing.
		return invalid(p, errors.New("not a regular file"))
	}
	tx.events, tx.eventsOpen = fd, true
	return nil
}

// Durable makes the section's events durable even when it writes only
// runtime records: an operator's decision (a lease abandoned, released,
// expired or adopted) is audit history that must survive a power loss.
func (tx *Tx) Durable() {
	tx.mustWrite()
	tx.durable = true
}

// closeEvents ends the section's use of events.jsonl.
func (tx *Tx) closeEvents() error {
	if !tx.eventsOpen {
		return nil
	}
	var err error
	if tx.durable {
		if err = unix.Fsync(tx.events); err != nil {
			err = fmt.Errorf("fsync %s: %w", tx.path(eventsName), err)
		}
	}
	if cerr := unix.Close(tx.events); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", tx.path(eventsName), cerr)
	}
	tx.eventsOpen = false
	return err
}

// EventsPath is the path of events.jsonl, for listing commands.
func (tx *Tx) EventsPath() string { return tx.path(eventsName) }

// PolicyHint reads policy.json without the store's lock and without the
// strict checks: a hint to begin work early (wt-exec starts the fleet
// helper before its lease section when it says etcd), never a decision,
// which takes the policy read inside a section ([Tx.Policy]). ok is false
// when the file is absent or unreadable, and when it cannot name etcd.
func (s *Store) PolicyHint() (p Policy, ok bool) {
	data, err := readNoFollow(filepath.Join(s.root, policyName))
	if err != nil {
		return p, false
	}
	// A policy that does not name etcd anywhere is not decoded: the
	// common case (no fleet) pays a read, not a decoding.
	if !bytes.Contains(data, []byte(`"`+CoordinatorEtcd+`"`)) {
		return p, false
	}
	return p, json.Unmarshal(data, &p) == nil
}

// LogEvent appends event name about allocation id (none when "") to
// events.jsonl, with this process as the actor.
func (tx *Tx) LogEvent(name, id string, detail map[string]any) error {
	e := Event{At: Now(), Event: name, Actor: proc.Actor(), Detail: detail}
	if id != "" {
		e.AllocationID = &id
	}
	return tx.AppendEvent(e)
}
