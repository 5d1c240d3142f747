package alloc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// Repo is a governed repository: git plus the store.
type Repo struct {
	Git   *gitrepo.Repo
	Store *store.Store
}

// Open finds the repository containing dir and opens its store.
func Open(ctx context.Context, dir string) (*Repo, error) {
	g, err := gitrepo.Discover(ctx, dir)
	if err != nil {
		return nil, err
	}
	s, err := store.Open(g.CommonDir)
	if err != nil {
		return nil, err
	}
	return &Repo{Git: g, Store: s}, nil
}

// OpenCheckout opens the store of the repository that a checkout found by
// gitrepo.Locate belongs to, without running git: the hot path of wt-exec.
// Only Store and the paths of Git are usable; methods of Git that run git
// work too, from the checkout's top level.
func OpenCheckout(c gitrepo.Checkout) (*Repo, error) {
	s, err := store.Open(c.CommonDir)
	if err != nil {
		return nil, err
	}
	return &Repo{Git: &gitrepo.Repo{CommonDir: c.CommonDir, GitDir: c.GitDir, TopLevel: c.TopLevel}, Store: s}, nil
}

// LogEvent appends event name about allocation id (none when "") to
// events.jsonl, with this process as the actor.
func LogEvent(tx *store.Tx, name, id string, detail map[string]any) error {
	var a *store.Allocation
	if id != "" {
		a = &store.Allocation{AllocationID: id}
	}
	return event(tx, name, a, detail)
}

func event(tx *store.Tx, name string, a *store.Allocation, detail map[string]any) error {
	e := store.Event{At: store.Now(), Event: name, Actor: proc.Actor(), Detail: detail}
	if a != nil {
		id := a.AllocationID
		e.AllocationID = &id
	}
	return tx.AppendEvent(e)
}

// ValidRole refuses a role that is not in store.Roles.
func ValidRole(role string) error {
	for _, r := range store.Roles {
		if r == role {
			return nil
		}
	}
	return decision.New(decision.InvalidRole, "role %q is not one of %s", role, strings.Join(store.Roles, ", ")).
		WithHint("pass --role feature (the default) or one of %s", strings.Join(store.Roles, ", "))
}

// Task keys and owners have a character set (docs/decisions.md,
// "Allocation"): a letter or digit, then letters, digits and . _ - (task
// keys also /, owners also @ +), 128 bytes at most. Nothing in them can
// break a command line, a table or a terminal.
//
// They are checked by hand, not with a regexp: compiling `{0,127}` at
// package init cost every wt binary 0.6 ms at every start (a commit's gate
// included).
func inSet(s, extra string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || strings.IndexByte(extra, c) < 0) {
			return false
		}
	}
	return true
}

// ValidTaskKey refuses a task key outside its character set. The default
// branch wt/<KEY> must also be a valid ref name; Allocate checks that with
// git.
func ValidTaskKey(key string) error {
	if !inSet(key, "._/-") {
		return decision.New(decision.InvalidTaskKey, "task key %s is not a letter or digit followed by up to 127 letters, digits and . _ / -", strconv.QuoteToASCII(key)).
			WithHint("pass --task KEY, e.g. --task T-12")
	}
	return nil
}

// ValidOwner refuses an owner outside its character set.
func ValidOwner(owner string) error {
	if !inSet(owner, "._@+-") {
		return decision.New(decision.InvalidOwner, "owner %s is not a letter or digit followed by up to 127 letters, digits and . _ @ + -", strconv.QuoteToASCII(owner)).
			WithHint("pass --owner NAME, e.g. --owner alice")
	}
	return nil
}

// ValidText refuses free text wt stores (a path, a reason) that holds a
// control character: a newline would forge lines in wt's output and an
// escape sequence would reach the terminal.
func ValidText(what, s string) error {
	for _, r := range s {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return decision.New(decision.Usage, "%s %s holds a control character", what, strconv.QuoteToASCII(s)).
				WithHint("give a %s of printable characters", what)
		}
	}
	return nil
}

// Target is one governed worktree resolved from a path.
type Target struct {
	Path         string
	Key          string
	Allocation   store.Allocation
	Registration store.Registration
}

// Resolve finds the allocation governing the worktree at path, reading a
// constant number of files: <path>/.git, the binding, the registration and
// its marker, and the allocation. A path whose checkout is gone is looked up
// among git's admin dirs instead. Must run inside a store transaction.
func (r *Repo) Resolve(tx *store.Tx, path string) (Target, error) {
	abs, err := proc.Canonical(path)
	if err != nil {
		return Target{}, decision.Wrap(decision.UnregisteredWorktree, err, "path %s", path)
	}
	key, ok := gitrepo.KeyOfCheckout(r.Git.CommonDir, abs)
	if !ok {
		if _, err := os.Lstat(filepath.Join(abs, ".git")); err == nil {
			return Target{}, decision.New(decision.UnregisteredWorktree, "%s is not a worktree of this repository", abs).
				WithHint("pass --repo naming a checkout of the repository that owns it")
		}
		keys, err := gitrepo.AdminKeys(r.Git.CommonDir)
		if err != nil {
			return Target{}, err
		}
		if key, ok = keys[abs]; !ok {
			return Target{}, decision.New(decision.UnregisteredWorktree, "%s is not a worktree of this repository", abs).
				WithHint("list the governed worktrees with wt-admin status")
		}
	}
	if key == gitrepo.MainKey {
		return Target{}, decision.New(decision.UnregisteredWorktree, "%s is the canonical checkout, which has no allocation", abs).
			WithHint("allocate a worktree with wt-admin allocate --task KEY --owner NAME PATH")
	}
	return r.resolveKey(tx, key, abs)
}

// ResolveCheckout is Resolve for a checkout gitrepo.Locate found: it reads
// the binding, the registration and its marker, and the allocation. The main
// checkout resolves to a canonical pseudo-allocation (role canonical), which
// takes no writer lease.
func (r *Repo) ResolveCheckout(tx *store.Tx, c gitrepo.Checkout) (Target, error) {
	if c.Key == gitrepo.MainKey {
		return Target{Path: c.TopLevel, Key: c.Key, Allocation: store.Allocation{Role: store.RoleCanonical,
			WorktreePath: c.TopLevel, WorktreeKey: c.Key, Lifecycle: store.Active}}, nil
	}
	return r.resolveKey(tx, c.Key, c.TopLevel)
}

func (r *Repo) resolveKey(tx *store.Tx, key, abs string) (Target, error) {
	b, ok, err := tx.Binding(key)
	if err != nil {
		return Target{}, err
	}
	if !ok {
		return Target{}, decision.New(decision.UnregisteredWorktree, "worktree %s (key %s) has no allocation: wt does not govern it", abs, key).
			WithHint("bring it under wt as a task's worktree, its branch kept: wt-admin --repo %s adopt %s --task KEY --owner NAME (a dry run; then --apply PLAN_ID)", shell.Word(abs), shell.Word(abs))
	}
	reg, registered, err := tx.Registered(key)
	if err != nil {
		return Target{}, err
	}
	if !registered || reg.AllocationID != b.AllocationID {
		return Target{}, decision.New(decision.UnregisteredWorktree, "worktree %s (key %s) is bound but its registration marker does not match: git may have re-created the admin dir", abs, key).
			WithHint("run wt-admin status to see it; a re-created worktree does not inherit the old allocation")
	}
	a, err := tx.Allocation(b.AllocationID)
	if errors.Is(err, store.ErrNotFound) {
		return Target{}, decision.New(decision.InvalidMetadata, "binding %s names allocation %s, which has no record", key, b.AllocationID).
			WithHint("inspect %s by hand", shell.Word(filepath.Join(r.Store.Root(), "bindings", key+".json")))
	}
	if err != nil {
		return Target{}, err
	}
	return Target{Path: abs, Key: key, Allocation: a, Registration: reg}, nil
}

// RegisteredAllocation returns the allocation the linked worktree key is
// registered to, or nil when it has no binding, its registration does not
// count (no document, or no matching marker), or the record is gone.
func (r *Repo) RegisteredAllocation(tx *store.Tx, key string) (*store.Allocation, error) {
	b, ok, err := tx.Binding(key)
	if err != nil || !ok {
		return nil, err
	}
	reg, registered, err := tx.Registered(key)
	if err != nil || !registered || reg.AllocationID != b.AllocationID {
		return nil, err
	}
	a, err := tx.Allocation(b.AllocationID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// AwaitingBackfill returns the allocation id that the linked worktree key
// is bound to when the binding has no registration document: a binding
// written before registrations existed, or one whose registration a crash
// cut short (PutRegistration writes the document last). Backfill registers
// it; it is not a task whose worktree is gone, which finish would end.
func AwaitingBackfill(tx *store.Tx, key string) (string, bool, error) {
	b, ok, err := tx.Binding(key)
	if err != nil || !ok {
		return "", false, err
	}
	_, _, hasDoc, err := tx.Registration(key)
	if err != nil || hasDoc {
		return "", false, err
	}
	return b.AllocationID, true, nil
}

func requireOwner(a store.Allocation, owner string) error {
	if a.Owner != owner {
		return decision.New(decision.OwnerMismatch, "allocation of task %s is owned by %q, not %q", a.TaskKey, a.Owner, owner).
			WithHint("pass --owner %s", shell.Word(a.Owner))
	}
	return nil
}

// Plural is n with the noun for it: "1 change", "3 changes".
func Plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
