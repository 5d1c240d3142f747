package decision

// Refusals and failures (exit 1).
const (
	NotAGitRepository = "NOT_A_GIT_REPOSITORY"
	BareRepository    = "BARE_REPOSITORY"
	NotInitialized    = "NOT_INITIALIZED"
	InvalidMetadata   = "INVALID_METADATA"
	// StoreNotWritable: the store exists but cannot be written (a
	// read-only file system, missing permissions).
	StoreNotWritable = "STORE_NOT_WRITABLE"
	// StoreBusy: the store's lock stayed held past the bound of a wait.
	StoreBusy = "STORE_BUSY"
	// Interrupted: a signal ended the command before it changed anything.
	Interrupted           = "INTERRUPTED"
	RecordVersionConflict = "RECORD_VERSION_CONFLICT"
	InvalidRole           = "INVALID_ROLE"
	InvalidTaskKey        = "INVALID_TASK_KEY"
	InvalidOwner          = "INVALID_OWNER"
	InvalidBranch         = "INVALID_BRANCH"
	InvalidBase           = "INVALID_BASE"
	InvalidPolicy         = "INVALID_POLICY"
	PolicyConflict        = "POLICY_CONFLICT"
	PublicationUnknown    = "PUBLICATION_BRANCH_UNKNOWN"
	PathExists            = "PATH_EXISTS"
	BranchExists          = "BRANCH_EXISTS"
	TaskKeyInUse          = "TASK_KEY_IN_USE"
	TaskKeySimilar        = "TASK_KEY_SIMILAR"
	BudgetExhausted       = "BUDGET_EXHAUSTED"
	OwnerMismatch         = "OWNER_MISMATCH"
	InvalidLifecycle      = "INVALID_LIFECYCLE"
	UnregisteredWorktree  = "UNREGISTERED_WORKTREE"
	// GitMetadataUntrusted: a governed worktree's git files (its .git file,
	// its admin dir's commondir or gitdir, its config.worktree) disagree
	// with wt's records or could make git start a program: wt runs no git
	// on it until they are repaired.
	GitMetadataUntrusted  = "GIT_METADATA_UNTRUSTED"
	InvalidTarget         = "INVALID_TARGET"
	InvalidHolder         = "INVALID_HOLDER"
	InvalidRuntimeBinding = "INVALID_RUNTIME_BINDING"
	ExternalBinding       = "EXTERNAL_BINDING"
	WriterLeaseHeld       = "WRITER_LEASE_HELD"
	InterruptedTx         = "INTERRUPTED_TRANSACTION"
	TransactionInFlight   = "TRANSACTION_IN_FLIGHT"
	GitFailed             = "GIT_FAILED"
	Internal              = "INTERNAL_ERROR"
	Usage                 = "USAGE"
)

// Successes and informational outcomes (exit 0).
const (
	// AdminDirQuarantined: wt-admin quarantine put aside what a
	// worktree's admin dir held (kept under wt's store, each with the
	// command that puts it back); AdminDirClean: it held nothing to.
	AdminDirQuarantined     = "ADMIN_DIR_QUARANTINED"
	AdminDirClean           = "ADMIN_DIR_CLEAN"
	StoreInitialized        = "STORE_INITIALIZED"
	StoreAlreadyInitialized = "STORE_ALREADY_INITIALIZED"
	PolicyShown             = "POLICY_SHOWN"
	PolicyUpdated           = "POLICY_UPDATED"
	PolicyUnchanged         = "POLICY_UNCHANGED"
	Allocated               = "ALLOCATED"
	AllocationRecovered     = "ALLOCATION_RECOVERED"
	AllocationRolledBack    = "ALLOCATION_ROLLED_BACK"
	StatusShown             = "STATUS_SHOWN"
	PsShown                 = "PS_SHOWN"
	LeasesListed            = "LEASES_LISTED"
	Retained                = "RETAINED"
	Resumed                 = "RESUMED"
	VersionShown            = "VERSION_SHOWN"
	NotApplicable           = "NOT_APPLICABLE"
	DedicatedRoleGate       = "DEDICATED_ROLE_GATE"
)

// Writer leases (docs/design.md, "Writer leases").
const (
	AuditReadOnly       = "AUDIT_READ_ONLY"
	WriterLeaseExpired  = "WRITER_LEASE_EXPIRED"
	WriterLeaseMismatch = "WRITER_LEASE_MISMATCH"
	WriterLeaseRequired = "WRITER_LEASE_REQUIRED"
	// StaleHead: --expect-head named another commit than the checkout's
	// HEAD: the caller decided on a state that has moved.
	StaleHead = "STALE_HEAD"
	// WriterLeaseReserved: the worktree's next grant is reserved for
	// another client (wt-admin lease handoff) until its TTL passes.
	WriterLeaseReserved = "WRITER_LEASE_RESERVED"
	// RuntimeOccupied: a process that started during the last run, not
	// of it, still uses the worktree; no writer is let in beside it.
	RuntimeOccupied = "RUNTIME_OCCUPIED"
	// WriterLeaseWaitTimeout: wt-exec --wait --timeout D waited D and the
	// lease was still held (exit 125).
	WriterLeaseWaitTimeout = "WRITER_LEASE_WAIT_TIMEOUT"
	// ConfinementUnavailable: wt-exec was to confine its command
	// (--confine, or the policy's require) and cannot: no Landlock, an
	// ABI too old, or the canonical checkout (exit 125).
	ConfinementUnavailable = "CONFINEMENT_UNAVAILABLE"
	// ConfinementConflict: a directory to be writable to a confined
	// command holds or lies in another worktree or the git dir.
	ConfinementConflict = "CONFINEMENT_CONFLICT"
	// PublishConflict: a confined run's task branch moved outside the run;
	// the run's tip is kept under refs/wt/kept/<task>, not published.
	PublishConflict = "PUBLISH_CONFLICT"
	// PublishFailed: wt-exec could not publish a confined run's task
	// branch from its private view (an object missing or failing git's
	// check, a git that failed); the view is kept.
	PublishFailed = "PUBLISH_FAILED"
	// PushLocalRemoteConfined: a confined command pushed to a remote on a
	// local path, which is outside its confinement.
	PushLocalRemoteConfined = "PUSH_LOCAL_REMOTE_CONFINED"
	// ViewLeft: a finding of doctor: a confined run ended without wt-exec
	// (killed), and its private view holds what it did not publish; the
	// next wt-exec on the worktree recovers it.
	ViewLeft = "VIEW_LEFT"
	// RefsUnpublished: a confined run moved refs other than its task
	// branch in its private view; they are listed and not published.
	RefsUnpublished = "REFS_UNPUBLISHED"
	// AdminDirUnsafe: a governed worktree's admin dir holds what git, or
	// a program after it, would trip on or run (a FIFO or symlink as
	// HEAD, a planted core.hooksPath, an executable): wt-admin quarantine
	// puts it aside.
	AdminDirUnsafe = "ADMIN_DIR_UNSAFE"
	// BrokerPeerRefused: a request to a wt-exec's broker from a process
	// that is not of its run (another run, another user): refused, and
	// recorded (event broker_request_refused).
	BrokerPeerRefused  = "BROKER_PEER_REFUSED"
	CommandNotFound    = "COMMAND_NOT_FOUND"
	CommandNotRunnable = "COMMAND_NOT_EXECUTABLE"

	WriterLeaseAcquired  = "WRITER_LEASE_ACQUIRED"
	WriterLeaseRenewed   = "WRITER_LEASE_RENEWED"
	WriterLeaseTakenOver = "WRITER_LEASE_TAKEN_OVER"
	WriterLeaseReleased  = "WRITER_LEASE_RELEASED"
	// HandoffReserved: wt-admin lease handoff reserved the next grant.
	HandoffReserved = "HANDOFF_RESERVED"
	// WriterLeaseTransferred: wt-admin lease transfer made a descendant
	// of the holder the holder.
	WriterLeaseTransferred = "WRITER_LEASE_TRANSFERRED"
)

// The operator's lease lifecycle (docs/design.md, "Writer leases").
const (
	NoWriterLease            = "NO_WRITER_LEASE"
	AbandonProofInsufficient = "ABANDON_PROOF_INSUFFICIENT"
	OperatorRequired         = "OPERATOR_REQUIRED"

	LeaseInspected       = "LEASE_INSPECTED"
	WriterLeaseAbandoned = "WRITER_LEASE_ABANDONED"
	WriterLeaseAdopted   = "WRITER_LEASE_ADOPTED"
	LeasesExpired        = "LEASES_EXPIRED"
)

// wt-admin doctor (docs/design.md, "Writer leases").
const (
	DoctorFindings = "DOCTOR_FINDINGS"
	DoctorOK       = "DOCTOR_OK"
)

// Hooks (docs/design.md, "The gate (wt-hook)").
const (
	Entitled         = "ENTITLED"
	Unmanaged        = "UNMANAGED_WORKTREE"
	UnmanagedRefused = "UNMANAGED_REFUSED"
)

// Hook refusals (docs/design.md, "The gate (wt-hook)").
const (
	PushRefNotOwned  = "PUSH_REF_NOT_OWNED"
	InvalidHookInput = "INVALID_HOOK_INPUT"
	// HeadOffTaskBranch: a governed feature worktree's HEAD is not on its
	// allocation's branch (another branch, or detached outside a rebase of
	// it): it takes no writer and its commits are refused.
	HeadOffTaskBranch = "HEAD_OFF_TASK_BRANCH"
)

// Gate coverage, reported by status and doctor.
const (
	// UngatedRole: a worktree whose role (integration, canonical,
	// recovery) expects a gate of its own, which wt does not provide.
	UngatedRole = "UNGATED_ROLE"
	// HooksMissing: a governed worktree whose hooks dir lacks wt's shims.
	HooksMissing = "HOOKS_MISSING"
)

// Hook installation (docs/design.md, "The gate (wt-hook)").
const (
	HookConflict       = "HOOK_CONFLICT"
	HookBinaryMissing  = "HOOK_BINARY_MISSING" // written by the shims themselves
	HooksDirInWorktree = "HOOKS_DIR_IN_WORKTREE"
	HooksInstalled     = "HOOKS_INSTALLED"
	HooksUninstalled   = "HOOKS_UNINSTALLED"
	HooksShown         = "HOOKS_SHOWN"
)

// Registration maintenance: backfill and prune (docs/decisions.md, "Registration maintenance").
const (
	BackfillReady        = "BINDING_REGISTRATION_BACKFILL_READY"
	BackfillNothing      = "BINDING_REGISTRATION_BACKFILL_NOTHING_TO_DO"
	Backfilled           = "BINDING_REGISTRATIONS_BACKFILLED"
	ResourcePlanMismatch = "RESOURCE_PLAN_MISMATCH"

	// Backfill blockers: each refused binding lists every one that applies.
	RecordMissing       = "RECORD_MISSING"
	AdminDirUnavailable = "ADMIN_DIR_UNAVAILABLE"
	CheckoutMissing     = "CHECKOUT_MISSING"
	// AuditShown and UngatedRefMove: wt-admin audit; a move of a task
	// branch that no gate approval covers.
	AuditShown     = "AUDIT_SHOWN"
	UngatedRefMove = "UNGATED_REF_MOVE"
	// AdoptReady and Adopted: wt-admin adopt's dry run and its apply; a
	// lock another tool left that wt cannot prove dead is ForeignLock.
	AdoptReady  = "ADOPT_READY"
	Adopted     = "ADOPTED"
	ForeignLock = "FOREIGN_LOCK"
	// TaskBranchMissing: a live task's branch is gone from git while wt's
	// ledger records its tip (an alarm of status, doctor and audit, with
	// the restore); the gate refuses to create it anew anywhere else.
	TaskBranchMissing = "TASK_BRANCH_MISSING"
	// LeasedCheckoutMissing: an alarm of status and doctor: a worktree's
	// checkout is gone while its lease holder still runs (git worktree
	// remove -f -f, rm -rf): the writer's uncommitted work is lost.
	LeasedCheckoutMissing = "LEASED_CHECKOUT_MISSING"
	// RefLockStale: a finding of doctor: git's lock of a repository's refs
	// (a reftable stack's tables.list.lock, packed-refs.lock) or config
	// (config.lock) that no process holds open, left by a git that died
	// holding it: every update it guards fails until it is gone.
	RefLockStale            = "REF_LOCK_STALE"
	StaleRegistrationMarker = "STALE_REGISTRATION_MARKER"
	GitPointerMismatch      = "GIT_POINTER_MISMATCH"
	RegistrationTimeUnknown = "REGISTRATION_TIME_UNKNOWN"
	RegistrationNewer       = "REGISTRATION_NEWER_THAN_ALLOCATION"
	HeadUnresolved          = "HEAD_UNRESOLVED"
	BaseNotInHistory        = "BASE_NOT_IN_HISTORY"

	PruneReady             = "REGISTRATION_PRUNE_READY"
	RegistrationPruned     = "REGISTRATION_PRUNED"
	PrunableStateInvalid   = "PRUNABLE_STATE_INVALID"
	PathReappeared         = "PATH_REAPPEARED"
	LifecycleNotReleasable = "LIFECYCLE_NOT_RELEASABLE"
	ActiveOwner            = "ACTIVE_OWNER"
	TaskEvidencePresent    = "TASK_EVIDENCE_PRESENT"
	BindingDrift           = "BINDING_DRIFT"
	LeasePresent           = "LEASE_PRESENT"
	MissingRetainedRef     = "MISSING_RETAINED_REF"
	GCPlanDrift            = "GC_PLAN_DRIFT"
	GCAlreadyApplied       = "GC_ALREADY_APPLIED"
	PathStateUnknown       = "PATH_STATE_UNKNOWN"
	BlockDrift             = "BLOCK_DRIFT"
)

// Finishing a task (wt-admin finish): plan, apply, and what refuses it.
const (
	FinishReady  = "TASK_FINISH_READY"
	TaskFinished = "TASK_FINISHED"
	// WorktreeDirty: the worktree has uncommitted or untracked changes.
	WorktreeDirty = "WORKTREE_DIRTY"
	// UnmergedCommits: the task holds commits the publication branch does
	// not contain, and --archive was not given.
	UnmergedCommits = "UNMERGED_COMMITS"
	// WorktreeInUse: processes other than the caller have their cwd, open
	// files or mappings inside the worktree.
	WorktreeInUse = "WORKTREE_IN_USE"
)

// Fleet mode (docs/design.md, "Fleet mode").
const (
	FleetLeaseHeld     = "FLEET_LEASE_HELD"
	FleetUnreachable   = "FLEET_UNREACHABLE"
	FleetFenced        = "FLEET_FENCED"
	FleetNoLease       = "FLEET_NO_LEASE"
	FleetLeaseLost     = "FLEET_LEASE_LOST"
	FleetHelperMissing = "FLEET_HELPER_MISSING"
	// FleetKeySpaceMismatch: a fenced remote on this machine records
	// another key space than the client computes from its URL.
	FleetKeySpaceMismatch = "FLEET_KEY_SPACE_MISMATCH"

	FleetLeaseAcquired  = "FLEET_LEASE_ACQUIRED"
	FleetStatusShown    = "FLEET_STATUS_SHOWN"
	FleetLeaseAbandoned = "FLEET_LEASE_ABANDONED"
)

// The publication lease and landing (docs/design.md, "The publication
// lease").
const (
	// PublicationLeaseRequired: with policy publication-lease on, a move of
	// the publication branch by a process that does not descend from the
	// live lander.
	PublicationLeaseRequired = "PUBLICATION_LEASE_REQUIRED"
	// PublicationLeaseHeld: another live lander holds the publication
	// lease.
	PublicationLeaseHeld = "PUBLICATION_LEASE_HELD"
	// PublicationSymref: with policy publication-lease on, a transaction
	// that makes the publication branch a symbolic ref, or another ref a
	// symbolic ref to it (refused where git shows it to a hook; doctor
	// and audit report one made where it does not).
	PublicationSymref = "PUBLICATION_BRANCH_SYMREF"
	// LandConflict: the task's branch does not integrate onto the
	// publication tip; nothing moved, the task is handed back.
	LandConflict = "LAND_CONFLICT"
	// LandTestFailed: the integrated result failed land's --test; nothing
	// moved, the task is handed back.
	LandTestFailed = "LAND_TEST_FAILED"
	// LandPushRejected: the remote's publication branch was not where the
	// landing integrated onto (or the remote refused): nothing moved.
	LandPushRejected = "LAND_PUSH_REJECTED"
	// LandTipMoved: the task's branch is not at the commit that was let
	// go (its ready mark's, or the one the landing began with): nothing
	// moved; ready again renews it.
	LandTipMoved = "LAND_TIP_MOVED"
	// LandUngated: the task's tip is not one wt's ledger approved (moved
	// with hooks off, rewritten): nothing moved (--accept-ungated lands it).
	LandUngated = "LAND_UNGATED"
	// LandTestUnconfined: the kernel cannot give land's test its sandbox
	// (a private view, no authority): nothing was tested or moved
	// (--test-unconfined runs it without).
	LandTestUnconfined = "LAND_TEST_UNCONFINED"
	// OpenPullRequest: the task's branch has an open pull request on the
	// forge (policy --forge): its work is not archived, pruned or taken
	// over while someone may be reviewing it.
	OpenPullRequest = "OPEN_PULL_REQUEST"
	// ForgeUnreachable: the forge cannot be asked whether the task's
	// branch has an open pull request: not taken for none.
	ForgeUnreachable = "FORGE_UNREACHABLE"
	// LandWaitTimeout: land --wait --timeout D waited D for the
	// publication lease or a task's writer.
	LandWaitTimeout = "LAND_WAIT_TIMEOUT"
	// NotReady: a task land --ready would take is not ready, or a ready
	// mark cannot be made (the task has no ACTIVE feature allocation).
	NotReady = "TASK_NOT_READY"

	// NotOnPublication: why on a commit the publication branch does not
	// hold.
	NotOnPublication = "NOT_ON_PUBLICATION_BRANCH"
	// WhyUnknown: why in a repository with neither wt's store nor the
	// notes land --push publishes.
	WhyUnknown = "WHY_UNKNOWN"

	Landed        = "LANDED"
	AlreadyLanded = "ALREADY_LANDED"
	NothingToLand = "NOTHING_TO_LAND"
	TaskReady     = "TASK_READY"
	LandRecovered = "LAND_RECOVERED"
	WhyShown      = "WHY_SHOWN"
)

// codes is every code above, in their order: Codes's list, laid out by the
// linker rather than built at every start (TestCodesListed keeps it whole).
var codes = [...]string{
	NotAGitRepository,
	BareRepository,
	NotInitialized,
	InvalidMetadata,
	StoreNotWritable,
	StoreBusy,
	Interrupted,
	RecordVersionConflict,
	InvalidRole,
	InvalidTaskKey,
	InvalidOwner,
	InvalidBranch,
	InvalidBase,
	InvalidPolicy,
	PolicyConflict,
	PublicationUnknown,
	PathExists,
	BranchExists,
	TaskKeyInUse,
	TaskKeySimilar,
	BudgetExhausted,
	OwnerMismatch,
	InvalidLifecycle,
	UnregisteredWorktree,
	GitMetadataUntrusted,
	InvalidTarget,
	InvalidHolder,
	InvalidRuntimeBinding,
	ExternalBinding,
	WriterLeaseHeld,
	InterruptedTx,
	TransactionInFlight,
	GitFailed,
	Internal,
	Usage,
	AdminDirQuarantined,
	AdminDirClean,
	StoreInitialized,
	StoreAlreadyInitialized,
	PolicyShown,
	PolicyUpdated,
	PolicyUnchanged,
	Allocated,
	AllocationRecovered,
	AllocationRolledBack,
	StatusShown,
	PsShown,
	LeasesListed,
	Retained,
	Resumed,
	VersionShown,
	NotApplicable,
	DedicatedRoleGate,
	AuditReadOnly,
	WriterLeaseExpired,
	WriterLeaseMismatch,
	WriterLeaseRequired,
	StaleHead,
	WriterLeaseReserved,
	RuntimeOccupied,
	WriterLeaseWaitTimeout,
	ConfinementUnavailable,
	ConfinementConflict,
	PublishConflict,
	PublishFailed,
	RefsUnpublished,
	AdminDirUnsafe,
	BrokerPeerRefused,
	ViewLeft,
	PushLocalRemoteConfined,
	CommandNotFound,
	CommandNotRunnable,
	WriterLeaseAcquired,
	WriterLeaseRenewed,
	WriterLeaseTakenOver,
	WriterLeaseReleased,
	HandoffReserved,
	WriterLeaseTransferred,
	NoWriterLease,
	AbandonProofInsufficient,
	OperatorRequired,
	LeaseInspected,
	WriterLeaseAbandoned,
	WriterLeaseAdopted,
	LeasesExpired,
	DoctorFindings,
	DoctorOK,
	Entitled,
	Unmanaged,
	UnmanagedRefused,
	PushRefNotOwned,
	InvalidHookInput,
	HeadOffTaskBranch,
	UngatedRole,
	HooksMissing,
	HookConflict,
	HookBinaryMissing,
	HooksDirInWorktree,
	HooksInstalled,
	HooksUninstalled,
	HooksShown,
	BackfillReady,
	BackfillNothing,
	Backfilled,
	ResourcePlanMismatch,
	RecordMissing,
	LeasedCheckoutMissing,
	RefLockStale,
	AuditShown,
	UngatedRefMove,
	AdoptReady,
	Adopted,
	ForeignLock,
	TaskBranchMissing,
	AdminDirUnavailable,
	CheckoutMissing,
	StaleRegistrationMarker,
	GitPointerMismatch,
	RegistrationTimeUnknown,
	RegistrationNewer,
	HeadUnresolved,
	BaseNotInHistory,
	PruneReady,
	RegistrationPruned,
	PrunableStateInvalid,
	PathReappeared,
	LifecycleNotReleasable,
	ActiveOwner,
	TaskEvidencePresent,
	BindingDrift,
	LeasePresent,
	MissingRetainedRef,
	GCPlanDrift,
	GCAlreadyApplied,
	PathStateUnknown,
	BlockDrift,
	FinishReady,
	TaskFinished,
	WorktreeDirty,
	UnmergedCommits,
	WorktreeInUse,
	FleetLeaseHeld,
	FleetUnreachable,
	FleetFenced,
	FleetNoLease,
	FleetLeaseLost,
	FleetHelperMissing,
	FleetKeySpaceMismatch,
	FleetLeaseAcquired,
	FleetStatusShown,
	FleetLeaseAbandoned,
	PublicationLeaseRequired,
	PublicationLeaseHeld,
	PublicationSymref,
	LandConflict,
	LandTestFailed,
	LandPushRejected,
	LandTipMoved,
	LandUngated,
	LandTestUnconfined,
	OpenPullRequest,
	ForgeUnreachable,
	LandWaitTimeout,
	NotReady,
	NotOnPublication,
	WhyUnknown,
	Landed,
	AlreadyLanded,
	NothingToLand,
	TaskReady,
	LandRecovered,
	WhyShown,
}
