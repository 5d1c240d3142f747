package store

import (
	"encoding/json"
	"time"

	"github.com/wt-tool/wt/core/proc"
)

// Versions of what this build reads and writes.
const (
	SchemaVersion        = 1 // of every record file
	LayoutVersion        = 1 // of the directory layout
	RegistrationContract = "worktree-registration/v1"
)

// Roles (docs/design.md, "Allocations, roles and lifecycles").
const (
	RoleFeature     = "feature"
	RoleAudit       = "audit"
	RoleCanonical   = "canonical"
	RoleIntegration = "integration"
	RoleRecovery    = "recovery"
)

// Roles lists every valid role.
var Roles = []string{RoleFeature, RoleAudit, RoleCanonical, RoleIntegration, RoleRecovery}

// Lifecycles (docs/design.md, "Allocations, roles and lifecycles").
const (
	Active   = "ACTIVE"
	Retained = "RETAINED"
	Released = "RELEASED"
)

// Policy values.
const (
	EnforcementEnforce = "enforce"
	EnforcementWarn    = "warn"
	UnmanagedAllow     = "allow"
	UnmanagedRefuse    = "refuse"
)

// Meta is the versioning every record carries.
type Meta struct {
	SchemaVersion int `json:"schema_version"`
	RecordVersion int `json:"record_version"`
}

func (m *Meta) meta() *Meta { return m }

// Record is any record file.
type Record interface{ meta() *Meta }

// Repository is repository.json.
type Repository struct {
	Meta
	RepositoryID string `json:"repository_id"`
	CreatedAt    string `json:"created_at"`
	UpdatedAt    string `json:"updated_at"`
}

// Policy is policy.json. MaxActive nil means unlimited.
type Policy struct {
	Meta
	PublicationBranch string `json:"publication_branch"`
	Enforcement       string `json:"enforcement"`
	Unmanaged         string `json:"unmanaged"`
	MaxActive         *int   `json:"max_active"`
	UpdatedAt         string `json:"updated_at"`
	// Fleet mode (docs/design.md, "Fleet mode"): absent, or Coordinator "none", is off.
	Coordinator   string   `json:"coordinator,omitempty"`
	EtcdEndpoints []string `json:"etcd_endpoints,omitempty"`
	// FleetTTL is the fleet lease's TTL (Go duration text, default 10s).
	FleetTTL string `json:"fleet_ttl,omitempty"`
	// FleetRemote is the git remote whose URL names the key space
	// (default origin).
	FleetRemote string `json:"fleet_remote,omitempty"`
	// FleetCaseSensitive keeps the case of the remote URL's path in the
	// key space (fleet.Spelling): for a server whose paths differ by case.
	FleetCaseSensitive bool `json:"fleet_case_sensitive,omitempty"`
	// etcd's credentials on this machine, as files (their contents are
	// never copied into the store, the events or a lease): a TLS client
	// certificate and its key, the CA that signs etcd's certificate, and
	// an etcd user whose password is in EtcdPasswordFile (else in
	// $WT_ETCD_PASSWORD). See EtcdAuth.
	EtcdCert         string `json:"etcd_cert,omitempty"`
	EtcdKey          string `json:"etcd_key,omitempty"`
	EtcdCACert       string `json:"etcd_cacert,omitempty"`
	EtcdUser         string `json:"etcd_user,omitempty"`
	EtcdPasswordFile string `json:"etcd_password_file,omitempty"`
	// FleetServerFence is set when the remote checks fencing tokens (in
	// fleet mode against etcd, in local mode by the order of grants)
	// itself (wt-hook install --server): wt-exec then gives every git push
	// its command makes the task's token as a push option.
	FleetServerFence bool `json:"fleet_server_fence,omitempty"`
	// Confine is wt-exec's Landlock confinement of its command: off (or
	// absent), auto or require. ConfineAllow lists more directories a
	// confined command may write beneath (absolute paths).
	Confine      string   `json:"confine,omitempty"`
	ConfineAllow []string `json:"confine_allow,omitempty"`
	// BranchLayout names the task branch a new allocation gets when none
	// is given: flat (or absent) is wt/<task>, task-dir is wt/<task>/work,
	// a ref directory of the task's own, which is what lets confinement
	// keep every other task's branch out of a confined agent's reach.
	BranchLayout string `json:"branch_layout,omitempty"`
	// RequireOwner makes wt-exec in a governed worktree name the task's
	// owner (--owner), or consume a handoff reserved for its client.
	RequireOwner bool `json:"require_owner,omitempty"`
	// PublicationLease makes the lander (wt-admin land, holding the
	// publication lease) the only writer of the publication branch: the
	// gate refuses every other move of it (PUBLICATION_LEASE_REQUIRED).
	PublicationLease bool `json:"publication_lease,omitempty"`
	// Forge names the forge the repository's remote is on, whose open
	// pull requests keep a task's work from being archived, pruned or its
	// lease taken over (core/forge): gitea (Gitea or Forgejo, through its
	// API, with the token in ForgeTokenFile, at ForgeURL or the remote's
	// scheme and host), github (through the gh command), or absent (none).
	// ForgeRemote is the remote it is (default origin).
	Forge          string `json:"forge,omitempty"`
	ForgeURL       string `json:"forge_url,omitempty"`
	ForgeTokenFile string `json:"forge_token_file,omitempty"`
	ForgeRemote    string `json:"forge_remote,omitempty"`
}

// Forges wt knows (Policy.Forge).
const (
	ForgeGitea  = "gitea"
	ForgeGitHub = "github"
)

// EtcdAuth is how a client proves itself to etcd: files on the machine
// that connects (never their contents), and a user name.
type EtcdAuth struct {
	Cert         string `json:"cert,omitempty"`
	Key          string `json:"key,omitempty"`
	CACert       string `json:"cacert,omitempty"`
	User         string `json:"user,omitempty"`
	PasswordFile string `json:"password_file,omitempty"`
}

// IsZero reports whether a is no credential at all.
func (a EtcdAuth) IsZero() bool { return a == EtcdAuth{} }

// EtcdAuth is the policy's etcd credentials.
func (p Policy) EtcdAuth() EtcdAuth {
	return EtcdAuth{Cert: p.EtcdCert, Key: p.EtcdKey, CACert: p.EtcdCACert, User: p.EtcdUser, PasswordFile: p.EtcdPasswordFile}
}

// Branch layouts.
const (
	LayoutFlat    = "flat"
	LayoutTaskDir = "task-dir"
)

// Layout is the policy's branch layout (flat when unset).
func (p Policy) Layout() string { return or(p.BranchLayout, LayoutFlat) }

// or is v, or def when v is unset.
func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// TaskBranch is the branch the layout gives task's allocations.
func (p Policy) TaskBranch(task string) string {
	if p.Layout() == LayoutTaskDir {
		return "wt/" + task + "/work"
	}
	return "wt/" + task
}

// Confinement modes.
const (
	ConfineOff     = "off"
	ConfineAuto    = "auto"
	ConfineRequire = "require"
)

// ConfineMode is the policy's confinement mode (off when unset).
func (p Policy) ConfineMode() string { return or(p.Confine, ConfineOff) }

// Coordinators.
const (
	CoordinatorNone = "none"
	CoordinatorEtcd = "etcd"
)

// FleetOn reports whether the policy's coordinator is etcd.
func (p Policy) FleetOn() bool { return p.Coordinator == CoordinatorEtcd }

// Allocation is allocations/<id>.json: who owns a task and keeps its work.
type Allocation struct {
	Meta
	AllocationID     string   `json:"allocation_id"`
	TaskKey          string   `json:"task_key"`
	Owner            string   `json:"owner"`
	Role             string   `json:"role"`
	Lifecycle        string   `json:"lifecycle"`
	WorktreePath     string   `json:"worktree_path"`
	WorktreeKey      string   `json:"worktree_key"`
	Branch           *string  `json:"branch"`
	BaseCommit       string   `json:"base_commit"`
	ExternalBindings []string `json:"external_bindings"`
	LeaseGeneration  int      `json:"lease_generation"`
	CreatedAt        string   `json:"created_at"`
	UpdatedAt        string   `json:"updated_at"`
	// runtimeVersion is the record_version of the allocation's runtime
	// file as last read or written (0: it has none).
	runtimeVersion int
}

// Runtime is runtime/<allocation id>.json: an allocation's runtime state,
// kept apart from its record so that a wt-exec run, which changes only
// this, writes a boot-scoped file instead of syncing the record that holds
// the task's ownership (see the package doc). When present it stands for
// the allocation's runtime occupancy bindings (those with
// proc.RuntimeBindingPrefix; an allocation's opaque external bindings stay
// in its record) and its lease_generation.
type Runtime struct {
	Meta
	AllocationID    string   `json:"allocation_id"`
	RuntimeBindings []string `json:"runtime_bindings"`
	LeaseGeneration int      `json:"lease_generation"`
}

// Binding is bindings/<key>.json: which allocation a worktree key serves.
type Binding struct {
	Meta
	WorktreeKey  string `json:"worktree_key"`
	AllocationID string `json:"allocation_id"`
}

// Registration is registrations/<key>.json and, byte for byte, the marker
// wt-registration in git's admin dir. A binding counts only while both agree.
type Registration struct {
	Meta
	Contract       string `json:"contract"`
	RegistrationID string `json:"registration_id"`
	WorktreeKey    string `json:"worktree_key"`
	WorktreePath   string `json:"worktree_path"`
	AllocationID   string `json:"allocation_id"`
	CreatedAt      string `json:"created_at"`
}

// ChildGroup is the process group wt-exec made for its child.
type ChildGroup struct {
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"`
	// Cgroup is the cgroup v2 directory wt-exec made for the command
	// ("" where it could make none): every process the command starts
	// stays in it, whatever session, group or environment it takes.
	Cgroup string `json:"cgroup,omitempty"`
}

// Lease is leases/<allocation_id>.json: the live process that may write now.
type Lease struct {
	Meta
	LeaseID      string      `json:"lease_id"`
	RepositoryID string      `json:"repository_id"`
	AllocationID string      `json:"allocation_id"`
	WorktreePath string      `json:"worktree_path"`
	Owner        string      `json:"owner"`
	Holder       proc.Holder `json:"holder"`
	Generation   int         `json:"generation"`
	Child        *ChildGroup `json:"child"`
	AcquiredAt   string      `json:"acquired_at"`
	RenewedAt    string      `json:"renewed_at"`
	ExpiresAt    *string     `json:"expires_at"`
	// Fleet is the fleet lease taken with it (fleet mode only).
	Fleet *FleetLease `json:"fleet,omitempty"`
	// Confined is the Landlock confinement its command runs under, when
	// wt-exec confined it.
	Confined *Confinement `json:"confined,omitempty"`
	// HolderResolverVersion names the rules that resolved the holder
	// (proc.HolderResolverVersion): a reader of an older lease knows
	// which rules it was granted under.
	HolderResolverVersion int `json:"holder_resolver_version,omitempty"`
	// Provenance says where the lease came from, when not from a plain
	// grant: adopted, transferred, a handoff consumed.
	Provenance *Provenance `json:"provenance,omitempty"`
}

// Provenance is how a lease came to its holder other than by a plain
// grant.
type Provenance struct {
	// How is adopted, transferred, handoff or taken_over.
	How string `json:"how"`
	// PriorLeaseID and PriorHolder are the lease it replaced (the same
	// lease id for a transfer) and that lease's holder.
	PriorLeaseID string       `json:"prior_lease_id"`
	PriorHolder  *proc.Holder `json:"prior_holder,omitempty"`
	// By is the process that did it (wt-admin's, or the handoff's
	// author).
	By proc.Identity `json:"by"`
	// ByClient is the client that asked, when one was named.
	ByClient string `json:"by_client,omitempty"`
	At       string `json:"at"`
	Reason   string `json:"reason,omitempty"`
}

// Provenance kinds.
const (
	ProvenanceAdopted     = "adopted"
	ProvenanceTransferred = "transferred"
	ProvenanceHandoff     = "handoff"
	// ProvenanceTakenOver: granted over a lease whose holder was gone
	// (Reason says how it ended).
	ProvenanceTakenOver = "taken_over"
)

// Handoff is handoffs/<allocation_id>.json: the worktree's next grant,
// reserved for one client (wt-admin lease handoff) until ExpiresAt.
type Handoff struct {
	Meta
	AllocationID string `json:"allocation_id"`
	WorktreePath string `json:"worktree_path"`
	ToClient     string `json:"to_client"`
	// FromLeaseID and FromGeneration are the lease that reserved it.
	FromLeaseID    string `json:"from_lease_id"`
	FromGeneration int    `json:"from_generation"`
	// By is who reserved it: the holder (or a descendant of it), or an
	// operator (Operator set).
	By        proc.Identity `json:"by"`
	ByClient  string        `json:"by_client"`
	Operator  bool          `json:"operator"`
	CreatedAt string        `json:"created_at"`
	ExpiresAt string        `json:"expires_at"`
}

// Confinement is what a confined command may do: write only beneath Write
// (and to the device files in Devices), read everywhere, and, when
// SignalsScoped, signal only processes of its own Landlock domain.
type Confinement struct {
	ABI           int      `json:"abi"`
	Write         []string `json:"write"`
	Devices       []string `json:"devices"`
	SignalsScoped bool     `json:"signals_scoped"`
	// TempDir is its private TMPDIR, removed when the command has ended.
	TempDir string `json:"tmpdir"`
	// View holds the layers of its private view of the common dir ("" for
	// none), removed once the command has ended and its branch is
	// published.
	View string `json:"view,omitempty"`
}

// FleetLease is the fleet side of a writer lease: the task key in etcd and
// its create revision, the fencing token a push is checked against.
type FleetLease struct {
	Key       string   `json:"key"`
	Revision  int64    `json:"revision"`
	EtcdLease int64    `json:"etcd_lease"`
	Endpoints []string `json:"endpoints"`
	TTL       string   `json:"ttl"`
}

// Journal is journal/<tx>.json: a multi-step operation in flight. Payload
// belongs to the operation and is validated by it.
type Journal struct {
	Meta
	TransactionID string          `json:"transaction_id"`
	Operation     string          `json:"operation"`
	Phase         string          `json:"phase"`
	Actor         proc.Identity   `json:"actor"`
	Target        string          `json:"target"`
	Payload       json.RawMessage `json:"payload"`
	CreatedAt     string          `json:"created_at"`
	UpdatedAt     string          `json:"updated_at"`
}

// Receipt is receipts/<tx>.json: how a multi-step operation ended.
type Receipt struct {
	Meta
	TransactionID string          `json:"transaction_id"`
	Operation     string          `json:"operation"`
	Outcome       string          `json:"outcome"`
	Target        string          `json:"target"`
	Payload       json.RawMessage `json:"payload"`
	FinishedAt    string          `json:"finished_at"`
}

// Event is one line of events.jsonl.
type Event struct {
	At           string         `json:"at"`
	Event        string         `json:"event"`
	AllocationID *string        `json:"allocation_id"`
	LeaseID      *string        `json:"lease_id"`
	Holder       *proc.Holder   `json:"holder"`
	Actor        proc.Identity  `json:"actor"`
	Detail       map[string]any `json:"detail"`
}

// Expired reports whether the reservation h is past its expires_at at now
// (one that cannot be read counts as past).
func (h Handoff) Expired(now time.Time) bool {
	exp, err := time.Parse(time.RFC3339Nano, h.ExpiresAt)
	return err != nil || !now.Before(exp)
}

// Stamp is how wt writes a time into a record or an event: UTC, RFC 3339
// with nanoseconds.
func Stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Now is the time now, stamped.
func Now() string { return Stamp(time.Now()) }
