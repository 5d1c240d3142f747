// Package cli holds the urfave/cli applications of wt-admin and wt-exec,
// one file per command (wt-hook's is cmd/internal/hookcli; what they share
// is cmd/internal/clikit). Actions are a few lines that call into core/,
// wrapper/, hooks/ or install/ and render the result.
package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/core/alloc"
	"github.com/wt-tool/wt/core/broker"
	"github.com/wt-tool/wt/core/store"
)

// Admin runs wt-admin with args and returns its exit code.
func Admin(args []string, stdout, stderr io.Writer) int {
	if code, ok := brokered(args, stdout, stderr); ok {
		return code
	}
	return clikit.Run("wt-admin", AdminApp, args, stdout, stderr)
}

// brokered passes wt-admin lease handoff, lease transfer and ready, run
// inside a confined command, to the wt-exec that runs it (wrapper/broker.go): the
// command's view of the store is its own. ok is false for every other
// command, or outside confinement.
func brokered(args []string, stdout, stderr io.Writer) (int, bool) {
	sock := os.Getenv(store.BrokerEnv)
	if os.Getenv(store.ConfinedEnv) == "" || sock == "" || len(args) < 2 || !(args[0] == "ready" || args[0] == "lease" && (args[1] == "handoff" || args[1] == "transfer")) {
		return 0, false
	}
	dir, _ := os.Getwd()
	conn, err := net.Dial("unix", sock)
	if err != nil {
		hint := map[string]string{"handoff": "wt-admin lease handoff PATH --to-client CLIENT", "transfer": "wt-admin lease transfer PATH --holder PID --reason WHY"}[args[1]]
		if args[0] == "ready" {
			hint = "wt-admin ready TASK --owner OWNER"
		}
		fmt.Fprintf(stderr, "wt-admin: refused: STORE_NOT_WRITABLE: the wt-exec running this confined command cannot be reached at %s: %v\nwt-admin: hint: run it outside the run: %s\n", sock, err, hint)
		return 1, true
	}
	defer conn.Close()
	if err := json.NewEncoder(conn).Encode(broker.Request{Args: args, Dir: dir}); err != nil {
		fmt.Fprintf(stderr, "wt-admin: refused: STORE_NOT_WRITABLE: %v\n", err)
		return 1, true
	}
	var reply broker.Reply
	if err := json.NewDecoder(conn).Decode(&reply); err != nil {
		fmt.Fprintf(stderr, "wt-admin: refused: STORE_NOT_WRITABLE: no answer from wt-exec: %v\n", err)
		return 1, true
	}
	io.WriteString(stdout, reply.Stdout)
	io.WriteString(stderr, reply.Stderr)
	return reply.Code, true
}

// env is a run of wt-admin or wt-exec: the shared one, with their own
// methods.
type env struct{ *clikit.Env }

// AdminApp is wt-admin's command line (for man pages and completions too).
func AdminApp(k *clikit.Env) *ucli.App { return adminApp(&env{k}) }

func adminApp(e *env) *ucli.App {
	return &ucli.App{
		Usage: "set repositories up, allocate governed worktrees, and show who may write where",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "repo", Aliases: []string{"C"}, Value: ".", Usage: "a directory inside the repository (-C as with git, wt-exec and wt-hook)"},
			clikit.JSONFlag,
		},
		Commands: []*ucli.Command{
			e.initCommand(), e.policyCommand(), e.allocateCommand(), e.statusCommand(), e.psCommand(), e.leaseCommand(),
			e.retainCommand(), e.resumeCommand(), e.recoverCommand(), e.backfillCommand(), e.adoptCommand(), e.pruneCommand(), e.finishCommand(), e.readyCommand(), e.landCommand(), e.whyCommand(), e.auditCommand(), e.fleetCommand(), e.doctorCommand(), e.quarantineCommand(), e.versionCommand(),
		},
	}
}

// open opens the governed repository named by --repo.
func (e *env) open(c *ucli.Context) (*alloc.Repo, error) {
	return alloc.Open(c.Context, repoDir(c))
}

func repoDir(c *ucli.Context) string {
	for _, l := range c.Lineage() {
		if l.IsSet("repo") {
			return l.String("repo")
		}
	}
	return "."
}

func optString(c *ucli.Context, name string) *string {
	if !c.IsSet(name) {
		return nil
	}
	v := c.String(name)
	return &v
}

func optInt(c *ucli.Context, name string) *int {
	if !c.IsSet(name) {
		return nil
	}
	v := c.Int(name)
	return &v
}
