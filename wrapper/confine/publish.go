package confine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/store"
)

// A confined run's task branch moves in its private view; wt-exec, outside
// it, publishes each move to the real branch (docs/design.md,
// "Confinement: a private view"):
//
//  1. the objects the new tip needs that the repository lacks are copied
//     in (gitrepo.ImportObjects: git pack-objects reading the view's upper
//     layer as an alternate, git index-pack or unpack-objects writing them,
//     each object checked against its name), never replacing one;
//  2. git checks that everything the tip reaches is there (rev-list);
//  3. the branch is moved by compare-and-swap from the last tip published
//     (at the start, where the branch stood), with a reflog message that
//     says it was published, and whether it was a rewrite.
//
// A ref is never published ahead of its objects. If the real branch moved
// meanwhile (someone else wrote it), nothing is overwritten: the run's tip
// is kept under KeptRef and the run is told (PUBLISH_CONFLICT); later
// moves of the run go on being kept there.

// KeptPrefix is where wt keeps a run's tips that could not be published.
const KeptPrefix = store.KeptPrefix

// KeptRef is the ref a task's unpublishable tip is kept under.
func KeptRef(task string) string { return KeptPrefix + task }

// Publisher publishes one run's task branch from its view.
type Publisher struct {
	view *View
	// ref is the task branch (refs/heads/...), task the task key.
	ref, task string
	// not are tips whose objects the repository has: the publication
	// branch's, read at each publication.
	publication string
	// Notify says what happened, a line at a time.
	Notify func(string)
	// Exclusive runs each publication: the caller's way to keep its
	// git processes from being reaped or killed by others.
	Exclusive func(func())
	// Published is called after each move of the real branch (or of the
	// kept ref), with the old and new tips.
	Published func(Move)
	// Ledger is called before each move of the real branch, with the old
	// and new tips: wt's record of the tip it publishes (the branch
	// ledger) is written before git makes the move, as the gate writes it
	// in a transaction's "prepared" state.
	Ledger func(old, new string)

	mu sync.Mutex
	// published is the tip the real branch was last seen at or moved to
	// by this run: the compare-and-swap's expected value.
	published string
	// kept is set once the run's tip could not be published: its moves
	// go to KeptRef from then on.
	kept     bool
	keptTip  string
	lastSeen string
	// tip reads the branch's tip in the view (nil: through the mounted
	// view; Recover reads the upper layer).
	tip func() (string, error)
}

// Move is one publication.
type Move struct {
	Ref, Old, New string
	// Rewrite is set when Old is not an ancestor of New (amend, rebase).
	Rewrite bool
	// Kept is set when the move went to the kept ref, not the branch.
	Kept bool
}

// NewPublisher makes the publisher of branch (short name) for task, whose
// real branch stands at base now, in the run whose view is v; publication
// names the publication branch (its objects need no copying).
func NewPublisher(v *View, task, branch, base, publication string) *Publisher {
	return &Publisher{view: v, ref: "refs/heads/" + branch, task: task, published: base, lastSeen: base,
		publication: publication, Notify: func(string) {}, Published: func(Move) {}, Ledger: func(string, string) {}, Exclusive: func(f func()) { f() }}
}

// Tip is the task branch as the run's view shows it ("" when the view has
// no such ref).
func (p *Publisher) Tip() (string, error) {
	if p.tip != nil {
		return p.tip()
	}
	root := p.view.Root()
	if root == "" {
		return "", errNoView
	}
	return gitrepo.ReadRef(root, p.ref)
}

// Publish publishes the view's tip of the task branch if it moved since
// the last publication. It is safe to call from several goroutines.
func (p *Publisher) Publish(ctx context.Context) (err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Exclusive(func() { boosted(func() { err = p.publish(ctx) }) })
	return err
}

// publishBoost is how much nicer than wt-exec's own the priority is of the
// gits a publication runs: under 60 launchers on two cores, what a
// publication took at p99 went from 130-160 ms to 30-40 ms with it
// (BenchmarkPublication). Only root may raise a priority; for others the
// gits run at wt-exec's.
const publishBoost = 10

// boosted runs f on an OS thread of its own whose priority is raised by
// publishBoost (the processes f starts fork from it and inherit it), and
// gives the thread its priority back before it serves anything else.
func boosted(f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	raw, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	if err != nil {
		f()
		return
	}
	nice := 20 - raw // the system call's value is 20 - nice
	if unix.Setpriority(unix.PRIO_PROCESS, tid, nice-publishBoost) != nil {
		f()
		return
	}
	defer func() {
		if unix.Setpriority(unix.PRIO_PROCESS, tid, nice) != nil {
			// Best effort failed: keep the thread from serving others.
			runtime.LockOSThread()
		}
	}()
	f()
}

func (p *Publisher) publish(ctx context.Context) error {
	tip, err := p.Tip()
	if err != nil {
		return decision.SayWrap(decision.PublishFailed, err, "read-run", p.ref)
	}
	if tip == "" || tip == p.lastSeen || strings.HasPrefix(tip, "ref:") {
		return nil // unborn, deleted or symbolic in the view: nothing to publish (listed at the end)
	}
	common := p.view.Common
	var not []string
	if p.publication != "" {
		if pub, err := gitrepo.ReadRef(common, "refs/heads/"+p.publication); err == nil && pub != "" && !strings.HasPrefix(pub, "ref:") {
			not = append(not, pub)
		}
	}
	base := p.published
	if p.kept {
		base = p.keptTip
	}
	if _, err := gitrepo.ImportObjects(ctx, common, filepath.Join(p.view.Upper(), "objects"), []string{tip}, append(not, base)); err != nil {
		return decision.SayWrap(decision.PublishFailed, err, "copy-objects", p.ref, gitrepo.Short(tip))
	}
	// Whether it is a rewrite is asked beside the connectivity check: two
	// gits at once, not one after the other, on the way to the move.
	type ancestry struct {
		anc bool
		err error
	}
	asked := make(chan ancestry, 1)
	go boosted(func() {
		if base == "" {
			asked <- ancestry{anc: true}
			return
		}
		anc, err := gitrepo.IsAncestorIn(ctx, common, base, tip)
		asked <- ancestry{anc, err}
	})
	connErr := gitrepo.Connected(ctx, common, tip, append(not, base))
	a := <-asked
	if connErr != nil {
		return decision.SayWrap(decision.PublishFailed, connErr, "check-that", p.ref, gitrepo.Short(tip))
	}
	if a.err != nil {
		return decision.SayWrap(decision.PublishFailed, a.err, "compare", gitrepo.Short(tip), gitrepo.Short(base))
	}
	rewrite := !a.anc
	how := "commit"
	if rewrite {
		how = "rewrite"
	}
	if !p.kept {
		msg := fmt.Sprintf("wt-exec: publish %s from task %s's confined run (%s)", gitrepo.Short(tip), p.task, how)
		p.Ledger(p.published, tip)
		err := gitrepo.MoveRef(ctx, common, p.ref, tip, p.published, msg)
		if err == nil {
			p.Published(Move{Ref: p.ref, Old: p.published, New: tip, Rewrite: rewrite})
			p.published, p.lastSeen = tip, tip
			if p.view.record != nil {
				if err := p.view.record(tip); err != nil {
					p.Notify("the view's record in wt's store could not be updated (a recovery would keep the run's tip instead of publishing it): " + err.Error())
				}
			}
			return nil
		}
		now, rerr := gitrepo.ReadRef(common, p.ref)
		if rerr != nil || now == p.published {
			return decision.SayWrap(decision.PublishFailed, err, "move", p.ref, gitrepo.Short(tip))
		}
		if now == tip {
			p.published, p.lastSeen = tip, tip
			return nil
		}
		p.kept = true
		p.Notify(decision.Say(decision.PublishConflict, "moved-outside",
			p.ref, gitrepo.Short(now), gitrepo.Short(p.published), gitrepo.Short(tip), KeptRef(p.task)).
			WithHint("compare them: git log --oneline --graph %s %s", p.ref, KeptRef(p.task)).Error())
	}
	msg := fmt.Sprintf("wt-exec: keep %s of task %s's confined run: %s moved outside it", gitrepo.Short(tip), p.task, p.ref)
	old, err := gitrepo.ReadRef(common, KeptRef(p.task))
	if err != nil {
		return decision.SayWrap(decision.PublishFailed, err, "read", KeptRef(p.task))
	}
	if err := gitrepo.MoveRef(ctx, common, KeptRef(p.task), tip, old, msg); err != nil {
		return decision.SayWrap(decision.PublishFailed, err, "keep", gitrepo.Short(tip), KeptRef(p.task))
	}
	p.Published(Move{Ref: KeptRef(p.task), Old: old, New: tip, Rewrite: rewrite, Kept: true})
	p.keptTip, p.lastSeen = tip, tip
	return nil
}

// KeepObjects copies into the repository every object of the view it
// lacks (gitrepo.ImportAll): what the run's index, stash, worktree HEAD
// reflog and unpublished refs name outlives the view.
func (p *Publisher) KeepObjects(ctx context.Context) error {
	var err error
	p.Exclusive(func() { _, err = gitrepo.ImportAll(ctx, p.view.Common, filepath.Join(p.view.Upper(), "objects")) })
	if err != nil {
		return decision.SayWrap(decision.PublishFailed, err, "copy-objects-run")
	}
	return nil
}

// Unpublished lists the refs the run moved in its view (created, moved or
// deleted) that stand elsewhere in the repository, but the task branch
// and the per-worktree refs: what the run did that stays in its view, for
// wt-exec to say when the run ends. Each line is "REF VIEW REAL", a
// missing side as "-".
//
// Which refs the run moved is read from its upper layer (files backend: a
// loose ref or its deletion there, or a packed-refs of its own with
// another value), or from a comparison with the stack it started with
// (reftable): refs others moved meanwhile are not the run's.
func (p *Publisher) Unpublished(ctx context.Context) ([]string, error) {
	root := p.view.Root()
	if root == "" {
		return nil, errNoView
	}
	common := p.view.Common
	table := gitrepo.Reftable(common)
	var moved map[string]bool
	if table {
		// Nothing moved while the stack is the one the run started with.
		// The run's own file: read so that nothing planted there (a FIFO)
		// can hang the end of the run.
		now, err := safefile.Read(filepath.Join(p.view.Upper(), "reftable", "tables.list"), 1<<20, safefile.NoFollow)
		if err != nil {
			return nil, err
		}
		start, err := os.ReadFile(filepath.Join(p.view.Dir, "start", "reftable", "tables.list"))
		if err != nil {
			return nil, err
		}
		if string(now) == string(start) {
			return nil, nil
		}
	} else {
		var err error
		if moved, err = upperRefs(p.view); err != nil {
			return nil, err
		}
		delete(moved, p.ref)
		if len(moved) == 0 {
			return nil, nil
		}
	}
	// Through wt-exec's own /proc entry: git, another process, resolves
	// the view's descriptor there, not in its own /proc/self.
	refsDir := filepath.Join("/proc", strconv.Itoa(os.Getpid()), "fd", strconv.Itoa(p.view.fd))
	view, err := gitrepo.ListRefsOf(ctx, common, refsDir)
	if err != nil {
		return nil, err
	}
	real, err := gitrepo.ListRefsOf(ctx, common, common)
	if err != nil {
		return nil, err
	}
	if table {
		start, err := gitrepo.ListRefsOf(ctx, common, filepath.Join(p.view.Dir, "start"))
		if err != nil {
			return nil, err
		}
		moved = map[string]bool{}
		for name, v := range view {
			if start[name] != v {
				moved[name] = true
			}
		}
		for name := range start {
			if _, ok := view[name]; !ok {
				moved[name] = true
			}
		}
	}
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return gitrepo.Short(s)
	}
	var out []string
	for name := range moved {
		if name == p.ref || strings.HasPrefix(name, KeptPrefix) || view[name] == real[name] {
			continue
		}
		out = append(out, name+" "+dash(view[name])+" "+dash(real[name]))
	}
	sort.Strings(out)
	return out, nil
}

// upperRefs are the refs the run wrote in its view's upper layer (files
// backend): a loose ref, or a deletion (a whiteout), under refs/, and
// every ref its own packed-refs gives another value than the real one.
func upperRefs(v *View) (map[string]bool, error) {
	up := v.Upper()
	moved := map[string]bool{}
	seen := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(up, "refs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.HasSuffix(p, ".lock") {
			return nil
		}
		rel, err := filepath.Rel(up, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		seen[name] = true
		if seed, ok := v.seeded[name]; ok && d.Type().IsRegular() {
			if b, err := os.ReadFile(p); err == nil && string(b) == seed {
				return nil // the copy seed made, untouched
			}
		}
		moved[name] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	// A copy seed made that is gone was deleted in the view: its
	// directory is opaque there, so a deletion leaves no whiteout, only
	// the copy's absence (another task's branch beside this one's, in the
	// flat layout).
	for name := range v.seeded {
		if !seen[name] {
			moved[name] = true
		}
	}
	mine, err := packedRefs(filepath.Join(up, "packed-refs"))
	if err != nil || mine == nil {
		return moved, err
	}
	theirs, err := packedRefs(filepath.Join(v.Common, "packed-refs"))
	if err != nil {
		return nil, err
	}
	for name, oid := range mine {
		if theirs[name] != oid {
			moved[name] = true
		}
	}
	for name := range theirs {
		if _, ok := mine[name]; !ok {
			moved[name] = true
		}
	}
	return moved, nil
}

// packedRefs reads a packed-refs file (nil when there is none): one the
// run wrote in its view too, so never blocking on what it planted there.
func packedRefs(file string) (map[string]string, error) {
	b, err := safefile.Read(file, 1<<30, safefile.NoFollow)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		if oid, name, ok := strings.Cut(line, " "); ok {
			out[name] = oid
		}
	}
	return out, nil
}

// watchAfter is how long a run goes before its view is watched.
const watchAfter = 50 * time.Millisecond

// Watch publishes the branch whenever the view's refs change, until ctx
// ends: inotify on the view's directories where a move of the branch
// shows (the branch's ref directory and the common dir's root for the
// files backend, reftable/ for reftable), and a poll every second in case
// a directory it watches is removed and made again. The watch starts once
// the run has lasted watchAfter (a move before then is published then). Errors are said
// through Notify, once each.
func (p *Publisher) Watch(ctx context.Context) {
	root := p.view.Root()
	if root == "" {
		return
	}
	// A short run gets no watch: closing an inotify instance waits for an
	// SRCU grace period (about 10 ms), which would be most of the cost of
	// a confined run that lasts a moment. It publishes when it ends.
	select {
	case <-ctx.Done():
		return
	case <-time.After(watchAfter):
	}
	// A publication once begun runs to its end: ctx ends the watch, not
	// the gits of a move (killed half way, update-ref would leave the
	// branch's lock in the repository, and the run's last publication
	// would fail on it).
	pubCtx := context.WithoutCancel(ctx)
	if err := p.Publish(pubCtx); err != nil && ctx.Err() == nil {
		p.Notify(err.Error())
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		p.Notify("the run's branch is published when it ends, not as it moves: inotify: " + err.Error())
		<-ctx.Done()
		return
	}
	dirs := []string{".", "reftable", path.Dir(p.ref)}
	watched := map[string]bool{}
	watch := func() {
		for _, d := range dirs {
			if watched[d] {
				continue
			}
			const mask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE | unix.IN_DELETE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF
			if _, err := unix.InotifyAddWatch(fd, filepath.Join(root, d), mask); err == nil {
				watched[d] = true
			}
		}
	}
	watch()
	events := make(chan struct{}, 1)
	go func() {
		defer unix.Close(fd)
		buf := make([]byte, 16*1024)
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for ctx.Err() == nil {
			if n, _ := unix.Poll(pfd, 200); n <= 0 {
				continue
			}
			n, err := unix.Read(fd, buf)
			if err != nil || n <= 0 {
				continue
			}
			select {
			case events <- struct{}{}:
			default:
			}
		}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	said := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-events:
		case <-tick.C:
			clear(watched) // a watch on a removed directory is gone: add them again
			watch()
		}
		if err := p.Publish(pubCtx); err != nil && ctx.Err() == nil && !said[err.Error()] {
			said[err.Error()] = true
			p.Notify(err.Error())
		}
	}
}
