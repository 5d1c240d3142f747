package cli

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/cmd/internal/textout"
	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/lease"
	"github.com/wt-tool/wt/core/maint"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

func (e *env) leaseCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "lease",
		Usage: "writer leases: list and inspect them; end or hand over a dead one, with proof",
		Subcommands: []*ucli.Command{
			{
				Name:  "list",
				Usage: "current leases with their freshness; --all adds ended ones from the event log",
				Flags: []ucli.Flag{clikit.JSONFlag, &ucli.BoolFlag{Name: "all", Usage: "also the leases that ended: who held which worktree, when, how it ended"},
					&ucli.BoolFlag{Name: "active", Usage: "only current leases whose holder is active"},
					&ucli.StringFlag{Name: "role", Usage: "only the leases of allocations of `ROLE` (feature, audit, integration, recovery, canonical)"},
					&ucli.IntFlag{Name: "limit", Usage: "at most `N`: the current ones first, then the ended ones that began last"}},
				Action: e.Action("lease list", 0, func(c *ucli.Context) error {
					if c.Int("limit") < 0 {
						return clikit.UsageErr("limit-takes", c.Int("limit"))
					}
					if role := c.String("role"); role != "" {
						if err := store.ValidRole(role); err != nil {
							return &textout.ExitError{Code: textout.ExitUsage, Err: err}
						}
					}
					r, err := e.open(c)
					if err != nil {
						return err
					}
					entries, err := lease.ListWith(r, lease.ListOptions{All: c.Bool("all"), Active: c.Bool("active"), Role: c.String("role"), Limit: c.Int("limit")})
					if err != nil {
						return err
					}
					res := map[string]any{"leases": entries}
					return e.Success(decision.LeasesListed, fmt.Sprintf("%d lease(s)", len(entries)), res, nil, func(w io.Writer) {
						tw := clikit.Table(w)
						fmt.Fprintln(tw, "TASK\tWORKTREE\tCLIENT\tPID\tGEN\tFROM\tTO\tSTATE")
						for _, l := range entries {
							state := l.Freshness
							if l.Ended != "" {
								state = l.Ended
							}
							if l.Fleet != nil {
								state += fmt.Sprintf(" (fleet rev %d)", l.Fleet.Revision)
							}
							fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", clikit.Clean(clikit.Dash(l.TaskKey)), clikit.Clean(clikit.Dash(l.WorktreePath)), l.Holder.ClientID, l.Holder.PID, l.Generation, l.From, clikit.Dash(l.To), state)
						}
						tw.Flush()
					})
				}),
			},
			e.leaseInspectCommand(), e.leaseReleaseCommand(), e.leaseExpireCommand(), e.leaseAbandonCommand(), e.leaseAdoptCommand(),
			e.leaseHandoffCommand(), e.leaseTransferCommand(),
		},
	}
}

var (
	clientIDFlag  = &ucli.StringFlag{Name: "client-id", Usage: "the client you run as (wt-exec's --client-id)"}
	sessionIDFlag = &ucli.StringFlag{Name: "session-id", Usage: "the session you run as (wt-exec's --session-id)"}
	leaseIDFlag   = &ucli.StringFlag{Name: "lease-id", Usage: "act only if the worktree's lease is still `ID`"}
	expectGenFlag = &ucli.StringFlag{Name: "expect-generation", Usage: "act only if the worktree's lease is still at generation `N`"}
	expectHead    = &ucli.StringFlag{Name: "expect-head", Usage: "act only if the checkout's HEAD is still commit `SHA` (the full id)"}
)

// expectTarget reads what a lease command that acts on what it expects
// needs: its PATH and required flags, the expectations, the repository.
func (e *env) expectTarget(c *ucli.Context, name string, required ...string) (string, lease.Expect, *alloc.Repo, error) {
	path, err := pathArg(c, name, required...)
	if err != nil {
		return "", lease.Expect{}, nil, err
	}
	expect, err := expectOf(c)
	if err != nil {
		return "", expect, nil, err
	}
	r, err := e.open(c)
	return path, expect, r, err
}

// expectOf reads --lease-id, --expect-generation and --expect-head.
func expectOf(c *ucli.Context) (lease.Expect, error) {
	x := lease.Expect{LeaseID: c.String("lease-id"), Head: c.String("expect-head")}
	if c.IsSet("expect-generation") {
		n, err := strconv.Atoi(c.String("expect-generation"))
		if err != nil || n < 0 {
			return x, clikit.UsageErr("expect-generation", c.String("expect-generation"))
		}
		x.Generation = &n
	}
	return x, lease.ValidExpect(x)
}

// pathArg is the one PATH argument a command on a worktree needs, and the
// flags it cannot do without. (urfave/cli's own Required check would answer
// a missing flag with help for a command named like the PATH.)
func pathArg(c *ucli.Context, name string, required ...string) (string, error) {
	return oneArg(c, name, "PATH: the worktree", required...)
}

// oneArg is the one positional argument (what) of a command, and the flags
// it cannot do without.
func oneArg(c *ucli.Context, name, what string, required ...string) (string, error) {
	if c.Args().Len() != 1 || c.Args().First() == "" {
		return "", clikit.UsageErr("takes-one", name, what)
	}
	for _, f := range required {
		if !c.IsSet(f) {
			return "", clikit.UsageErr("needs", name, f)
		}
	}
	return c.Args().First(), nil
}

// leaseTarget reads what a lease command on one worktree needs: its PATH,
// the caller (--client-id, --session-id) and the repository.
func (e *env) leaseTarget(c *ucli.Context, name string, required ...string) (string, lease.Caller, *alloc.Repo, error) {
	path, err := pathArg(c, name, required...)
	if err != nil {
		return "", lease.Caller{}, nil, err
	}
	caller, err := callerOf(c)
	if err != nil {
		return "", caller, nil, err
	}
	r, err := e.open(c)
	return path, caller, r, err
}

// callerOf is the caller named by --client-id and --session-id.
func callerOf(c *ucli.Context) (lease.Caller, error) {
	caller := lease.Caller{ClientID: c.String("client-id"), SessionID: optString(c, "session-id")}
	if caller.ClientID == "" && caller.SessionID != nil {
		return caller, clikit.UsageErr("session-id")
	}
	if caller.ClientID != "" {
		if err := proc.ValidateClientID(caller.ClientID); err != nil {
			return caller, err
		}
	}
	return caller, nil
}

func (e *env) leaseInspectCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "inspect",
		Usage:     "a worktree's lease: its freshness and the safe next action for you (--client-id, --session-id)",
		ArgsUsage: "PATH",
		Flags: []ucli.Flag{clikit.JSONFlag, clientIDFlag, sessionIDFlag,
			&ucli.StringFlag{Name: "lease-id", Usage: "the lease `ID` you were told of: stale_prompt_lease if it is not the worktree's any more"}},
		Action: e.Action("lease inspect", 1, func(c *ucli.Context) error {
			path, caller, r, err := e.leaseTarget(c, "lease inspect")
			if err != nil {
				return err
			}
			in, err := lease.Inspect(r, path, caller, c.String("lease-id"))
			if err != nil {
				return err
			}
			in.Next = textout.Anchor(in.Next, cmp.Or(e.Dir, textout.WorkDir()))
			reason := fmt.Sprintf("%s (task %s): %s; safe next action %s", in.Path, in.TaskKey, in.Freshness, in.SafeNextAction)
			return e.Success(decision.LeaseInspected, reason, in, nil, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, decision.LeaseInspected, clikit.Clean(reason))
				tw := clikit.Table(w)
				if in.Lease.LeaseID != "" {
					printLease(tw, in.Lease)
					fmt.Fprintf(tw, "  evidence\t%s\n", evidence(in.Proof))
				}
				if h := in.Handoff; h != nil {
					fmt.Fprintf(tw, "  handoff\treserved for client %s until %s (by %s)\n", h.ToClient, h.ExpiresAt, handoffBy(*h))
				}
				if in.GitLock != "" {
					fmt.Fprintf(tw, "  git lock\t%s (no such lease: not authoritative)\n", clikit.Clean(in.GitLock))
				}
				if o := in.Occupant; o != nil {
					fmt.Fprintf(tw, "  occupant\tpid %d (%s), since %s, left by client %s's run\n", o.PID, clikit.Clean(o.Command), clikit.Dash(o.Since), clikit.Clean(o.ClientID))
				}
				for _, why := range in.Reasons {
					fmt.Fprintf(tw, "  why\t%s\n", clikit.Clean(why))
				}
				if len(in.AlsoAllowed) > 0 {
					fmt.Fprintf(tw, "  also allowed\t%s\n", strings.Join(in.AlsoAllowed, ", "))
				}
				if in.Next != "" {
					fmt.Fprintf(tw, "  next\t%s\n", clikit.Clean(in.Next))
				}
				tw.Flush()
			})
		}),
	}
}

func printLease(w io.Writer, l store.Lease) {
	fmt.Fprintf(w, "  lease\t%s, generation %d\n", l.LeaseID, l.Generation)
	fmt.Fprintf(w, "  holder\tclient %s, pid %d, since %s\n", l.Holder.ClientID, l.Holder.PID, l.AcquiredAt)
	if l.ExpiresAt != nil {
		fmt.Fprintf(w, "  expires\t%s\n", *l.ExpiresAt)
	}
	if f := l.Fleet; f != nil {
		fmt.Fprintf(w, "  fleet\tkey %s, revision %d (etcd at %s, TTL %s)\n", f.Key, f.Revision, strings.Join(f.Endpoints, ","), f.TTL)
	}
	if l.Child != nil && l.Child.Cgroup != "" {
		fmt.Fprintf(w, "  cgroup\t%s\n", l.Child.Cgroup)
	}
	if l.Confined != nil {
		fmt.Fprintf(w, "  confined\t%s\n", clikit.Clean(confinedText(l.Confined)))
	}
	if p := l.Provenance; p != nil {
		from := "lease " + p.PriorLeaseID
		if p.PriorHolder != nil {
			from += fmt.Sprintf(" (client %s, pid %d)", p.PriorHolder.ClientID, p.PriorHolder.PID)
		}
		by := fmt.Sprintf("pid %d", p.By.PID)
		if p.ByClient != "" {
			by = "client " + p.ByClient + ", " + by
		}
		fmt.Fprintf(w, "  provenance\t%s from %s by %s at %s\n", p.How, from, by, p.At)
	}
}

// handoffBy says who reserved a handoff.
func handoffBy(h store.Handoff) string {
	if h.Operator {
		return fmt.Sprintf("an operator, pid %d", h.By.PID)
	}
	return fmt.Sprintf("client %s, pid %d", h.ByClient, h.By.PID)
}

// confinedText says what a confined command may do.
func confinedText(c *store.Confinement) string {
	signals := "signals not scoped"
	if c.SignalsScoped {
		signals = "signals only to its own processes"
	}
	return fmt.Sprintf("Landlock ABI %d; writes beneath %s; %s", c.ABI, strings.Join(c.Write, ", "), signals)
}

// evidence is a proof in words.
func evidence(p lease.Proof) string {
	var parts []string
	if p.HolderLive {
		parts = append(parts, "holder running")
	} else {
		parts = append(parts, "holder exited")
	}
	if p.MissingWorktree {
		parts = append(parts, "worktree missing")
	}
	if p.Expired {
		parts = append(parts, "expired")
	}
	if p.NoLiveMutationRisk {
		parts = append(parts, "nothing of it runs")
	} else {
		parts = append(parts, p.Risk)
	}
	if p.SameOwner {
		parts = append(parts, "yours")
	}
	return strings.Join(parts, "; ")
}

// ended prints what an operator command did.
func (e *env) ended(code, verb string, res lease.Ended) error {
	reason := fmt.Sprintf("%s lease %s of %s (task %s, client %s, pid %d)", verb, res.Lease.LeaseID, res.Path, res.TaskKey, res.Lease.Holder.ClientID, res.Lease.Holder.PID)
	if res.Adopted != nil {
		reason += fmt.Sprintf(": now lease %s, generation %d, client %s, pid %d", res.Adopted.LeaseID, res.Adopted.Generation, res.Adopted.Holder.ClientID, res.Adopted.Holder.PID)
	}
	return e.Success(code, reason, res, nil, func(w io.Writer) {
		fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, code, clikit.Clean(reason))
		if a := res.Adopted; a != nil {
			// The proof is of the lease handed over, read before: its
			// holder had exited; the new one runs.
			fmt.Fprintf(w, "  before: lease %s: %s\n", res.Lease.LeaseID, evidence(res.Proof))
			fmt.Fprintf(w, "  now: lease %s, held by client %s, pid %d (running)\n", a.LeaseID, a.Holder.ClientID, a.Holder.PID)
			return
		}
		fmt.Fprintf(w, "  evidence: %s\n", evidence(res.Proof))
	})
}

func (e *env) leaseReleaseCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "release",
		Usage:     "release a lease whose holder exited, by its exact id, when nothing of it runs",
		ArgsUsage: "PATH",
		Flags:     []ucli.Flag{clikit.JSONFlag, &ucli.StringFlag{Name: "lease-id", Usage: "the exact id of the lease to release"}, expectGenFlag},
		Action: e.Action("lease release", 1, func(c *ucli.Context) error {
			path, expect, r, err := e.expectTarget(c, "lease release", "lease-id")
			if err != nil {
				return err
			}
			res, err := lease.ReleaseDead(r, path, expect)
			if err != nil {
				return err
			}
			return e.ended(decision.WriterLeaseReleased, "released", res)
		}),
	}
}

func (e *env) leaseExpireCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "expire",
		Usage: "record every lease past its expiry whose holder is dead, and of which nothing runs, as expired and remove it",
		Flags: []ucli.Flag{clikit.JSONFlag},
		Action: e.Action("lease expire", 0, func(c *ucli.Context) error {
			r, err := e.open(c)
			if err != nil {
				return err
			}
			res, err := lease.Expire(r)
			if err != nil {
				return err
			}
			reason := fmt.Sprintf("%d lease(s) expired, %d past expiry kept", len(res.Expired), len(res.Kept))
			return e.Success(decision.LeasesExpired, reason, res, nil, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, decision.LeasesExpired, clikit.Clean(reason))
				for _, x := range res.Expired {
					fmt.Fprintf(w, "  expired  %s (task %s): lease %s of client %s, pid %d, expired at %s\n", clikit.Clean(x.Path), clikit.Clean(x.TaskKey), x.Lease.LeaseID, x.Lease.Holder.ClientID, x.Lease.Holder.PID, *x.Lease.ExpiresAt)
				}
				for _, k := range res.Kept {
					fmt.Fprintf(w, "  kept     %s: lease %s: %s\n", clikit.Clean(k.Path), k.LeaseID, clikit.Clean(k.Why))
				}
			})
		}),
	}
}

func (e *env) leaseAbandonCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "abandon",
		Usage:     "remove a lease with proof: its holder dead or its worktree gone, and nothing of it running",
		ArgsUsage: "PATH",
		Flags: []ucli.Flag{clikit.JSONFlag, &ucli.StringFlag{Name: "reason", Usage: "why (kept in the event)"},
			&ucli.BoolFlag{Name: "operator", Usage: "you decide for a lease that is not yours"}, clientIDFlag, sessionIDFlag, leaseIDFlag, expectGenFlag},
		Action: e.Action("lease abandon", 1, func(c *ucli.Context) error {
			path, caller, r, err := e.leaseTarget(c, "lease abandon", "reason")
			if err != nil {
				return err
			}
			expect, err := expectOf(c)
			if err != nil {
				return err
			}
			if !c.Bool("operator") {
				// Taking over another's task needs proof that nobody
				// reviews its work (the operator decides past it).
				if err := maint.RefuseOpenPRAt(c.Context, r, path, "lease abandon would end the lease of "+path); err != nil {
					return err
				}
			}
			res, err := lease.Abandon(r, path, c.String("reason"), c.Bool("operator"), caller, expect)
			if err != nil {
				return err
			}
			return e.ended(decision.WriterLeaseAbandoned, "abandoned", res)
		}),
	}
}

func (e *env) leaseAdoptCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "adopt",
		Usage:     "hand a dead holder's lease to a live process (default: the one that runs wt-admin), with provenance",
		ArgsUsage: "PATH",
		Flags: []ucli.Flag{clikit.JSONFlag, &ucli.StringFlag{Name: "client-id", Usage: "the new holder's client id"}, sessionIDFlag,
			&ucli.StringFlag{Name: "holder", Usage: "the new holder: PID or ancestor:NAME (default: wt-admin's parent process)"},
			&ucli.StringFlag{Name: "reason", Usage: "why (kept in the event)"}, leaseIDFlag, expectGenFlag, expectHead},
		Action: e.Action("lease adopt", 1, func(c *ucli.Context) error {
			path, err := pathArg(c, "lease adopt", "client-id")
			if err != nil {
				return err
			}
			expect, err := expectOf(c)
			if err != nil {
				return err
			}
			sel := c.String("holder")
			switch sel {
			case "self":
				return clikit.UsageErr("holder-self")
			case "":
				sel = strconv.Itoa(os.Getppid())
			}
			holder, err := proc.ResolveAdopter(sel, proc.Names{ClientID: c.String("client-id"), SessionID: optString(c, "session-id")})
			if err != nil {
				return err
			}
			r, err := e.open(c)
			if err != nil {
				return err
			}
			res, err := lease.Adopt(r, path, holder, c.String("reason"), expect)
			if err != nil {
				return err
			}
			return e.ended(decision.WriterLeaseAdopted, "adopted", res)
		}),
	}
}

func (e *env) leaseHandoffCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "handoff",
		Usage:     "reserve the worktree's next grant for a client: run by the live holder (or a process it started), or an operator with --operator",
		ArgsUsage: "PATH",
		Flags: []ucli.Flag{clikit.JSONFlag, &ucli.StringFlag{Name: "to-client", Usage: "the client `ID` the next grant is for (its wt-exec --client-id)"},
			&ucli.DurationFlag{Name: "ttl", Usage: "how long the reservation waits to be used (default " + lease.DefaultHandoffTTL.String() + ")"},
			&ucli.BoolFlag{Name: "operator", Usage: "you decide, not the holder (also for a worktree nobody holds)"}, leaseIDFlag, expectGenFlag},
		Action: e.Action("lease handoff", 1, func(c *ucli.Context) error {
			path, expect, r, err := e.expectTarget(c, "lease handoff", "to-client")
			if err != nil {
				return err
			}
			h, err := lease.Handoff(r, path, c.String("to-client"), c.Duration("ttl"), c.Bool("operator"), expect)
			if err != nil {
				return err
			}
			reason := fmt.Sprintf("the next grant of %s is reserved for client %s until %s", h.WorktreePath, h.ToClient, h.ExpiresAt)
			next := fmt.Sprintf("wt-exec -C %s --client-id %s -- COMMAND", shell.Word(h.WorktreePath), shell.Word(h.ToClient))
			return e.Success(decision.HandoffReserved, reason, h, nil, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, decision.HandoffReserved, clikit.Clean(reason))
				fmt.Fprintf(w, "next: %s\n", clikit.Clean(next))
			})
		}),
	}
}

func (e *env) leaseTransferCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "transfer",
		Usage:     "from inside the lease, make a live descendant of its holder the holder (it may go on committing after the holder exits)",
		ArgsUsage: "PATH",
		Flags: []ucli.Flag{clikit.JSONFlag, &ucli.IntFlag{Name: "holder", Usage: "the new holder's `PID`: a live descendant of the current holder"},
			&ucli.StringFlag{Name: "reason", Usage: "why (kept in the event)"}, leaseIDFlag, expectGenFlag},
		Action: e.Action("lease transfer", 1, func(c *ucli.Context) error {
			path, expect, r, err := e.expectTarget(c, "lease transfer", "holder")
			if err != nil {
				return err
			}
			res, err := lease.Transfer(r, path, c.Int("holder"), c.String("reason"), expect)
			if err != nil {
				return err
			}
			l := res.Transferred
			reason := fmt.Sprintf("lease %s of %s (task %s) is held by pid %d now, not pid %d; generation %d", l.LeaseID, res.Path, res.TaskKey, l.Holder.PID, res.Lease.Holder.PID, l.Generation)
			return e.Success(decision.WriterLeaseTransferred, reason, res, nil, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %s: %s\n", e.Bin, decision.WriterLeaseTransferred, clikit.Clean(reason))
			})
		}),
	}
}
