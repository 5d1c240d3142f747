package hookcli

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	ucli "github.com/urfave/cli/v2"

	"github.com/wt-tool/wt/cmd/internal/clikit"
	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/hooks"
	"github.com/wt-tool/wt/install"
)

var serverFlag = &ucli.BoolFlag{Name: "server", Usage: "the fence of a remote repository (run inside it): a pre-receive hook that checks each task branch push's fencing token in etcd"}

// serverResult is what install/uninstall/status --server show.
type serverResult struct {
	install.Result
	GitDir string             `json:"git_dir"`
	Fence  *hooks.ServerFence `json:"fence"`
	// GitoliteConf are the lines gitolite's conf needs for a repository
	// whose hooks it runs as repo-specific ones (install.Gitolite).
	GitoliteConf []string `json:"gitolite_conf,omitempty"`
}

// serverRepo finds the repository (bare or not) that holds the current
// directory: its git dir and the hooks dir git uses there.
func serverRepo(ctx context.Context) (gitDir, hooksDir string, err error) {
	return serverRepoAt(ctx, "")
}

// serverRepoAt is serverRepo for the repository at dir ("" for the
// current directory).
func serverRepoAt(ctx context.Context, dir string) (gitDir, hooksDir string, err error) {
	cmd := exec.CommandContext(ctx, "git", "rev-parse", "--absolute-git-dir", "--git-path", "hooks")
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); strings.Contains(msg, "dubious ownership") {
			// Not "not a repository": git refuses a repository another
			// user owns. Its own words say which and how; the fix that
			// keeps git's protection is to act as that user.
			wd, _ := os.Getwd()
			return "", "", decision.Say(decision.GitFailed, "git-refuses", msg).
				WithHint("run it as the repository's owner, who runs the hooks: sudo -u %s wt-hook -C %s install --server", ownerName(wd), shell.Quote(wd))
		}
		return "", "", decision.SayWrap(decision.NotAGitRepository, err, "this-directory").
			WithHint("run wt-hook install --server inside the remote repository (e.g. cd /srv/git/app.git)")
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return "", "", decision.Say(decision.GitFailed, "git-rev", out)
	}
	gitDir, hooksDir = lines[0], lines[1]
	if !filepath.IsAbs(hooksDir) {
		// git answers relative to the directory it ran in.
		wd := dir
		if wd == "" {
			if wd, err = os.Getwd(); err != nil {
				return "", "", decision.SayWrap(decision.Internal, err, "find-current")
			}
		}
		hooksDir = filepath.Join(wd, hooksDir)
	}
	return gitDir, hooksDir, nil
}

// readFence reads the fence configured in the repository at gitDir.
func readFence(ctx context.Context, gitDir string) (hooks.ServerFence, bool) {
	// core.sharedRepository comes in the same call: the local fence's
	// file modes follow it, and a push pays for one git start, not two.
	out, _ := exec.CommandContext(ctx, "git", "--git-dir", gitDir, "config", "--get-regexp", `^(wt\.fence\.|core\.sharedrepository$)`).Output() // none configured: git exits 1
	f, ok := hooks.ParseServerFence(string(out))
	if ok && f.KeySpace == "" {
		// A repository fenced through --server-root's template: its key
		// space is what install would have given it.
		abs, err := filepath.Abs(gitDir)
		if err != nil {
			return f, false
		}
		f.KeySpace = keySpaceUnder(f, abs, os.Getenv)
	}
	return f, ok && f.KeySpace != ""
}

// keySpaceUnder is the key space of the repository at gitDir under fence
// f: in local mode its own path (what clients on this machine compute);
// in fleet mode f.URLBase followed by the repository's name (the URL
// clients use), "" when there is no name or no f.URLBase. The name is the
// forge's own where the hook's environment gives it (forgeRepoName:
// gitolite's GL_REPO, Gitea's and Forgejo's owner/name), else gitDir's
// path under f.Root.
func keySpaceUnder(f hooks.ServerFence, gitDir string, getenv func(string) string) string {
	if f.Local {
		return fleet.RemoteIDIn(gitDir, "")
	}
	if f.URLBase == "" {
		return ""
	}
	name := forgeRepoName(getenv)
	if name == "" {
		if f.Root == "" {
			return ""
		}
		rel, err := filepath.Rel(f.Root, gitDir)
		if err != nil || strings.HasPrefix(rel, "..") {
			return ""
		}
		name = filepath.ToSlash(rel)
	}
	url := f.URLBase
	if !strings.HasSuffix(url, "/") && !strings.HasSuffix(url, ":") {
		url += "/"
	}
	return fleet.Spelling{CaseSensitive: f.CaseSensitive}.RemoteIDIn(url+name, "")
}

// forgeRepoName is the repository's name as the forge running this hook
// knows it, from the environment the forge gives its hooks: gitolite's
// GL_REPO ("team/app"), Gitea's and Forgejo's GITEA_REPO_USER_NAME and
// GITEA_REPO_NAME ("team/app"); "" under any other server. It is the name
// clients put after the forge's URL, which a repository id (Gitea's
// GITEA_REPO_ID) is not: a key space must be one both sides compute.
func forgeRepoName(getenv func(string) string) string {
	if r := getenv("GL_REPO"); r != "" {
		return r
	}
	owner, name := getenv("GITEA_REPO_USER_NAME"), getenv("GITEA_REPO_NAME")
	if owner != "" && name != "" {
		return owner + "/" + name
	}
	return ""
}

func gitConfig(ctx context.Context, gitDir string, args ...string) error {
	return gitConfigAt(ctx, []string{"--git-dir", gitDir}, args...)
}

// gitConfigAt runs git config with where (--git-dir DIR, or with --file
// FILE after config) before its arguments.
func gitConfigAt(ctx context.Context, where []string, args ...string) error {
	var argv []string
	if len(where) == 2 && where[0] == "--file" {
		argv = append([]string{"config", "--file", where[1]}, args...)
	} else {
		argv = append(append(append([]string{}, where...), "config"), args...)
	}
	out, err := exec.CommandContext(ctx, "git", argv...).CombinedOutput()
	if err != nil {
		return decision.SayWrap(decision.GitFailed, err, "git-config", strings.Join(args, " "), strings.TrimSpace(string(out)))
	}
	return nil
}

// configureFence writes fence f into the git config at where (a
// repository's, or a template's file): push options advertised, and the
// wt.fence keys (an empty etcd credential or key space is left out).
func configureFence(ctx context.Context, where []string, f hooks.ServerFence) error {
	for _, kv := range [][2]string{{"receive.advertisePushOptions", "true"}, {hooks.FenceEndpointsKey, strings.Join(f.Endpoints, ",")},
		{hooks.FenceKeySpaceKey, f.KeySpace}, {hooks.FencePrefixKey, f.BranchPrefix}, {hooks.FenceLocalKey, strconv.FormatBool(f.Local)},
		{hooks.FenceURLBaseKey, f.URLBase}, {hooks.FenceRootKey, f.Root}, {hooks.FenceCaseKey, strconv.FormatBool(f.CaseSensitive)},
		{hooks.FenceCertKey, f.Auth.Cert}, {hooks.FenceKeyKey, f.Auth.Key}, {hooks.FenceCACertKey, f.Auth.CACert},
		{hooks.FenceUserKey, f.Auth.User}, {hooks.FencePasswordFileKey, f.Auth.PasswordFile}} {
		if kv[1] == "" && kv[0] != hooks.FenceEndpointsKey {
			gitConfigAt(ctx, where, "--unset", kv[0]) // none given: none kept (git exits 5 when there was none)
			continue
		}
		if err := gitConfigAt(ctx, where, kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// serverHooks is install, uninstall and status with --server.
func (e *env) serverHooks(c *ucli.Context, name, code, reason string) error {
	ctx := c.Context
	if name == "install" && c.IsSet("server-root") {
		return e.serverRoot(c, c.String("server-root"), code)
	}
	gitDir, hooksDir, err := serverRepo(ctx)
	if err != nil {
		return err
	}
	var res install.Result
	var glConf []string
	// Where gitolite manages the hooks (by says how), its repo-specific
	// hooks are where wt's go, when the rc enables them (glOK).
	by := gitoliteManaged(hooksDir)
	gl, glOK := install.Gitolite{}, false
	if by != "" {
		gl, glOK = install.GitoliteOf(hooksDir, gitoliteRC(ctx, "LOCAL_CODE"))
	}
	switch name {
	case "install":
		f, err := fenceFromFlags(c)
		if err != nil {
			return err
		}
		bin, err := hookBinary(c.String("binary"))
		if err != nil {
			return err
		}
		if err := runnableByOwner(gitDir, bin); err != nil {
			return err
		}
		if by != "" && !glOK {
			return decision.Say(decision.HookConflict, "gitolite-manages", gitDir, by).
				WithHint("install through gitolite, for every repository at once: write wt's pre-receive and post-receive into LOCAL_CODE/hooks/common (docs/forges.md, gitolite, has them and the .gitolite.rc and conf lines), then run: gitolite setup --hooks-only")
		}
		if f.KeySpace == "" {
			f.KeySpace = fleet.RemoteIDIn(gitDir, "") // its own path: what local clients compute
		}
		if err := configureFence(ctx, []string{"--git-dir", gitDir}, f); err != nil {
			return err
		}
		if glOK {
			// gitolite's repo-specific hooks: the shims go where gitolite
			// links them from, and the repository's conf lists them.
			need := install.ServerHooksFor(f.Local)
			if res, err = install.InstallRepoSpecific(gl, bin, need); err != nil {
				return err
			}
			glConf = append([]string{"repo " + gitoliteRepoName(gitDir)}, indent(gl.OptionLines(need))...)
			break
		}
		res, err = install.InstallServer(hooksDir, bin, f.Local)
		if err != nil {
			return err
		}
	case "uninstall":
		if glOK {
			// The shims serve every repository whose conf lists them:
			// this one stops running them when its conf does.
			res = install.StatusRepoSpecific(gl, hooksDir, install.ServerHooks)
			glConf = []string{"repo " + gitoliteRepoName(gitDir), "    (take " + install.RepoSpecificCode("pre-receive") + " and " + install.RepoSpecificCode("post-receive") + " out of its option hook lines)"}
		} else if res, err = install.UninstallServer(hooksDir); err != nil {
			return err
		}
		if _, ok := readFence(ctx, gitDir); ok {
			if err := gitConfig(ctx, gitDir, "--remove-section", "wt.fence"); err != nil {
				return err
			}
		}
	default:
		f, ok := readFence(ctx, gitDir)
		if glOK {
			res = install.StatusRepoSpecific(gl, hooksDir, install.ServerHooksFor(!ok || f.Local))
			break
		}
		if res, err = install.StatusServer(hooksDir, !ok || f.Local); err != nil {
			return err
		}
	}
	out := serverResult{Result: res, GitDir: gitDir, GitoliteConf: glConf}
	if f, ok := readFence(ctx, gitDir); ok {
		out.Fence = &f
	}
	return e.Success(code, reason+hooksDir+" (server fence)", out, nil, func(w io.Writer) {
		printHooks(w, e.Bin, res)
		if len(out.GitoliteConf) > 0 {
			fmt.Fprintf(w, "gitolite runs its repo-specific hooks from %s; in gitolite-admin's conf/gitolite.conf, then push it:\n", res.HooksDir)
			for _, l := range out.GitoliteConf {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
		if out.Fence == nil {
			fmt.Fprintf(w, "fence: not configured in %s\n", gitDir)
			return
		}
		f := out.Fence
		if f.Local {
			fmt.Fprintf(w, "fence: task branches refs/heads/%s<task>; local mode: the newest grant's token is accepted, recorded in %s\n", f.BranchPrefix, filepath.Join(gitDir, "wt-fence"))
			return
		}
		fmt.Fprintf(w, "fence: task branches refs/heads/%s<task>; tokens checked against etcd at %s under %s%s\n", f.BranchPrefix, strings.Join(f.Endpoints, ","), fleet.Prefix(f.KeySpace), prefixed("; ", fleet.DescribeAuth(f.Auth)))
	})
}

// fenceFromFlags is install --server's configuration.
func fenceFromFlags(c *ucli.Context) (hooks.ServerFence, error) {
	f := hooks.ServerFence{BranchPrefix: c.String("branch-prefix")}
	for _, e := range strings.Split(c.String("etcd-endpoints"), ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		if err := store.ValidEtcdEndpoint(e); err != nil {
			return f, clikit.UsageErr("etcd-endpoints", err)
		}
		f.Endpoints = append(f.Endpoints, e)
	}
	// Without etcd the fence is local: the remote orders the grants itself.
	f.Local = len(f.Endpoints) == 0
	f.Auth = store.EtcdAuth{Cert: c.String("etcd-cert"), Key: c.String("etcd-key"), CACert: c.String("etcd-cacert"),
		User: c.String("etcd-user"), PasswordFile: c.String("etcd-password-file")}
	if err := f.Auth.Validate(); err != nil {
		return f, clikit.UsageErr("as-given-4", strings.NewReplacer("etcd_", "--etcd-", "_", "-").Replace(err.Error()))
	}
	if f.Local && !f.Auth.IsZero() {
		return f, clikit.UsageErr("etcd-cert")
	}
	if c.IsSet("server-root") {
		// Every repository under a root: each one's key space from its
		// path there (local), or from --url-base and that path (fleet).
		switch {
		case c.IsSet("remote-url") || c.IsSet("key-space"):
			return f, clikit.UsageErr("server-root")
		case !f.Local && !c.IsSet("url-base"):
			return f, clikit.UsageErr("install-server")
		}
		f.URLBase, f.CaseSensitive = c.String("url-base"), c.Bool("case-sensitive")
		return f, nil
	}
	switch {
	case c.IsSet("url-base"):
		return f, clikit.UsageErr("url-base")
	case c.IsSet("remote-url") && c.IsSet("key-space"):
		return f, clikit.UsageErr("install-server-takes")
	case !c.IsSet("remote-url") && !c.IsSet("key-space"):
		if !f.Local {
			return f, clikit.UsageErr("install-server-etcd")
		}
		return f, nil // local: the key space of the remote's own path
	case c.IsSet("remote-url"):
		cwd, _ := os.Getwd()
		sp := fleet.Spelling{CaseSensitive: c.Bool("case-sensitive"), ResolveHost: fleet.SSHResolver(c.Context, os.Getenv("GIT_SSH_COMMAND"))}
		f.KeySpace = sp.RemoteIDIn(c.String("remote-url"), cwd)
	default:
		f.KeySpace = c.String("key-space")
	}
	if strings.ContainsAny(f.KeySpace, "/ \t\n") || f.KeySpace == "" {
		return f, clikit.UsageErr("key-space", f.KeySpace)
	}
	if strings.HasPrefix(f.BranchPrefix, "refs/") || strings.ContainsAny(f.BranchPrefix, " \t\n") {
		return f, clikit.UsageErr("branch-prefix", f.BranchPrefix)
	}
	return f, nil
}

// preReceive is the fenced remote's pre-receive hook: git runs it in the
// remote repository with the pushed ref lines on stdin; its refusal reaches
// the pusher as remote: lines.
func preReceive() error {
	f, ok := readFence(context.Background(), ".")
	if !ok {
		// Installed but not configured: fail closed for task branches.
		f = hooks.ServerFence{BranchPrefix: hooks.DefaultBranchPrefix}
		return hooks.PreReceive(f, os.Stdin, hooks.PushOptions(os.Getenv), func(context.Context, string, int64, string) error {
			return decision.Say(decision.FleetUnreachable, "fence-this").
				WithHint("configure it: wt-hook install --server --etcd-endpoints URL --remote-url URL")
		})
	}
	if f.Local {
		l, err := localFence(f)
		if err != nil {
			return err
		}
		return hooks.PreReceive(f, os.Stdin, hooks.PushOptions(os.Getenv), l.Check)
	}
	check, err := hooks.FenceChecker(f)
	if err != nil {
		return err
	}
	return hooks.PreReceive(f, os.Stdin, hooks.PushOptions(os.Getenv), check)
}

// postReceive is the fenced remote's post-receive hook: in local mode it
// records the tokens of the task branches a push updated, once the push
// has landed (hooks.PostReceive). git ignores its exit status; what it
// could not record is said to the pusher, whose token then stays as
// current as it was.
func postReceive() error {
	f, ok := readFence(context.Background(), ".")
	if !ok || !f.Local {
		return nil // fleet mode: etcd is the record
	}
	l, err := localFence(f)
	if err != nil {
		return err
	}
	return hooks.PostReceive(f, os.Stdin, hooks.PushOptions(os.Getenv), l.Record)
}

// localFence is the local-mode fence f of the repository the hook runs in
// (receive-pack runs its hooks in the remote's git dir), its files as
// shared as the repository is (f.Shared, read by readFence).
func localFence(f hooks.ServerFence) (hooks.LocalFence, error) {
	gitDir, err := filepath.Abs(".")
	if err != nil {
		return hooks.LocalFence{}, decision.SayWrap(decision.Internal, err, "find-repository")
	}
	dir, file := hooks.SharedModes(f.Shared)
	return hooks.LocalFence{GitDir: gitDir, DirMode: dir, FileMode: file}, nil
}

// ownerName is the name of the user who owns path (its uid when the name
// is unknown, "OWNER" when path cannot be read).
func ownerName(path string) string {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return "OWNER"
	}
	if u, err := user.LookupId(strconv.Itoa(int(st.Uid))); err == nil {
		return u.Username
	}
	return "#" + strconv.Itoa(int(st.Uid))
}

// runnableByOwner refuses to record bin when the user who owns the
// repository at gitDir, who runs its hooks, could not run it: installed as
// root from a home directory, the shim would refuse every push, main too.
// Judged from the mode bits of bin and each directory above it.
func runnableByOwner(gitDir, bin string) error {
	var st unix.Stat_t
	if err := unix.Stat(gitDir, &st); err != nil || int(st.Uid) == os.Getuid() || st.Uid == 0 {
		return nil // the installing user runs them, or root does
	}
	uid := st.Uid
	gids := map[uint32]bool{st.Gid: true}
	if u, err := user.LookupId(strconv.Itoa(int(uid))); err == nil {
		if g, err := strconv.Atoi(u.Gid); err == nil {
			gids[uint32(g)] = true
		}
		if list, err := u.GroupIds(); err == nil {
			for _, s := range list {
				if g, err := strconv.Atoi(s); err == nil {
					gids[uint32(g)] = true
				}
			}
		}
	}
	may := func(p string, want uint32) bool {
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil {
			return false
		}
		switch {
		case st.Uid == uid:
			return st.Mode>>6&want == want
		case gids[st.Gid]:
			return st.Mode>>3&want == want
		}
		return st.Mode&want == want
	}
	ok := may(bin, 5) // read and execute: the shim runs it
	for d := filepath.Dir(bin); ok && d != "/"; d = filepath.Dir(d) {
		ok = may(d, 1)
	}
	if ok {
		return nil
	}
	owner := ownerName(gitDir)
	return decision.Say(decision.HookBinaryMissing, "owns-this", owner, bin).
		WithHint("install wt where %s can run it (make install puts it in /usr/local/bin), then: wt-hook install --server --binary /usr/local/bin/wt-hook", owner)
}

// noEnv is an empty environment: install names repositories by their
// paths, as no forge runs it.
func noEnv(string) string { return "" }

// rootResult is what install --server --server-root did.
type rootResult struct {
	Root         string         `json:"root"`
	Repositories []serverResult `json:"repositories"`
	// Template is the git template directory that fences repositories
	// made later (init.templateDir).
	Template string `json:"template"`
}

// serverRoot is install --server --server-root DIR: every repository under
// DIR fenced as install --server in it would (the forge's dispatchers
// respected), and a git template directory, DIR/.wt-fence-template, that
// fences the repositories made later: its hooks in both places a forge may
// run them from (HOOK and HOOK.d/), its config the fence's (without a key
// space: the hook derives it, readFence). Gitea's regeneration of its hooks
// keeps HOOK.d/ (install.NameDispatcher). Using the template is the
// server's owner's step (init.templateDir in the configuration the forge's
// git reads: Gitea's own home, install.GiteaGitHome, else the git user's
// --global), which install prints rather than takes.
func (e *env) serverRoot(c *ucli.Context, root, code string) error {
	ctx := c.Context
	f, err := fenceFromFlags(c)
	if err != nil {
		return err
	}
	bin, err := hookBinary(c.String("binary"))
	if err != nil {
		return err
	}
	if root, err = filepath.Abs(root); err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return decision.SayWrap(decision.InvalidTarget, err, "server-root", c.String("server-root")).
			WithHint("name the directory that holds the forge's repositories, e.g. --server-root /var/lib/gitea/data/gitea-repositories")
	}
	f.Root = root
	repos, err := findRepos(root)
	if err != nil {
		return err
	}
	out := rootResult{Root: root, Template: filepath.Join(root, templateDirName)}
	giteaHome, gitea := "", false
	for _, dir := range repos {
		gitDir, hooksDir, err := serverRepoAt(ctx, dir)
		if err != nil {
			return err
		}
		if !gitea {
			giteaHome, gitea = install.GiteaGitHome(hooksDir)
		}
		if err := runnableByOwner(gitDir, bin); err != nil {
			return err
		}
		rf := f
		if rf.KeySpace = keySpaceUnder(f, gitDir, noEnv); rf.KeySpace == "" {
			return decision.Say(decision.Internal, "no-key", gitDir, root)
		}
		if err := configureFence(ctx, []string{"--git-dir", gitDir}, rf); err != nil {
			return err
		}
		res, err := install.InstallServer(hooksDir, bin, rf.Local)
		if err != nil {
			return err
		}
		out.Repositories = append(out.Repositories, serverResult{Result: res, GitDir: gitDir, Fence: &rf})
	}
	if err := writeFenceTemplate(ctx, out.Template, bin, f); err != nil {
		return err
	}
	return e.Success(code, fmt.Sprintf("fenced %d repositories under %s", len(out.Repositories), root), out, nil, func(w io.Writer) {
		for _, r := range out.Repositories {
			var where []string
			for _, h := range r.Hooks {
				where = append(where, h.Path)
			}
			fmt.Fprintf(w, "%s: fenced: %s\n", r.GitDir, strings.Join(where, ", "))
		}
		fmt.Fprintf(w, "%s: %d repositories fenced under %s\n", e.Bin, len(out.Repositories), root)
		fmt.Fprintf(w, "%s: for repositories made later, as the server's git user%s\n", e.Bin, templateStep(out.Template, giteaHome, gitea))
	})
}

// templateStep says how to make the git that creates the forge's
// repositories use the template: init.templateDir in the configuration
// that git reads, which under Gitea (and Forgejo) is the .gitconfig of the
// home Gitea runs git with ([git] HOME_PATH), not the git user's.
func templateStep(template, giteaHome string, gitea bool) string {
	set := " init.templateDir " + shell.Quote(template)
	switch {
	case gitea && giteaHome != "":
		return " (Gitea runs git with its own home, " + giteaHome + "): git config --file " + shell.Quote(filepath.Join(giteaHome, ".gitconfig")) + set
	case gitea:
		return " (Gitea runs git with its own home, [git] HOME_PATH in its app.ini, by default APP_DATA_PATH/home): git config --file HOME_PATH/.gitconfig" + set
	}
	return ": git config --global" + set
}

// templateDirName is the git template directory install --server-root
// writes under the root.
const templateDirName = ".wt-fence-template"

// writeFenceTemplate writes the template of a fenced repository at dir.
func writeFenceTemplate(ctx context.Context, dir, bin string, f hooks.ServerFence) error {
	hooksDir := filepath.Join(dir, "hooks")
	if _, err := install.InstallOf(hooksDir, bin, install.ServerHooksFor(f.Local)); err != nil {
		return err
	}
	for _, h := range install.ServerHooksFor(f.Local) {
		if _, err := install.InstallOf(filepath.Join(hooksDir, h+".d"), bin, []string{h}); err != nil {
			return err
		}
	}
	f.KeySpace = ""
	return configureFence(ctx, []string{"--file", filepath.Join(dir, "config")}, f)
}

// findRepos lists the bare repositories under root (a directory with HEAD,
// objects/ and refs/), not looking inside one, nor in directories whose
// name starts with a dot.
func findRepos(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if isBareRepo(p) {
			out = append(out, p)
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, decision.SayWrap(decision.InvalidTarget, err, "read-repositories", root)
	}
	return out, nil
}

func isBareRepo(dir string) bool {
	for _, name := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	return true
}

// gitoliteRC is a value of gitolite's rc file (gitolite query-rc NAME),
// "" where gitolite does not run or does not say.
func gitoliteRC(ctx context.Context, name string) string {
	if _, err := exec.LookPath("gitolite"); err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "gitolite", "query-rc", name).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// gitoliteRepoName is the name gitolite's conf gives the repository at
// gitDir: its path under gitolite's repositories directory without
// ".git".
func gitoliteRepoName(gitDir string) string {
	name := filepath.Base(gitDir)
	if _, rel, ok := strings.Cut(filepath.ToSlash(gitDir), "/repositories/"); ok {
		name = rel
	}
	return strings.TrimSuffix(name, ".git")
}

func indent(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = "    " + l
	}
	return out
}

// gitoliteManaged says how the hooks dir shows it is gitolite's ("" when
// it is not): gitolite links every repository's update hook to its own
// (~/.gitolite/hooks/common/update) and rewrites the hooks at setup.
func gitoliteManaged(hooksDir string) string {
	p := filepath.Join(hooksDir, "update")
	if target, err := os.Readlink(p); err == nil && strings.Contains(strings.ToLower(target), "gitolite") {
		return "hooks/update links to " + target
	}
	return ""
}
