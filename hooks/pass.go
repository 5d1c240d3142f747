package hooks

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/store"
)

// PassFile is the file, in a checkout's own git dir, in which an allowed
// pre-commit leaves its pass for the reference transaction of the same git
// process (docs/decisions.md, "Hooks").
const PassFile = "wt-hook-pass"

// PreCommit judges a commit like Entitled, for the process pid (the hook),
// whose parent gitPID is the committing git process, or the shim's shell
// that git runs (the caller knows it from getppid: no /proc reading for
// it). When the commit is allowed
// outright (no warning), it leaves a pass naming that git process by its identity (boot
// id, pid, start ticks) and the ref the commit moves: the
// reference-transaction shim (install.CurrentVersion; the pass's own line
// format is "v2") reads it with shell builtins and does not
// start wt-hook a second time for the same commit. The shim accepts the pass
// only from its own parent and only for a transaction that moves HEAD and
// that ref; anything else is judged by wt-hook as before. The pass is
// advice, never a grant on its own: failing to write it costs one more
// wt-hook start, nothing else.
func PreCommit(dir string, pid, gitPID int) (Verdict, error) {
	c, err := gitrepo.Locate(dir)
	if err != nil {
		return Verdict{}, err
	}
	v, err := entitled(c, pid)
	// A pass only for an entitlement to the checkout's own task branch: a
	// checkout allowed for any other reason (unmanaged, a role with its own
	// gate, a warning) gets none, so its reference transaction is judged.
	if err == nil && v.Allowed && !v.Warning && v.own && v.Code == decision.Entitled && !c.Detached && c.Branch == v.Branch {
		ref := "refs/heads/" + c.Branch
		if tip, rerr := gitrepo.ReadRef(c.CommonDir, ref); rerr == nil && tip == "" {
			// An unborn task branch: gone from git, or never there. (A
			// ref that cannot be read is not taken for gone.)
			if d := missingBranch(v.r.Store.Root(), v.AllocationID, v.TaskKey, v.Path, ref, ""); d != nil {
				v.refuse(d)
				return done(v), nil
			}
		}
		writePass(c, gitPID, v.procs, v.Lease, ledgerFile(c, v.r, v.AllocationID, ref))
	}
	return v, err
}

// writePass writes the pass for the git process gitPID, which must be a
// running process called git (or for its parent, when gitPID is the shell
// of a shim that runs the gate before the hook it chains, shim v11),
// without fsync: it describes a process of this boot. An existing pass is
// rewritten in place (safefile.Overwrite: one write, padded with spaces
// after the line); the first is written whole (temporary file and
// rename). A reader that meets a pass being rewritten reads a line that
// names no process or a process that was judged: either way no commit
// passes unjudged. The
// entitlement's ancestry walk passed through gitPID, the hook's parent, and
// its stat from there names it (read again only where the walk is absent).
func writePass(c gitrepo.Checkout, gitPID int, procs *proc.Reader, l *store.Lease, ledger string) {
	stat := func(pid int) (proc.Stat, error) {
		if procs != nil {
			if st, ok := procs.Walked(pid); ok {
				return st, nil
			}
		}
		return proc.ReadStat(pid)
	}
	st, err := stat(gitPID)
	if err == nil && st.Comm != "git" {
		// A shim's shell, which runs the gate as its child before the
		// hook it chains (shim v11): git is its parent.
		st, err = stat(st.PPID)
	}
	if err != nil || st.Comm != "git" || !st.Running() {
		return
	}
	boot, err := proc.BootID()
	if err != nil {
		return
	}
	ref := "refs/heads/" + c.Branch
	if strings.ContainsAny(ref, "\"\\") || strings.ContainsAny(ledger, "\n") {
		return // the shim writes the ref into a JSON line, the ledger's path after the fields
	}
	lease, gen, client := "-", 0, "-"
	if l != nil {
		lease, gen, client = l.LeaseID, l.Generation, l.Holder.ClientID
	}
	line := fmt.Appendf(nil, "v2 %s %d %d %s %s %d %s %s\n", boot, st.PID, st.StartTicks, ref, lease, gen, client, cmp.Or(ledger, "-"))
	if safefile.Overwrite(filepath.Join(c.GitDir, PassFile), line) {
		return // in place: the shim reads the first line
	}
	fd, tmp, err := safefile.CreateTemp(c.GitDir, PassFile+".tmp")
	if err != nil {
		return
	}
	werr := safefile.WriteAll(fd, line)
	if cerr := unix.Close(fd); werr != nil || cerr != nil {
		os.Remove(tmp)
		return
	}
	if p := filepath.Join(c.GitDir, PassFile); !safefile.SwapIn(tmp, p) && os.Rename(tmp, p) != nil {
		os.Remove(tmp)
	}
}
