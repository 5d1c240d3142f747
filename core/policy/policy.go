// Package policy sets a repository up for wt (Init) and reads and changes
// its policy (Read, Set): policy.json, validated field by field, one
// policy_changed event per changed field, and the publication branch's
// ledger baseline when wt begins to watch a branch. The command-line names
// of the fields (the flags of wt-admin init and policy) are the fields'
// JSON names with dashes, which refusals and hints use.
package policy

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/ids"
	"github.com/wt-tool/wt/core/ledger"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// Change names the policy fields a command sets; nil leaves a field.
type Change struct {
	PublicationBranch *string
	Enforcement       *string
	Unmanaged         *string
	// MaxActive is "unlimited" or a positive integer.
	MaxActive *string
	// Fleet mode: Coordinator none or etcd; EtcdEndpoints comma-separated
	// URLs; FleetTTL a duration; FleetRemote a git remote name.
	Coordinator, EtcdEndpoints, FleetTTL, FleetRemote *string
	// etcd's credentials: absolute paths of files on this machine (the
	// TLS client certificate and key, the CA), the etcd user and the
	// file of its password; "" clears one.
	EtcdCert, EtcdKey, EtcdCACert, EtcdUser, EtcdPasswordFile *string
	// FleetServerFence and FleetCaseSensitive are on or off.
	FleetServerFence, FleetCaseSensitive *string
	// Confine is off, auto or require; ConfineAllow comma-separated
	// absolute directories ("" clears the list).
	Confine, ConfineAllow *string
	// BranchLayout is flat or task-dir.
	BranchLayout *string
	// RequireOwner is on or off.
	RequireOwner *string
	// PublicationLease is on or off.
	PublicationLease *string
	// Forge is none, gitea or github; ForgeURL the forge's base URL ("":
	// the remote's scheme and host); ForgeTokenFile an absolute path;
	// ForgeRemote a git remote name.
	Forge, ForgeURL, ForgeTokenFile, ForgeRemote *string
}

func (c Change) empty() bool {
	return c.PublicationBranch == nil && c.Enforcement == nil && c.Unmanaged == nil && c.MaxActive == nil &&
		c.Coordinator == nil && c.EtcdEndpoints == nil && c.FleetTTL == nil && c.FleetRemote == nil &&
		c.EtcdCert == nil && c.EtcdKey == nil && c.EtcdCACert == nil && c.EtcdUser == nil && c.EtcdPasswordFile == nil &&
		c.Confine == nil && c.ConfineAllow == nil && c.FleetServerFence == nil && c.FleetCaseSensitive == nil && c.BranchLayout == nil && c.RequireOwner == nil && c.PublicationLease == nil &&
		c.Forge == nil && c.ForgeURL == nil && c.ForgeTokenFile == nil && c.ForgeRemote == nil
}

// InitResult is what init did.
type InitResult struct {
	Code         string       `json:"code"`
	StoreDir     string       `json:"store_dir"`
	RepositoryID string       `json:"repository_id"`
	Policy       store.Policy `json:"policy"`
}

// Init sets wt up in the repository containing dir. Run again on a set-up
// repository it changes nothing and answers STORE_ALREADY_INITIALIZED; if it
// was given policy values that differ from the stored ones it refuses with
// POLICY_CONFLICT (policy changes go through the policy command). An init that
// was interrupted (no repository.json yet) is finished.
func Init(ctx context.Context, dir string, change Change) (InitResult, error) {
	g, err := gitrepo.Discover(ctx, dir)
	if err != nil {
		return InitResult{}, err
	}
	var s *store.Store
	_, statErr := os.Lstat(store.Root(g.CommonDir) + "/repository.json")
	if errors.Is(statErr, fs.ErrNotExist) {
		if _, err := os.Lstat(store.Root(g.CommonDir)); errors.Is(err, fs.ErrNotExist) {
			// No store yet: what init would refuse is refused before the
			// store is made, so a refused first init leaves nothing
			// behind. (An interrupted init's store is finished below,
			// its policy judged as stored.)
			if err := checkFirst(ctx, g, change); err != nil {
				return InitResult{}, err
			}
		}
		s, err = store.Create(g.CommonDir)
	} else {
		s, err = store.Open(g.CommonDir)
	}
	if err != nil {
		return InitResult{}, err
	}
	var res InitResult
	res.StoreDir = s.Root()
	err = s.Write(func(tx *store.Tx) error {
		if err := tx.EnsureBranchIndex(); err != nil {
			return err
		}
		if tx.HasRepository() {
			repo, err := tx.Repository()
			if err != nil {
				return err
			}
			pol, ok, err := tx.Policy()
			if err != nil {
				return err
			}
			if !ok {
				return decision.Say(decision.InvalidMetadata, "policy-json").
					WithHint("restore it, or remove %s and run wt-admin init again", shell.Word(filepath.Join(s.Root(), "repository.json")))
			}
			_, diffs, err := apply(ctx, g, pol, change)
			if err != nil {
				return err
			}
			if len(diffs) > 0 {
				return decision.Say(decision.PolicyConflict, "wt-already", diffs[0].Field).
					WithHint("change the policy with wt-admin policy --%s %s", flagName(diffs[0].Field), shell.Word(diffs[0].To))
			}
			res = InitResult{Code: decision.StoreAlreadyInitialized, StoreDir: s.Root(), RepositoryID: repo.RepositoryID, Policy: pol}
			return nil
		}
		pol, ok, err := tx.Policy()
		if err != nil {
			return err
		}
		if !ok {
			pol = firstPolicy
			if change.PublicationBranch == nil {
				b, err := canonicalBranch(ctx, g)
				if err != nil {
					return err
				}
				change.PublicationBranch = &b
			}
		}
		next, _, err := apply(ctx, g, pol, change)
		if err != nil {
			return err
		}
		next.UpdatedAt = store.Now()
		if err := tx.PutPolicy(&next); err != nil {
			return err
		}
		if err := PublicationBaseline(g, s, next.PublicationBranch); err != nil {
			return err
		}
		now := store.Now()
		repo := store.Repository{RepositoryID: ids.New(), CreatedAt: now, UpdatedAt: now}
		if err := tx.PutRepository(&repo); err != nil {
			return err
		}
		res = InitResult{Code: decision.StoreInitialized, StoreDir: s.Root(), RepositoryID: repo.RepositoryID, Policy: next}
		return tx.LogEvent("store_initialized", "", map[string]any{"repository_id": repo.RepositoryID, "policy": next})
	})
	return res, err
}

// firstPolicy is the policy a first init starts from.
var firstPolicy = store.Policy{Enforcement: store.EnforcementEnforce, Unmanaged: store.UnmanagedAllow}

// checkFirst refuses, before anything is written, what a first init of g
// with change would refuse: a policy value, or no publication branch to be
// found.
func checkFirst(ctx context.Context, g *gitrepo.Repo, change Change) error {
	if change.PublicationBranch == nil {
		b, err := canonicalBranch(ctx, g)
		if err != nil {
			return err
		}
		change.PublicationBranch = &b
	}
	_, _, err := apply(ctx, g, firstPolicy, change)
	return err
}

// canonicalBranch is the branch the canonical checkout is on: the
// publication branch when init is not told one.
func canonicalBranch(ctx context.Context, g *gitrepo.Repo) (string, error) {
	inv, err := g.Inventory(ctx)
	if err != nil {
		return "", gitrepo.ListFailed(err)
	}
	if len(inv) == 0 || inv[0].Branch == "" {
		return "", decision.Say(decision.PublicationUnknown, "canonical-checkout").
			WithHint("pass --publication-branch BRANCH (e.g. main)")
	}
	return inv[0].Branch, nil
}

// Diff is one changed policy field.
type Diff struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// flagName is the command-line flag of a policy field: its name with
// dashes (etcd_cacert is --etcd-cacert).
func flagName(field string) string { return strings.ReplaceAll(field, "_", "-") }

func maxActiveText(p *int) string {
	if p == nil {
		return "unlimited"
	}
	return strconv.Itoa(*p)
}

// apply validates change and returns pol with it applied, and the fields
// that differ.
func apply(ctx context.Context, g *gitrepo.Repo, pol store.Policy, c Change) (store.Policy, []Diff, error) {
	next := pol
	for _, apply := range []func(*store.Policy) error{
		func(next *store.Policy) error { return applyBasics(ctx, g, next, c) },
		func(next *store.Policy) error { return applyFleet(next, c) },
		func(next *store.Policy) error { return applyConfinement(next, c) },
	} {
		if err := apply(&next); err != nil {
			return pol, nil, err
		}
	}
	return next, policyDiffs(pol, next), nil
}

// applyBasics applies the publication branch, enforcement, the unmanaged
// rule, the ACTIVE budget and --require-owner.
func applyBasics(ctx context.Context, g *gitrepo.Repo, next *store.Policy, c Change) error {
	if v := c.PublicationBranch; v != nil {
		if !g.ValidBranchName(ctx, *v) {
			return decision.Say(decision.InvalidPolicy, "publication-branch", *v).
				WithHint("pass --publication-branch with a branch name such as main")
		}
		next.PublicationBranch = *v
	}
	if v := c.Enforcement; v != nil {
		if *v != store.EnforcementEnforce && *v != store.EnforcementWarn {
			return decision.Say(decision.InvalidPolicy, "enforcement-not", *v).
				WithHint("pass --enforcement enforce or --enforcement warn")
		}
		next.Enforcement = *v
	}
	if v := c.Unmanaged; v != nil {
		if *v != store.UnmanagedAllow && *v != store.UnmanagedRefuse {
			return decision.Say(decision.InvalidPolicy, "unmanaged-not", *v).
				WithHint("pass --unmanaged allow or --unmanaged refuse")
		}
		next.Unmanaged = *v
	}
	if v := c.MaxActive; v != nil {
		if *v == "unlimited" {
			next.MaxActive = nil
		} else {
			n, err := strconv.Atoi(*v)
			if err != nil || n < 1 {
				return decision.Say(decision.InvalidPolicy, "max-active", *v).
					WithHint("pass --max-active N (N >= 1) or --max-active unlimited")
			}
			next.MaxActive = &n
		}
	}
	if v := c.RequireOwner; v != nil {
		switch *v {
		case "on", "off":
			next.RequireOwner = *v == "on"
		default:
			return decision.Say(decision.InvalidPolicy, "require-owner", *v).
				WithHint("pass --require-owner on (wt-exec must name the task's owner) or --require-owner off")
		}
	}
	if v := c.PublicationLease; v != nil {
		switch *v {
		case "on", "off":
			next.PublicationLease = *v == "on"
		default:
			return decision.Say(decision.InvalidPolicy, "publication-lease", *v).
				WithHint("pass --publication-lease on (only wt-admin land moves the publication branch) or --publication-lease off")
		}
	}
	return applyForge(next, c)
}

// applyForge applies the forge's settings and checks them together.
func applyForge(next *store.Policy, c Change) error {
	if v := c.Forge; v != nil {
		switch *v {
		case "none", "":
			next.Forge = ""
		case store.ForgeGitea, store.ForgeGitHub:
			next.Forge = *v
		default:
			return decision.Say(decision.InvalidPolicy, "forge-not-none", *v).
				WithHint("pass --forge gitea --forge-token-file /ABS/FILE (Gitea or Forgejo), --forge github (through gh), or --forge none")
		}
	}
	if v := c.ForgeURL; v != nil {
		u := strings.TrimRight(strings.TrimSpace(*v), "/")
		if u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return decision.Say(decision.InvalidPolicy, "forge-url", *v).
				WithHint("pass --forge-url https://HOST[:PORT] (the forge's base URL), or \"\" to take the remote's")
		}
		next.ForgeURL = u
	}
	if v := c.ForgeTokenFile; v != nil {
		p := strings.TrimSpace(*v)
		if p != "" && !filepath.IsAbs(p) {
			return decision.Say(decision.InvalidPolicy, "forge-token", p).
				WithHint("pass --forge-token-file /ABS/FILE (a file that holds the forge's API token)")
		}
		next.ForgeTokenFile = p
	}
	if v := c.ForgeRemote; v != nil {
		next.ForgeRemote = strings.TrimSpace(*v)
	}
	if next.Forge == store.ForgeGitea && next.ForgeTokenFile == "" {
		return decision.Say(decision.InvalidPolicy, "forge-gitea").
			WithHint("pass --forge gitea --forge-token-file /ABS/FILE")
	}
	if next.Forge == "" {
		next.ForgeURL, next.ForgeTokenFile, next.ForgeRemote = "", "", ""
	}
	return nil
}

// applyFleet applies fleet mode's settings and checks them together.
func applyFleet(next *store.Policy, c Change) error {
	if v := c.Coordinator; v != nil {
		next.Coordinator = *v
	}
	if v := c.EtcdEndpoints; v != nil {
		next.EtcdEndpoints = nil
		for _, e := range strings.Split(*v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				next.EtcdEndpoints = append(next.EtcdEndpoints, e)
			}
		}
	}
	if v := c.FleetTTL; v != nil {
		next.FleetTTL = *v
	}
	if v := c.FleetRemote; v != nil {
		next.FleetRemote = *v
	}
	for _, f := range []struct {
		v  *string
		to *string
	}{{c.EtcdCert, &next.EtcdCert}, {c.EtcdKey, &next.EtcdKey}, {c.EtcdCACert, &next.EtcdCACert}, {c.EtcdUser, &next.EtcdUser}, {c.EtcdPasswordFile, &next.EtcdPasswordFile}} {
		if f.v != nil {
			*f.to = strings.TrimSpace(*f.v)
		}
	}
	if v := c.FleetServerFence; v != nil {
		switch *v {
		case "on":
			next.FleetServerFence = true
		case "off":
			next.FleetServerFence = false
		default:
			return decision.Say(decision.InvalidPolicy, "fleet-server", *v).
				WithHint("pass --fleet-server-fence on (the remote runs wt-hook install --server) or off")
		}
	}
	if v := c.FleetCaseSensitive; v != nil {
		switch *v {
		case "on":
			next.FleetCaseSensitive = true
		case "off":
			next.FleetCaseSensitive = false
		default:
			return decision.Say(decision.InvalidPolicy, "fleet-case", *v).
				WithHint("pass --fleet-case-sensitive on (the server's paths differ by case) or off (the default: a forge's)")
		}
	}
	if err := next.ValidateFleet(); err != nil {
		return decision.Say(decision.InvalidPolicy, "as-given", err).
			WithHint("fleet mode: wt-admin policy --coordinator etcd --etcd-endpoints http://HOST:2379[,...] [--fleet-ttl 10s] [--fleet-remote origin] [--etcd-cert /ABS/CERT --etcd-key /ABS/KEY] [--etcd-cacert /ABS/CA] [--etcd-user NAME --etcd-password-file /ABS/FILE]; --coordinator none turns it off")
	}
	if next.Coordinator == store.CoordinatorNone {
		// Off: nothing of the fleet configuration is kept.
		// The remote's fence stays: in local mode it orders the grants
		// itself (hooks.LocalChecker).
		next.EtcdEndpoints, next.FleetTTL, next.FleetRemote = nil, "", ""
		next.EtcdCert, next.EtcdKey, next.EtcdCACert, next.EtcdUser, next.EtcdPasswordFile = "", "", "", "", ""
		next.FleetCaseSensitive = false
	}
	return nil
}

// applyConfinement applies confinement and the branch layout.
func applyConfinement(next *store.Policy, c Change) error {
	if v := c.Confine; v != nil {
		switch *v {
		case store.ConfineOff, store.ConfineAuto, store.ConfineRequire:
			next.Confine = *v
		default:
			return decision.Say(decision.InvalidPolicy, "confine-not", *v).
				WithHint("pass --confine off, --confine auto or --confine require")
		}
	}
	if v := c.ConfineAllow; v != nil {
		next.ConfineAllow = nil
		for _, p := range strings.Split(*v, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			if !filepath.IsAbs(p) || store.ValidText("path", p) != nil {
				return decision.Say(decision.InvalidPolicy, "confine-allow", p).
					WithHint("pass --confine-allow /ABS/DIR[,/ABS/DIR]")
			}
			next.ConfineAllow = append(next.ConfineAllow, filepath.Clean(p))
		}
	}
	if v := c.BranchLayout; v != nil {
		switch *v {
		case store.LayoutFlat, store.LayoutTaskDir:
			next.BranchLayout = *v
		default:
			return decision.Say(decision.InvalidPolicy, "branch-layout", *v).
				WithHint("pass --branch-layout task-dir (wt/<task>/work) or --branch-layout flat (wt/<task>)")
		}
	}
	return nil
}

// policyDiffs are the fields that differ between pol and next, in words.
func policyDiffs(pol, next store.Policy) []Diff {
	var diffs []Diff
	add := func(field, from, to string) {
		if from != to {
			diffs = append(diffs, Diff{field, from, to})
		}
	}
	coordinator := func(p store.Policy) string {
		if p.Coordinator == "" {
			return store.CoordinatorNone
		}
		return p.Coordinator
	}
	add("coordinator", coordinator(pol), coordinator(next))
	add("etcd_endpoints", strings.Join(pol.EtcdEndpoints, ","), strings.Join(next.EtcdEndpoints, ","))
	add("fleet_ttl", pol.FleetTTL, next.FleetTTL)
	add("fleet_remote", pol.FleetRemote, next.FleetRemote)
	add("fleet_server_fence", OnOff(pol.FleetServerFence), OnOff(next.FleetServerFence))
	add("fleet_case_sensitive", OnOff(pol.FleetCaseSensitive), OnOff(next.FleetCaseSensitive))
	add("etcd_cert", pol.EtcdCert, next.EtcdCert)
	add("etcd_key", pol.EtcdKey, next.EtcdKey)
	add("etcd_cacert", pol.EtcdCACert, next.EtcdCACert)
	add("etcd_user", pol.EtcdUser, next.EtcdUser)
	add("etcd_password_file", pol.EtcdPasswordFile, next.EtcdPasswordFile)
	add("publication_branch", pol.PublicationBranch, next.PublicationBranch)
	add("enforcement", pol.Enforcement, next.Enforcement)
	add("unmanaged", pol.Unmanaged, next.Unmanaged)
	add("max_active", maxActiveText(pol.MaxActive), maxActiveText(next.MaxActive))
	add("confine", pol.ConfineMode(), next.ConfineMode())
	add("confine_allow", strings.Join(pol.ConfineAllow, ","), strings.Join(next.ConfineAllow, ","))
	add("branch_layout", pol.Layout(), next.Layout())
	add("require_owner", OnOff(pol.RequireOwner), OnOff(next.RequireOwner))
	add("publication_lease", OnOff(pol.PublicationLease), OnOff(next.PublicationLease))
	add("forge", forgeText(pol.Forge), forgeText(next.Forge))
	add("forge_url", pol.ForgeURL, next.ForgeURL)
	add("forge_token_file", pol.ForgeTokenFile, next.ForgeTokenFile)
	add("forge_remote", pol.ForgeRemote, next.ForgeRemote)
	return diffs
}

// Result is the policy after a policy command.
type Result struct {
	Code    string       `json:"code"`
	Policy  store.Policy `json:"policy"`
	Changes []Diff       `json:"changes"`
}

// Read reads the repository's policy (a missing policy.json reads as the
// zero policy, which wt treats as every default).
func Read(s *store.Store) (store.Policy, error) {
	var pol store.Policy
	err := s.Read(func(tx *store.Tx) error {
		var err error
		pol, _, err = tx.Policy()
		return err
	})
	return pol, err
}

// Set shows the policy (no change given) or changes the given fields, one
// event per changed field.
func Set(ctx context.Context, g *gitrepo.Repo, s *store.Store, change Change) (Result, error) {
	var res Result
	fn := func(tx *store.Tx) error {
		pol, ok, err := tx.Policy()
		if err != nil {
			return err
		}
		if !ok {
			return decision.Say(decision.InvalidMetadata, "policy-json").WithHint("run wt-admin init")
		}
		if change.empty() {
			res = Result{Code: decision.PolicyShown, Policy: pol, Changes: []Diff{}}
			return nil
		}
		next, diffs, err := apply(ctx, g, pol, change)
		if err != nil {
			return err
		}
		if len(diffs) == 0 {
			res = Result{Code: decision.PolicyUnchanged, Policy: pol, Changes: []Diff{}}
			return nil
		}
		next.UpdatedAt = store.Now()
		if next.PublicationBranch != pol.PublicationBranch {
			if err := PublicationBaseline(g, s, next.PublicationBranch); err != nil {
				return err
			}
		}
		if err := tx.PutPolicy(&next); err != nil {
			return err
		}
		for _, d := range diffs {
			if err := tx.LogEvent("policy_changed", "", map[string]any{"field": d.Field, "from": d.From, "to": d.To}); err != nil {
				return err
			}
		}
		res = Result{Code: decision.PolicyUpdated, Policy: next, Changes: diffs}
		return nil
	}
	var err error
	if change.empty() {
		err = s.Read(fn)
	} else {
		err = s.Write(fn)
	}
	return res, err
}

// PublicationBaseline records where publication branch b stands as wt
// begins to watch it (init, or a policy naming another branch, again when
// it names one it watched before: its moves meanwhile went unrecorded):
// its tip and how many reflog entries it has. Its history before is the
// baseline, not a finding of audit or doctor.
func PublicationBaseline(g *gitrepo.Repo, s *store.Store, b string) error {
	if b == "" {
		return nil
	}
	return ledger.Baseline(g.CommonDir, s.Root(), store.PublicationLedger, "refs/heads/"+b)
}

func forgeText(f string) string {
	if f == "" {
		return "none"
	}
	return f
}

// OnOff is a policy switch in words.
func OnOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
