package land

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// NotesRef is where land --push publishes each landing's provenance as
// git notes (one note on each landed task's commit), so that a clone of
// the remote can say why a commit is on its branch without wt's store.
const NotesRef = "refs/notes/wt"

// Provenance is how one task's work came onto the publication branch:
// the landing record wt keeps (events.jsonl's task_landed) and the note
// land --push publishes (NotesRef).
type Provenance struct {
	Task         string `json:"task"`
	AllocationID string `json:"allocation_id,omitempty"`
	Branch       string `json:"branch,omitempty"`
	// Source is the task's commit that was approved and let go; Onto the
	// publication tip (with the batch's earlier tasks) it was integrated
	// onto, Result the commit its integration made. The commits the task
	// brought are Onto..Result.
	Source   string `json:"source"`
	Onto     string `json:"onto"`
	Result   string `json:"result"`
	Strategy string `json:"strategy,omitempty"`
	Attempt  int    `json:"attempt,omitempty"`
	// Writer is the writer lease the gate approved Source under, as the
	// task's ledger records it.
	Writer *WriterOf `json:"writer,omitempty"`
	// ReadyBy and ReadyAt: who let Source go (wt-admin ready), and when.
	ReadyBy string `json:"ready_by,omitempty"`
	ReadyAt string `json:"ready_at,omitempty"`
	// Batch names the batch it landed in, with the batch's tasks in
	// order; Tested is the commit the test passed (the batch's result).
	Batch      string   `json:"batch,omitempty"`
	BatchTasks []string `json:"batch_tasks,omitempty"`
	Tested     string   `json:"tested,omitempty"`
	// Test is the command it passed ("" when land ran none), TestLog its
	// output; TestUnconfined says it ran outside a sandbox.
	Test           string `json:"test,omitempty"`
	TestLog        string `json:"test_log,omitempty"`
	TestUnconfined bool   `json:"test_unconfined,omitempty"`
	// AcceptedUngated: its tip was not one a gate approved (--accept-ungated).
	AcceptedUngated bool `json:"accepted_ungated,omitempty"`
	// Lander is the publication lease it landed under (its holder's pid),
	// Push the remote it was pushed to, LandedAt when.
	Lander    string `json:"lander,omitempty"`
	LanderPID int    `json:"lander_pid,omitempty"`
	Push      string `json:"push,omitempty"`
	LandedAt  string `json:"landed_at,omitempty"`
}

// WriterOf is the writer lease a task's commit was approved under.
type WriterOf struct {
	LeaseID  string `json:"lease_id"`
	ClientID string `json:"client_id,omitempty"`
	At       string `json:"at,omitempty"`
	Via      string `json:"via"`
}

// writerOf is the writer lease task a's ledger records approving tip.
func (l *lander) writerOf(a store.Allocation, tip string) *WriterOf {
	led, err := store.ReadLedger(l.r.Store.Root(), a.AllocationID, "refs/heads/"+branchName(a))
	if err != nil {
		return nil
	}
	for i := len(led.Lines) - 1; i >= 0; i-- {
		ln := led.Lines[i]
		if ln.New != tip || ln.LeaseID == "" {
			continue
		}
		w := &WriterOf{LeaseID: ln.LeaseID, ClientID: ln.ClientID, Via: ln.Via}
		if t := ln.When(); !t.IsZero() {
			w.At = t.UTC().Format(time.RFC3339)
		}
		return w
	}
	return nil
}

// provenanceOf is what the lander knows of a landing of task a's source
// when it publishes it.
func (l *lander) provenanceOf(a store.Allocation, rec store.Landing, source string) Provenance {
	p := Provenance{Task: a.TaskKey, AllocationID: a.AllocationID, Branch: branchName(a), Source: source, Strategy: l.strategyOf(rec),
		Writer: l.writerOf(a, source), Test: l.opts.Test, Lander: l.lease.LeaseID, LanderPID: l.lease.Holder.PID, Push: l.opts.Push}
	if rec.State == store.LandingReady && rec.ReadyTip == source {
		p.ReadyBy, p.ReadyAt = rec.ReadyBy, rec.ReadyAt
	}
	return p
}

// WhyResult is wt-admin why's answer for one commit.
type WhyResult struct {
	Commit string `json:"commit"`
	Branch string `json:"branch"`
	// From says what answered: "store" (wt's records here) or "notes"
	// (NotesRef, in a clone without the store).
	From string `json:"from"`
	// Landing is the landing that brought the commit; nil when none did.
	Landing *Provenance `json:"landing,omitempty"`
	// Unseen says why wt never saw the commit arrive (Landing nil).
	Unseen string `json:"unseen,omitempty"`
}

// Why answers for commit (any name git resolves) on the publication
// branch of the repository at g: the landing that brought it, from wt's
// store (root; "" when the repository has none) or, failing that, from
// the notes land --push published. A commit the branch does not hold is
// NOT_ON_PUBLICATION_BRANCH; one no landing brought is answered with
// Landing nil and what wt saw of it (Unseen).
func Why(ctx context.Context, g *gitrepo.Repo, root, branch, commit, repoArg string) (WhyResult, error) {
	res := WhyResult{Branch: branch}
	c, ok, err := g.ResolveCommit(ctx, commit+"^{commit}")
	if err != nil || !ok {
		return res, decision.Say(decision.Usage, "names-no", commit).
			WithHint("name a commit of %s: git -C %s log --oneline %s", branch, repoArg, shell.Word(branch))
	}
	res.Commit = c
	ref := "refs/heads/" + branch
	if in, err := g.IsAncestor(ctx, c, ref); err != nil || !in {
		return res, decision.Say(decision.NotOnPublication, "not-wt", gitrepo.Short(c), branch).
			WithHint("see where it is: git -C %s branch -a --contains %s", repoArg, gitrepo.Short(c))
	}
	var ps []Provenance
	if root != "" {
		res.From = "store"
		if ps, err = landedEvents(root); err != nil {
			return res, err
		}
	} else {
		res.From = "notes"
		if ps, err = notesOf(ctx, g); err != nil {
			return res, err
		}
		if len(ps) == 0 {
			return res, decision.Say(decision.WhyUnknown, "this-repository", NotesRef, gitrepo.Short(c), branch).
				WithHint("fetch the notes land --push publishes: git -C %s fetch origin %s:%s", repoArg, NotesRef, NotesRef)
		}
	}
	// The newest landing whose own commits (Onto..Result) hold it.
	for i := len(ps) - 1; i >= 0; i-- {
		p := ps[i]
		if p.Result == "" || p.Onto == p.Result {
			continue
		}
		if in, err := g.IsAncestor(ctx, c, p.Result); err != nil || !in {
			continue
		}
		if p.Onto != "" {
			if before, err := g.IsAncestor(ctx, c, p.Onto); err != nil || before {
				continue
			}
		}
		res.Landing = &ps[i]
		break
	}
	if res.Landing == nil {
		res.Unseen = unseen(ctx, g, root, ref, c)
	}
	return res, nil
}

// unseen says what wt saw of commit c on ref, which no landing brought.
func unseen(ctx context.Context, g *gitrepo.Repo, root, ref, c string) string {
	if root == "" {
		return "no note of " + NotesRef + " says a landing brought it: it came some other way, or before land published notes"
	}
	led, err := store.ReadLedger(root, store.PublicationLedger, ref)
	if err == nil && len(led.Lines) > 0 {
		if first := led.Lines[0]; first.Via == store.ViaInit || first.Via == store.ViaAllocate {
			if in, err := g.IsAncestor(ctx, c, first.New); err == nil && in {
				return "it was on the branch when wt began keeping its ledger (" + gitrepo.Short(first.New) + "): before wt, nothing of wt's says how it came"
			}
		}
	}
	return "no landing of wt's brought it: it arrived by a move wt's lander did not make (audit names such moves: UNGATED_REF_MOVE)"
}

// landedEvents are the landings events.jsonl of the store at root
// records, oldest first.
func landedEvents(root string) ([]Provenance, error) {
	// Read as every reader of events.jsonl reads it: a regular file,
	// never through a symlink.
	path := filepath.Join(root, "events.jsonl")
	f, _, err := safefile.Open(path, safefile.NoFollow)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, decision.SayWrap(decision.InvalidMetadata, err, "read", path)
	}
	defer f.Close() // Best effort: read only.
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, decision.SayWrap(decision.InvalidMetadata, err, "read", path)
	}
	if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
		data = data[:i+1] // a line cut by a power loss
	}
	var out []Provenance
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		if !bytes.Contains(sc.Bytes(), []byte(`"task_landed"`)) {
			continue
		}
		var ev struct {
			At           string          `json:"at"`
			Event        string          `json:"event"`
			AllocationID *string         `json:"allocation_id"`
			Detail       json.RawMessage `json:"detail"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Event != "task_landed" {
			continue
		}
		var d struct {
			Provenance *Provenance `json:"provenance"`
			Task       string      `json:"task"`
			Source     string      `json:"source"`
			Onto       string      `json:"onto"`
			Result     string      `json:"result"`
			Strategy   string      `json:"strategy"`
			Batch      string      `json:"batch"`
		}
		if json.Unmarshal(ev.Detail, &d) != nil {
			continue
		}
		p := Provenance{Task: d.Task, Source: d.Source, Onto: d.Onto, Result: d.Result, Strategy: d.Strategy, Batch: d.Batch}
		if d.Provenance != nil {
			p = *d.Provenance
		}
		if ev.AllocationID != nil {
			p.AllocationID = *ev.AllocationID
		}
		if p.LandedAt == "" {
			p.LandedAt = ev.At
		}
		out = append(out, p)
	}
	return out, sc.Err()
}

// notesOf are the provenances the notes of NotesRef hold (none when the
// ref is not there).
func notesOf(ctx context.Context, g *gitrepo.Repo) ([]Provenance, error) {
	if _, ok, err := g.ResolveCommit(ctx, NotesRef); err != nil || !ok {
		return nil, nil
	}
	raw, err := g.Git(ctx, false, "notes", "--ref", NotesRef, "list")
	if err != nil {
		return nil, decision.SayWrap(decision.GitFailed, err, "list-notes", NotesRef)
	}
	var out []Provenance
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		blob, _, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		b, err := g.Git(ctx, false, "cat-file", "blob", blob)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var p Provenance
			if json.Unmarshal([]byte(l), &p) == nil && p.Result != "" {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// publishNotes writes each landing of ps as a note on its result commit
// under NotesRef and pushes the notes to remote, onto the remote's own
// (fetched first, and merged, should another lander's be there): best
// effort, the landing stands either way; what failed is said.
func (l *lander) publishNotes(ps []Provenance) {
	if l.opts.Push == "" || len(ps) == 0 {
		return
	}
	g := l.r.Git
	remoteNotes := "refs/wt/notes-remote"
	if _, err := g.GitUnhooked(l.ctx, "fetch", "-q", "--end-of-options", l.opts.Push, "+"+NotesRef+":"+remoteNotes); err == nil {
		if _, ok, _ := g.ResolveCommit(l.ctx, NotesRef); !ok {
			g.GitUnhooked(l.ctx, "update-ref", NotesRef, remoteNotes)
		} else {
			g.GitUnhooked(l.ctx, "notes", "--ref", NotesRef, "merge", "-q", "-s", "cat_sort_uniq", remoteNotes)
		}
	}
	for _, p := range ps {
		b, _ := json.Marshal(p)
		if _, err := g.GitUnhooked(l.ctx, "notes", "--ref", NotesRef, "add", "-f", "-m", string(b), p.Result); err != nil {
			l.notify(fmt.Sprintf("could not write the note of task %s on %.12s: %v", p.Task, p.Result, err))
			return
		}
	}
	if _, err := g.GitUnhooked(l.ctx, "push", "-q", "--end-of-options", l.opts.Push, NotesRef+":"+NotesRef); err != nil {
		l.notify(fmt.Sprintf("could not push %s to %s (the landing stands, and wt-admin --repo %s why COMMIT answers from this store): %v", NotesRef, l.opts.Push, l.opts.RepoArg, err))
		return
	}
	l.notify(fmt.Sprintf("published why each commit landed as notes: %s on %s", NotesRef, l.opts.Push))
}
