package policy

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
	"github.com/wt-tool/wt/internal/wttest"
)

// TestInit: a first init writes the default policy (the canonical
// checkout's branch as the publication branch), the repository record, the
// publication ledger's baseline and its event; run again it changes
// nothing (STORE_ALREADY_INITIALIZED), even when given the stored values,
// and refuses other values (POLICY_CONFLICT) with the policy command that
// changes them.
func TestInit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Change{})
	pol, err := Read(f.s)
	if err != nil {
		t.Fatal(err)
	}
	if pol.PublicationBranch != "main" || pol.Enforcement != store.EnforcementEnforce || pol.Unmanaged != store.UnmanagedAllow ||
		pol.MaxActive != nil || pol.UpdatedAt == "" {
		t.Errorf("default policy: %+v", pol)
	}
	led, err := store.ReadLedger(f.s.Root(), store.PublicationLedger, "refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	if len(led.Lines) != 1 || led.Lines[0].Via != store.ViaInit || led.Lines[0].New != f.base || led.Lines[0].Entries != 1 {
		t.Errorf("publication ledger: %+v", led.Lines)
	}
	if got := f.eventNames(); !reflect.DeepEqual(got, []string{"store_initialized"}) {
		t.Errorf("events: %v", got)
	}

	again, err := Init(f.ctx, f.dir, Change{})
	if err != nil || again.Code != decision.StoreAlreadyInitialized || again.Policy.PublicationBranch != "main" ||
		again.StoreDir != f.s.Root() || again.RepositoryID == "" {
		t.Fatalf("init again: %+v %v", again, err)
	}
	same, err := Init(f.ctx, f.dir, Change{PublicationBranch: ptr("main"), Enforcement: ptr(store.EnforcementEnforce)})
	if err != nil || same.Code != decision.StoreAlreadyInitialized || same.RepositoryID != again.RepositoryID {
		t.Fatalf("init again with the stored values: %+v %v", same, err)
	}
	_, err = Init(f.ctx, f.dir, Change{MaxActive: ptr("2")})
	wttest.WantCode(t, err, decision.PolicyConflict)
	if d, _ := decision.As(err); d.Hint != "change the policy with wt-admin policy --max-active 2" {
		t.Errorf("hint: %q", d.Hint)
	}
	_, err = Init(f.ctx, f.dir, Change{Enforcement: ptr("loud")})
	wttest.WantCode(t, err, decision.InvalidPolicy)
	if got := f.eventNames(); len(got) != 1 {
		t.Errorf("an init that changed nothing logged %v", got)
	}

	// A store whose policy.json is gone is not taken for a new one.
	if err := os.Remove(filepath.Join(f.s.Root(), "policy.json")); err != nil {
		t.Fatal(err)
	}
	_, err = Init(f.ctx, f.dir, Change{})
	wttest.WantCode(t, err, decision.InvalidMetadata)
	_, err = Set(f.ctx, f.g, f.s, Change{})
	wttest.WantCode(t, err, decision.InvalidMetadata)
	pol, err = Read(f.s)
	if err != nil || !reflect.DeepEqual(pol, store.Policy{}) {
		t.Errorf("a missing policy reads as the zero policy: %+v %v", pol, err)
	}
}

// TestInitChoices: init takes the policy it is given; with no branch
// checked out it needs the publication branch named; outside a repository
// it is NOT_A_GIT_REPOSITORY.
func TestInitChoices(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	top, _ := filepath.EvalSymlinks(t.TempDir())

	detached := filepath.Join(top, "detached")
	gittest.Git(t, top, "init", "-q", "-b", "main", detached)
	gittest.Git(t, detached, "commit", "-q", "--allow-empty", "-m", "one")
	gittest.Git(t, detached, "checkout", "-q", "--detach")
	_, err := Init(ctx, detached, Change{})
	wttest.WantCode(t, err, decision.PublicationUnknown)
	_, err = Init(ctx, detached, Change{PublicationBranch: ptr("not..valid")})
	wttest.WantCode(t, err, decision.InvalidPolicy)
	// A refused first init leaves nothing behind.
	if _, err := os.Stat(filepath.Join(detached, ".git", store.DirName)); !os.IsNotExist(err) {
		t.Errorf("a refused init made the store: %v", err)
	}
	res, err := Init(ctx, detached, Change{PublicationBranch: ptr("trunk"), Enforcement: ptr(store.EnforcementWarn),
		Unmanaged: ptr(store.UnmanagedRefuse), MaxActive: ptr("3"), BranchLayout: ptr(store.LayoutTaskDir),
		RequireOwner: ptr("on"), PublicationLease: ptr("on")})
	if err != nil || res.Code != decision.StoreInitialized {
		t.Fatalf("init with a policy: %+v %v", res, err)
	}
	want := store.Policy{PublicationBranch: "trunk", Enforcement: store.EnforcementWarn, Unmanaged: store.UnmanagedRefuse,
		MaxActive: ptr(3), BranchLayout: store.LayoutTaskDir, RequireOwner: true, PublicationLease: true, UpdatedAt: res.Policy.UpdatedAt,
		Meta: store.Meta{SchemaVersion: 1, RecordVersion: 1}}
	if !sameJSON(res.Policy, want) {
		t.Errorf("policy:\n got %+v\nwant %+v", res.Policy, want)
	}
	// trunk does not exist yet: its ledger's baseline records no tip.
	led, err := store.ReadLedger(res.StoreDir, store.PublicationLedger, "refs/heads/trunk")
	if err != nil || len(led.Lines) != 1 || led.Lines[0].New != "" {
		t.Errorf("ledger of a branch not made yet: %+v %v", led, err)
	}

	_, err = Init(ctx, gittest.Outside(t), Change{})
	wttest.WantCode(t, err, decision.NotAGitRepository)
}

// TestSetPolicy: no change shows the policy; the stored values change
// nothing; each changed field is one diff (in the order status prints
// them) and one event; a new publication branch gets its baseline.
func TestSetPolicy(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Change{})
	before, _ := Read(f.s)

	shown, err := Set(f.ctx, f.g, f.s, Change{})
	if err != nil || shown.Code != decision.PolicyShown || len(shown.Changes) != 0 || shown.Changes == nil ||
		!reflect.DeepEqual(shown.Policy, before) {
		t.Fatalf("shown: %+v %v", shown, err)
	}
	unchanged, err := Set(f.ctx, f.g, f.s, Change{Enforcement: ptr(store.EnforcementEnforce), MaxActive: ptr("unlimited")})
	if err != nil || unchanged.Code != decision.PolicyUnchanged || len(unchanged.Changes) != 0 || unchanged.Changes == nil {
		t.Fatalf("unchanged: %+v %v", unchanged, err)
	}

	f.git("branch", "release")
	res, err := Set(f.ctx, f.g, f.s, Change{Enforcement: ptr(store.EnforcementWarn), MaxActive: ptr("2"),
		PublicationBranch: ptr("release"), Confine: ptr(store.ConfineAuto)})
	if err != nil || res.Code != decision.PolicyUpdated {
		t.Fatalf("update: %+v %v", res, err)
	}
	want := []Diff{
		{"publication_branch", "main", "release"},
		{"enforcement", store.EnforcementEnforce, store.EnforcementWarn},
		{"max_active", "unlimited", "2"},
		{"confine", store.ConfineOff, store.ConfineAuto},
	}
	if !reflect.DeepEqual(res.Changes, want) {
		t.Errorf("changes:\n got %+v\nwant %+v", res.Changes, want)
	}
	after, _ := Read(f.s)
	if after.PublicationBranch != "release" || after.Enforcement != store.EnforcementWarn || *after.MaxActive != 2 ||
		after.Confine != store.ConfineAuto {
		t.Errorf("stored: %+v", after)
	}
	var changed []any
	for _, e := range f.events() {
		if e.Event == "policy_changed" {
			changed = append(changed, e.Detail["field"])
		}
	}
	if !reflect.DeepEqual(changed, []any{"publication_branch", "enforcement", "max_active", "confine"}) {
		t.Errorf("policy_changed events: %v", changed)
	}
	if !store.HasLedger(f.s.Root(), store.PublicationLedger) {
		t.Fatal("no publication ledger")
	}
	led, err := store.ReadLedger(f.s.Root(), store.PublicationLedger, "refs/heads/release")
	if err != nil || len(led.Lines) != 1 || led.Lines[0].Via != store.ViaInit || led.Lines[0].New != f.base {
		t.Errorf("release's baseline: %+v %v", led, err)
	}

	// A refused change writes nothing.
	_, err = Set(f.ctx, f.g, f.s, Change{Enforcement: ptr(store.EnforcementEnforce), MaxActive: ptr("0")})
	wttest.WantCode(t, err, decision.InvalidPolicy)
	if now, _ := Read(f.s); !reflect.DeepEqual(now, after) {
		t.Errorf("a refused change wrote %+v", now)
	}
}

// TestApplyPolicyRefusals: every field refuses a value outside its set
// (INVALID_POLICY) and leaves the policy as it was.
func TestApplyPolicyRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Change{})
	pol, _ := Read(f.s)
	for name, c := range map[string]Change{
		"publication branch":   {PublicationBranch: ptr("a..b")},
		"enforcement":          {Enforcement: ptr("strict")},
		"unmanaged":            {Unmanaged: ptr("maybe")},
		"max active zero":      {MaxActive: ptr("0")},
		"max active a word":    {MaxActive: ptr("many")},
		"require owner":        {RequireOwner: ptr("yes")},
		"publication lease":    {PublicationLease: ptr("1")},
		"fleet server fence":   {FleetServerFence: ptr("true")},
		"fleet case sensitive": {FleetCaseSensitive: ptr("no")},
		"coordinator unknown":  {Coordinator: ptr("zookeeper")},
		"etcd without ends":    {Coordinator: ptr(store.CoordinatorEtcd)},
		"confine":              {Confine: ptr("always")},
		"confine-allow":        {ConfineAllow: ptr("/ok,relative/dir")},
		"confine-allow escape": {ConfineAllow: ptr("/a\x1bb")},
		"branch layout":        {BranchLayout: ptr("nested")},
	} {
		next, diffs, err := apply(f.ctx, f.g, pol, c)
		if decision.CodeOf(err) != decision.InvalidPolicy || diffs != nil || !reflect.DeepEqual(next, pol) {
			t.Errorf("%s: %+v %v %v", name, next, diffs, err)
		}
	}
}

// TestApplyFleetAndConfinement: fleet settings are trimmed and checked
// together, and all but the remote's fence go when the coordinator is
// none; confine-allow keeps clean absolute paths.
func TestApplyFleetAndConfinement(t *testing.T) {
	t.Parallel()
	var p store.Policy
	err := applyFleet(&p, Change{Coordinator: ptr(store.CoordinatorEtcd), EtcdEndpoints: ptr(" http://a:2379, ,http://b:2379 "),
		FleetTTL: ptr("5s"), FleetRemote: ptr("up"), EtcdCert: ptr(" /c/cert "), EtcdKey: ptr("/c/key"),
		EtcdCACert: ptr("/c/ca"), FleetServerFence: ptr("on"), FleetCaseSensitive: ptr("on")})
	if err != nil {
		t.Fatal(err)
	}
	want := store.Policy{Coordinator: store.CoordinatorEtcd, EtcdEndpoints: []string{"http://a:2379", "http://b:2379"},
		FleetTTL: "5s", FleetRemote: "up", EtcdCert: "/c/cert", EtcdKey: "/c/key", EtcdCACert: "/c/ca",
		FleetServerFence: true, FleetCaseSensitive: true}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("fleet on:\n got %+v\nwant %+v", p, want)
	}
	diffs := policyDiffs(store.Policy{}, p)
	var fields []string
	for _, d := range diffs {
		fields = append(fields, d.Field)
	}
	if !reflect.DeepEqual(fields, []string{"coordinator", "etcd_endpoints", "fleet_ttl", "fleet_remote", "fleet_server_fence",
		"fleet_case_sensitive", "etcd_cert", "etcd_key", "etcd_cacert"}) || diffs[0] != (Diff{"coordinator", "none", "etcd"}) {
		t.Errorf("diffs: %+v", diffs)
	}
	if err := applyFleet(&p, Change{Coordinator: ptr(store.CoordinatorNone)}); err != nil {
		t.Fatal(err)
	}
	want = store.Policy{Coordinator: store.CoordinatorNone, FleetServerFence: true}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("fleet off:\n got %+v\nwant %+v", p, want)
	}
	if err := applyFleet(&p, Change{FleetServerFence: ptr("off")}); err != nil || p.FleetServerFence {
		t.Errorf("fence off: %+v %v", p, err)
	}

	var c store.Policy
	if err := applyConfinement(&c, Change{Confine: ptr(store.ConfineRequire), ConfineAllow: ptr(" /a/ , /b/../c,,"),
		BranchLayout: ptr(store.LayoutTaskDir)}); err != nil {
		t.Fatal(err)
	}
	want = store.Policy{Confine: store.ConfineRequire, ConfineAllow: []string{"/a", "/c"}, BranchLayout: store.LayoutTaskDir}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("confinement:\n got %+v\nwant %+v", c, want)
	}
	if err := applyConfinement(&c, Change{ConfineAllow: ptr("")}); err != nil || c.ConfineAllow != nil {
		t.Errorf("confine-allow cleared: %+v %v", c, err)
	}
	if got := policyDiffs(c, c); got != nil {
		t.Errorf("a policy differs from itself: %+v", got)
	}
}
