package confine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// A view outlives a wt-exec that is killed: its upper layer holds what the
// run did and has not published yet. So that nothing of it is lost, each
// view is recorded in wt's store, which the run cannot write
// (<store>/views/<worktree key>.json: where its layers are, the task, the
// branch and the tip last published), from before the command starts
// until the view is removed. The next wt-exec to take the worktree's lease
// finds the record and recovers the view (Recover) before it runs
// anything; doctor names a record whose run is gone, with that wt-exec as
// the fix.

// Recover publishes what the view of a run that ended without wt-exec
// (killed) left, under the lease of the caller, which now holds the
// worktree: the task branch's tip in the view, moved by compare-and-swap
// from the tip last published (kept under KeptRef when the branch moved
// otherwise), every object of the view the repository lacks, and then the
// view's layers and record removed. A view it cannot read is left as it
// is, with its record, and the error says where it is. ledger (when not
// nil) records the publication in the task branch's ledger.
func Recover(ctx context.Context, common, root, key string, notify func(string), ledger func(old, new string)) error {
	r, ok, err := store.ReadViewRecord(root, key)
	if err != nil || !ok {
		return err
	}
	if _, err := os.Stat(r.Dir); errors.Is(err, os.ErrNotExist) {
		return store.RemoveViewRecord(root, key) // nothing left to recover
	}
	if r.Runner != nil && r.Runner.PID != os.Getpid() {
		if live, err := proc.IsLive(proc.NewReader(), *r.Runner); err != nil || live {
			// Never a view still in use, nor one whose runner cannot be read.
			return fmt.Errorf("the view %s of a run of task %s is still in use by wt-exec pid %d (or whether it runs cannot be read)", r.Dir, r.Task, r.Runner.PID)
		}
	}
	v := &View{Common: common, Dir: r.Dir, Branch: r.Branch, fd: -1}
	if r.Discard {
		// A sandbox's: it has no authority, and nothing of it is kept.
		if err := v.Remove(); err != nil {
			return err
		}
		notify(fmt.Sprintf("the sandbox view %s of an earlier run that ended without wt-exec (killed) was removed: nothing of a sandbox is kept", r.Dir))
		return store.RemoveViewRecord(root, key)
	}
	if r.Branch != "" {
		p := NewPublisher(v, r.Task, r.Branch, r.Published, "")
		p.Notify = notify
		if ledger != nil {
			p.Ledger = ledger
		}
		p.tip = func() (string, error) { return upperTip(v, p.ref, r.Reftable) }
		if err := p.Publish(ctx); err != nil {
			return decision.SayWrap(decision.PublishFailed, err, "recover-view", r.Dir, r.Task, store.ViewRecordPath(root, key))
		}
	}
	if _, err := gitrepo.ImportAll(ctx, common, filepath.Join(v.Upper(), "objects")); err != nil {
		return decision.SayWrap(decision.PublishFailed, err, "copy-objects-view", r.Dir)
	}
	if err := v.Remove(); err != nil {
		return err
	}
	notify(fmt.Sprintf("the view of an earlier run of task %s that ended without wt-exec (killed) was recovered: its branch published, its objects kept", r.Task))
	return store.RemoveViewRecord(root, key)
}

// upperTip reads ref from a view's upper layer alone, without mounting
// it: the reftable stack there is whole (seed copies it); in the files
// backend the branch's directory is opaque, so its loose ref is there if
// anywhere (a whiteout: deleted there), else its packed-refs entry, the
// upper layer's own if the run rewrote packed-refs, else the real one.
func upperTip(v *View, ref string, reftable bool) (string, error) {
	up := v.Upper()
	if reftable {
		return gitrepo.ReadRef(up, ref)
	}
	fi, err := os.Lstat(filepath.Join(up, ref))
	switch {
	case err == nil && fi.Mode().IsRegular():
		b, err := os.ReadFile(filepath.Join(up, ref))
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(b)), nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return "", err
	}
	packed := filepath.Join(up, "packed-refs")
	if _, err := os.Lstat(packed); errors.Is(err, os.ErrNotExist) {
		packed = filepath.Join(v.Common, "packed-refs")
	}
	refs, err := packedRefs(packed)
	if err != nil {
		return "", err
	}
	return refs[ref], nil
}

// Recorder records the view of a run of task on worktree key, on branch
// standing at base now, in the store at root: OnView for Input, called
// before the view is made.
func Recorder(root, key, task, branch, base, common string) func(dir string) error {
	return func(dir string) error {
		return store.WriteViewRecord(root, key, store.ViewRecord{Dir: dir, Task: task, Branch: branch, Published: base, Reftable: gitrepo.Reftable(common), Runner: runner()})
	}
}

// runner is this wt-exec's identity, for its view's record (nil when it
// cannot be read: the record then goes by the worktree's lease alone).
func runner() *proc.Identity {
	self, err := proc.Self()
	if err != nil {
		return nil
	}
	return &self
}

// SandboxRecorder records the view of a sandboxed run on worktree key
// (store.ViewRecord.Discard): a killed run's is removed, never published.
func SandboxRecorder(root, key, task, common string) func(dir string) error {
	return func(dir string) error {
		return store.WriteViewRecord(root, key, store.ViewRecord{Dir: dir, Task: task, Reftable: gitrepo.Reftable(common), Discard: true, Runner: runner()})
	}
}

// Recorded has the view keep its record (made by Recorder) up to date:
// each published tip, and its removal with the view's.
func (v *View) Recorded(root, key, task string) {
	v.record = func(published string) error {
		return Recorder(root, key, task, v.Branch, published, v.Common)(v.Dir)
	}
	v.unrecord = func() error { return store.RemoveViewRecord(root, key) }
}
