package decision

// Refusals and failures (exit 1).
var (
	NotAGitRepository = code("NOT_A_GIT_REPOSITORY")
	BareRepository    = code("BARE_REPOSITORY")
	NotInitialized    = code("NOT_INITIALIZED")
	InvalidMetadata   = code("INVALID_METADATA")
	// StoreNotWritable: the store exists but cannot be written (a
	// read-only file system, missing permissions).
	StoreNotWritable = code("STORE_NOT_WRITABLE")
	// StoreBusy: the store's lock stayed held past the bound of a wait.
	StoreBusy = code("STORE_BUSY")
	// Interrupted: a signal ended the command before it changed anything.
	Interrupted           = code("INTERRUPTED")
	RecordVersionConflict = code("RECORD_VERSION_CONFLICT")
	InvalidRole           = code("INVALID_ROLE")
	InvalidTaskKey        = code("INVALID_TASK_KEY")
	InvalidOwner          = code("INVALID_OWNER")
	InvalidBranch         = code("INVALID_BRANCH")
	InvalidBase           = code("INVALID_BASE")
	InvalidPolicy         = code("INVALID_POLICY")
	PolicyConflict        = code("POLICY_CONFLICT")
	PublicationUnknown    = code("PUBLICATION_BRANCH_UNKNOWN")
	PathExists            = code("PATH_EXISTS")
	BranchExists          = code("BRANCH_EXISTS")
	TaskKeyInUse          = code("TASK_KEY_IN_USE")
	BudgetExhausted       = code("BUDGET_EXHAUSTED")
	OwnerMismatch         = code("OWNER_MISMATCH")
	InvalidLifecycle      = code("INVALID_LIFECYCLE")
	UnregisteredWorktree  = code("UNREGISTERED_WORKTREE")
	InvalidTarget         = code("INVALID_TARGET")
	InvalidHolder         = code("INVALID_HOLDER")
	InvalidRuntimeBinding = code("INVALID_RUNTIME_BINDING")
	ExternalBinding       = code("EXTERNAL_BINDING")
	WriterLeaseHeld       = code("WRITER_LEASE_HELD")
	InterruptedTx         = code("INTERRUPTED_TRANSACTION")
	TransactionInFlight   = code("TRANSACTION_IN_FLIGHT")
	GitFailed             = code("GIT_FAILED")
	Internal              = code("INTERNAL_ERROR")
	Usage                 = code("USAGE")
)

// Successes and informational outcomes (exit 0).
var (
	StoreInitialized        = code("STORE_INITIALIZED")
	StoreAlreadyInitialized = code("STORE_ALREADY_INITIALIZED")
	PolicyShown             = code("POLICY_SHOWN")
	PolicyUpdated           = code("POLICY_UPDATED")
	PolicyUnchanged         = code("POLICY_UNCHANGED")
	Allocated               = code("ALLOCATED")
	AllocationRecovered     = code("ALLOCATION_RECOVERED")
	AllocationRolledBack    = code("ALLOCATION_ROLLED_BACK")
	StatusShown             = code("STATUS_SHOWN")
	PsShown                 = code("PS_SHOWN")
	LeasesListed            = code("LEASES_LISTED")
	Retained                = code("RETAINED")
	Resumed                 = code("RESUMED")
	VersionShown            = code("VERSION_SHOWN")
	NotApplicable           = code("NOT_APPLICABLE")
	DedicatedRoleGate       = code("DEDICATED_ROLE_GATE")
)

// Writer leases (docs/design.md, "Writer leases").
var (
	AuditReadOnly       = code("AUDIT_READ_ONLY")
	WriterLeaseExpired  = code("WRITER_LEASE_EXPIRED")
	WriterLeaseMismatch = code("WRITER_LEASE_MISMATCH")
	WriterLeaseRequired = code("WRITER_LEASE_REQUIRED")
	// WriterLeaseWaitTimeout: wt-exec --wait --timeout D waited D and the
	// lease was still held (exit 125).
	WriterLeaseWaitTimeout = code("WRITER_LEASE_WAIT_TIMEOUT")
	// ConfinementUnavailable: wt-exec was to confine its command
	// (--confine, or the policy's require) and cannot: no Landlock, an
	// ABI too old, or the canonical checkout (exit 125).
	ConfinementUnavailable = code("CONFINEMENT_UNAVAILABLE")
	// ConfinementConflict: a directory to be writable to a confined
	// command holds or lies in another worktree or the git dir.
	ConfinementConflict = code("CONFINEMENT_CONFLICT")
	CommandNotFound     = code("COMMAND_NOT_FOUND")
	CommandNotRunnable  = code("COMMAND_NOT_EXECUTABLE")

	WriterLeaseAcquired  = code("WRITER_LEASE_ACQUIRED")
	WriterLeaseRenewed   = code("WRITER_LEASE_RENEWED")
	WriterLeaseTakenOver = code("WRITER_LEASE_TAKEN_OVER")
	WriterLeaseReleased  = code("WRITER_LEASE_RELEASED")
)

// The operator's lease lifecycle (docs/design.md, "Writer leases").
var (
	NoWriterLease            = code("NO_WRITER_LEASE")
	AbandonProofInsufficient = code("ABANDON_PROOF_INSUFFICIENT")
	OperatorRequired         = code("OPERATOR_REQUIRED")

	LeaseInspected       = code("LEASE_INSPECTED")
	WriterLeaseAbandoned = code("WRITER_LEASE_ABANDONED")
	WriterLeaseAdopted   = code("WRITER_LEASE_ADOPTED")
	LeasesExpired        = code("LEASES_EXPIRED")
)

// wt-admin doctor (docs/design.md, "Writer leases").
var (
	DoctorFindings = code("DOCTOR_FINDINGS")
	DoctorOK       = code("DOCTOR_OK")
)

// Hooks (docs/design.md, "The gate (wt-hook)").
var (
	Entitled         = code("ENTITLED")
	Unmanaged        = code("UNMANAGED_WORKTREE")
	UnmanagedRefused = code("UNMANAGED_REFUSED")
)

// Hook refusals (docs/design.md, "The gate (wt-hook)").
var (
	PushRefNotOwned  = code("PUSH_REF_NOT_OWNED")
	InvalidHookInput = code("INVALID_HOOK_INPUT")
	// HeadOffTaskBranch: a governed feature worktree's HEAD is not on its
	// allocation's branch (another branch, or detached outside a rebase of
	// it): it takes no writer and its commits are refused.
	HeadOffTaskBranch = code("HEAD_OFF_TASK_BRANCH")
)

// Gate coverage, reported by status and doctor.
var (
	// UngatedRole: a worktree whose role (integration, canonical,
	// recovery) expects a gate of its own, which wt does not provide.
	UngatedRole = code("UNGATED_ROLE")
	// HooksMissing: a governed worktree whose hooks dir lacks wt's shims.
	HooksMissing = code("HOOKS_MISSING")
)

// Hook installation (docs/design.md, "The gate (wt-hook)").
var (
	HookConflict       = code("HOOK_CONFLICT")
	HookBinaryMissing  = code("HOOK_BINARY_MISSING") // written by the shims themselves
	HooksDirInWorktree = code("HOOKS_DIR_IN_WORKTREE")
	HooksInstalled     = code("HOOKS_INSTALLED")
	HooksUninstalled   = code("HOOKS_UNINSTALLED")
	HooksShown         = code("HOOKS_SHOWN")
)

// Registration maintenance: backfill and prune (docs/decisions.md, "Registration maintenance").
var (
	BackfillReady        = code("BINDING_REGISTRATION_BACKFILL_READY")
	BackfillNothing      = code("BINDING_REGISTRATION_BACKFILL_NOTHING_TO_DO")
	Backfilled           = code("BINDING_REGISTRATIONS_BACKFILLED")
	ResourcePlanMismatch = code("RESOURCE_PLAN_MISMATCH")

	// Backfill blockers: each refused binding lists every one that applies.
	RecordMissing           = code("RECORD_MISSING")
	AdminDirUnavailable     = code("ADMIN_DIR_UNAVAILABLE")
	CheckoutMissing         = code("CHECKOUT_MISSING")
	StaleRegistrationMarker = code("STALE_REGISTRATION_MARKER")
	GitPointerMismatch      = code("GIT_POINTER_MISMATCH")
	RegistrationTimeUnknown = code("REGISTRATION_TIME_UNKNOWN")
	RegistrationNewer       = code("REGISTRATION_NEWER_THAN_ALLOCATION")
	HeadUnresolved          = code("HEAD_UNRESOLVED")
	BaseNotInHistory        = code("BASE_NOT_IN_HISTORY")

	PruneReady             = code("REGISTRATION_PRUNE_READY")
	RegistrationPruned     = code("REGISTRATION_PRUNED")
	PrunableStateInvalid   = code("PRUNABLE_STATE_INVALID")
	PathReappeared         = code("PATH_REAPPEARED")
	LifecycleNotReleasable = code("LIFECYCLE_NOT_RELEASABLE")
	ActiveOwner            = code("ACTIVE_OWNER")
	TaskEvidencePresent    = code("TASK_EVIDENCE_PRESENT")
	BindingDrift           = code("BINDING_DRIFT")
	LeasePresent           = code("LEASE_PRESENT")
	MissingRetainedRef     = code("MISSING_RETAINED_REF")
	GCPlanDrift            = code("GC_PLAN_DRIFT")
	GCAlreadyApplied       = code("GC_ALREADY_APPLIED")
	PathStateUnknown       = code("PATH_STATE_UNKNOWN")
	BlockDrift             = code("BLOCK_DRIFT")
)

// Finishing a task (wt-admin finish): plan, apply, and what refuses it.
var (
	FinishReady  = code("TASK_FINISH_READY")
	TaskFinished = code("TASK_FINISHED")
	// WorktreeDirty: the worktree has uncommitted or untracked changes.
	WorktreeDirty = code("WORKTREE_DIRTY")
	// UnmergedCommits: the task holds commits the publication branch does
	// not contain, and --archive was not given.
	UnmergedCommits = code("UNMERGED_COMMITS")
	// WorktreeInUse: processes other than the caller have their cwd, open
	// files or mappings inside the worktree.
	WorktreeInUse = code("WORKTREE_IN_USE")
)

// Fleet mode (docs/design.md, "Fleet mode").
var (
	FleetLeaseHeld     = code("FLEET_LEASE_HELD")
	FleetUnreachable   = code("FLEET_UNREACHABLE")
	FleetFenced        = code("FLEET_FENCED")
	FleetNoLease       = code("FLEET_NO_LEASE")
	FleetLeaseLost     = code("FLEET_LEASE_LOST")
	FleetHelperMissing = code("FLEET_HELPER_MISSING")

	FleetLeaseAcquired  = code("FLEET_LEASE_ACQUIRED")
	FleetStatusShown    = code("FLEET_STATUS_SHOWN")
	FleetLeaseAbandoned = code("FLEET_LEASE_ABANDONED")
)
