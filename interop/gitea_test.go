//go:build wt_network

package interop_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// giteaServer is a real Gitea (interop/run.sh builds it from its module
// at a pinned version and names it in $WT_GITEA), on loopback, SQLite,
// with one admin user.
type giteaServer struct {
	t                testing.TB
	bin, dir, config string
	url, user, pass  string
	env              []string
	repos            string
}

const giteaUser, giteaPass = "wt-admin", "interop-Passw0rd"

func startGitea(t testing.TB, env []string) *giteaServer {
	t.Helper()
	bin := os.Getenv("WT_GITEA")
	if bin == "" {
		t.Fatal("$WT_GITEA names no gitea binary (interop/run.sh builds one)")
	}
	assets := os.Getenv("WT_GITEA_ASSETS")
	if assets == "" {
		t.Fatal("$WT_GITEA_ASSETS names no gitea assets directory (options, templates: interop/run.sh keeps them)")
	}
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	g := &giteaServer{t: t, bin: bin, dir: dir, config: filepath.Join(dir, "app.ini"), user: giteaUser, pass: giteaPass,
		url: fmt.Sprintf("http://127.0.0.1:%d", port), repos: filepath.Join(dir, "repos")}
	// Gitea refuses to run as root unless told it may (the interop
	// machines run as root).
	g.env = append(append([]string{}, env...), "GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT=true", "GITEA_WORK_DIR="+dir)
	who, _ := exec.Command("id", "-un").Output()
	ini := fmt.Sprintf(`APP_NAME = wt interop
RUN_USER = %s
WORK_PATH = %s
RUN_MODE = prod
[database]
DB_TYPE = sqlite3
PATH = %s/gitea.db
[repository]
ROOT = %s
[server]
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %d
ROOT_URL = %s/
STATIC_ROOT_PATH = %s
DISABLE_SSH = true
OFFLINE_MODE = true
LFS_START_SERVER = false
[security]
INSTALL_LOCK = true
SECRET_KEY = wt-interop-secret-key-0123456789
[service]
DISABLE_REGISTRATION = true
[log]
MODE = console
LEVEL = Warn
[indexer]
REPO_INDEXER_ENABLED = false
`, strings.TrimSpace(string(who)), dir, dir, g.repos, port, g.url, assets)
	if err := os.WriteFile(g.config, []byte(ini), 0o600); err != nil {
		t.Fatal(err)
	}
	g.cmd(true, "migrate")
	g.cmd(true, "admin", "user", "create", "--admin", "--username", g.user, "--password", g.pass, "--email", "wt@interop.invalid", "--must-change-password=false")
	web := exec.Command(bin, "web", "-c", g.config)
	web.Env = append(os.Environ(), g.env...)
	web.Dir = dir
	logf, _ := os.Create(filepath.Join(dir, "web.log"))
	web.Stdout, web.Stderr = logf, logf
	if err := web.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Process.Kill(); web.Wait(); logf.Close() })
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(g.url + "/api/v1/version"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "web.log"))
			t.Fatalf("gitea did not serve in two minutes:\n%s", b)
		}
	}
	return g
}

// cmd runs a gitea subcommand against the server's configuration.
func (g *giteaServer) cmd(wantOK bool, args ...string) string {
	g.t.Helper()
	c := exec.Command(g.bin, append(args, "-c", g.config)...)
	c.Env = append(os.Environ(), g.env...)
	c.Dir = g.dir
	out, err := c.CombinedOutput()
	if (err == nil) != wantOK {
		g.t.Fatalf("gitea %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// api calls Gitea's REST API as the admin user.
func (g *giteaServer) api(method, path string, body any) (int, string) {
	g.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, g.url+"/api/v1"+path, rd)
	if err != nil {
		g.t.Fatal(err)
	}
	req.SetBasicAuth(g.user, g.pass)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// cloneURL is repo's HTTP URL with the admin's credentials.
func (g *giteaServer) cloneURL(repo string) string {
	return strings.Replace(g.url, "http://", "http://"+g.user+":"+g.pass+"@", 1) + "/" + g.user + "/" + repo + ".git"
}

// wtTools builds wt's binaries for a test of the fence on Gitea and returns
// the environment its commands run in (those binaries first on PATH, a
// home of its own, no inherited lease) and a runner that fails the test
// when a command's success is not as wanted.
func wtTools(tb testing.TB) ([]string, func(dir string, wantOK bool, name string, args ...string) string) {
	tb.Helper()
	top := tb.TempDir()
	bin := filepath.Join(top, "bin")
	sh := newRunner(tb)
	buildWT(sh, bin)
	return clientEnv(bin, top), clientRunner(tb, sh, bin, top)
}

// TestGiteaFence runs wt's fence on a real Gitea over HTTP: wt-hook
// install --server in the repository Gitea made goes beside Gitea's own
// hooks (pre-receive.d/); Gitea's branch protection still refuses a push
// to main; a task branch push without the token is refused by the fence;
// the holder's push, its nested wt-exec's and a confined agent's land;
// after gitea admin
// regenerate hooks the fence is still there and still refuses.
func TestGiteaFence(t *testing.T) {
	env, run := wtTools(t)
	top := t.TempDir()
	g := startGitea(t, env)
	if code, body := g.api("POST", "/user/repos", map[string]any{"name": "app", "default_branch": "main"}); code != 201 {
		t.Fatalf("create repository: %d %s", code, body)
	}
	bare := filepath.Join(g.repos, g.user, "app.git")
	if _, err := os.Stat(filepath.Join(bare, "hooks", "pre-receive.d", "gitea")); err != nil {
		t.Fatalf("Gitea made no pre-receive.d/gitea in %s: %v", bare, err)
	}
	gitea := func(h string) string { b, _ := os.ReadFile(filepath.Join(bare, "hooks", h)); return string(b) }
	dispatcher := gitea("pre-receive")

	repo := filepath.Join(top, "repo")
	run(top, true, "git", "init", "-q", "-b", "main", repo)
	run(repo, true, "git", "commit", "-q", "--allow-empty", "-m", "init")
	run(repo, true, "git", "remote", "add", "origin", g.cloneURL("app"))
	run(repo, true, "git", "push", "-q", "origin", "main")
	if code, body := g.api("POST", "/repos/"+g.user+"/app/branch_protections", map[string]any{"rule_name": "main", "branch_name": "main", "enable_push": false}); code != 201 {
		t.Fatalf("protect main: %d %s", code, body)
	}
	out := run(bare, true, "wt-hook", "install", "--server")
	if !strings.Contains(out, "pre-receive.d") || gitea("pre-receive") != dispatcher {
		t.Fatalf("install --server did not go beside Gitea's dispatcher:\n%s", out)
	}
	run(repo, true, "wt-admin", "init")
	run(repo, true, "wt-admin", "policy", "--fleet-server-fence", "on")
	w := filepath.Join(top, "w1")
	run(repo, true, "wt-admin", "allocate", "--task", "T-1", "--owner", "alice", w)

	// Gitea's protection holds.
	run(repo, true, "git", "-c", "core.hooksPath=/dev/null", "commit", "-q", "--allow-empty", "-m", "onto main")
	if out := run(repo, false, "git", "-c", "core.hooksPath=/dev/null", "push", "origin", "main"); !strings.Contains(strings.ToLower(out), "protected") {
		t.Fatalf("a push to the protected main was not refused by Gitea:\n%s", out)
	}
	// The fence holds.
	run(w, true, "git", "-c", "core.hooksPath=/dev/null", "commit", "-q", "--allow-empty", "-m", "rogue")
	if out := run(w, false, "git", "-c", "core.hooksPath=/dev/null", "push", "origin", "HEAD:refs/heads/wt/T-1"); !strings.Contains(out, "FLEET_FENCED") {
		t.Fatalf("a task branch push without the token:\n%s", out)
	}
	// The holder's push, and its nested wt-exec's, land.
	run(w, true, "wt-exec", "--", "sh", "-c", "git commit -q --allow-empty -m held && git push -q origin HEAD:refs/heads/wt/T-1")
	run(w, true, "wt-exec", "--", "wt-exec", "--", "sh", "-c", "git commit -q --allow-empty -m nested && git push -q origin HEAD:refs/heads/wt/T-1")
	if code, body := g.api("GET", "/repos/"+g.user+"/app/branches/wt%2FT-1", nil); code != 200 || !strings.Contains(body, "nested") {
		t.Fatalf("Gitea does not show wt/T-1 at the nested run's commit: %d %s", code, body)
	}
	// And a confined agent's (its private view, its own TMPDIR).
	run(w, true, "wt-exec", "--confine", "--", "sh", "-c", "git commit -q --allow-empty -m confined && git push -q origin HEAD:refs/heads/wt/T-1")
	if code, body := g.api("GET", "/repos/"+g.user+"/app/branches/wt%2FT-1", nil); code != 200 || !strings.Contains(body, "confined") {
		t.Fatalf("Gitea does not show wt/T-1 at the confined run's commit: %d %s", code, body)
	}
	// Gitea's API writes do not pass the fence (docs/forges.md); the
	// workaround, Gitea's own protection on wt/*, refuses deleting a task
	// branch through the API, while the holder's pushes still land.
	if code, body := g.api("POST", "/repos/"+g.user+"/app/branch_protections", map[string]any{"rule_name": "wt/*", "enable_push": true}); code != 201 {
		t.Fatalf("protect wt/*: %d %s", code, body)
	}
	if code, body := g.api("DELETE", "/repos/"+g.user+"/app/branches/wt%2FT-1", nil); code < 400 {
		t.Fatalf("Gitea's API deleted the protected wt/T-1: %d %s", code, body)
	}
	run(w, true, "wt-exec", "--", "sh", "-c", "git commit -q --allow-empty -m protected && git push -q origin HEAD:refs/heads/wt/T-1")
	if code, body := g.api("GET", "/repos/"+g.user+"/app/branches/wt%2FT-1", nil); code != 200 || !strings.Contains(body, "protected") {
		t.Fatalf("with wt/* protected, the holder's push did not land: %d %s", code, body)
	}
	// Gitea rewrites its hooks: wt's stay, and still refuse.
	g.cmd(true, "admin", "regenerate", "hooks")
	if st := run(bare, true, "wt-hook", "status", "--server"); !strings.Contains(st, "pre-receive.d") || strings.Contains(st, "foreign") {
		t.Fatalf("after gitea admin regenerate hooks:\n%s", st)
	}
	run(w, true, "git", "-c", "core.hooksPath=/dev/null", "commit", "-q", "--allow-empty", "-m", "rogue again")
	if out := run(w, false, "git", "-c", "core.hooksPath=/dev/null", "push", "origin", "HEAD:refs/heads/wt/T-1"); !strings.Contains(out, "FLEET_FENCED") {
		t.Fatalf("after regenerate hooks, a push without the token:\n%s", out)
	}
}

// TestGiteaOpenPullRequest: with policy --forge gitea, finish that would
// archive a task's work, and lease abandon of another's lease, refuse
// while the task's branch has an open pull request on the real Gitea
// (OPEN_PULL_REQUEST, naming it); once it is closed, finish goes on, and
// deletes the branch on Gitea too. A token Gitea refuses is never taken
// for "nothing open" (FORGE_UNREACHABLE).
func TestGiteaOpenPullRequest(t *testing.T) {
	env, run := wtTools(t)
	top := t.TempDir()
	g := startGitea(t, env)
	if code, body := g.api("POST", "/user/repos", map[string]any{"name": "app", "default_branch": "main"}); code != 201 {
		t.Fatalf("create repository: %d %s", code, body)
	}
	code, body := g.api("POST", "/users/"+g.user+"/tokens", map[string]any{"name": "wt", "scopes": []string{"read:repository"}})
	var tok struct {
		Sha1 string `json:"sha1"`
	}
	if code != 201 || json.Unmarshal([]byte(body), &tok) != nil || tok.Sha1 == "" {
		t.Fatalf("make a token: %d %s", code, body)
	}
	tokenFile := filepath.Join(top, "gitea-token")
	os.WriteFile(tokenFile, []byte(tok.Sha1+"\n"), 0o600)

	repo := filepath.Join(top, "repo")
	run(top, true, "git", "init", "-q", "-b", "main", repo)
	run(repo, true, "git", "commit", "-q", "--allow-empty", "-m", "init")
	run(repo, true, "git", "remote", "add", "origin", g.cloneURL("app"))
	run(repo, true, "git", "push", "-q", "origin", "main")
	run(repo, true, "wt-admin", "init")
	run(repo, true, "wt-admin", "policy", "--forge", "gitea", "--forge-token-file", tokenFile)
	w := filepath.Join(top, "w1")
	run(repo, true, "wt-admin", "allocate", "--task", "T-1", "--owner", "alice", w)
	run(w, true, "wt-exec", "--", "sh", "-c", "echo 1 > one && git add one && git commit -qm one && git push -q origin HEAD:refs/heads/wt/T-1")
	// Gitea takes a pushed branch into its database in the background.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if code, _ := g.api("GET", "/repos/"+g.user+"/app/branches/wt%2FT-1", nil); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Gitea does not show the pushed wt/T-1 after a minute")
		}
	}
	code, body = g.api("POST", "/repos/"+g.user+"/app/pulls", map[string]any{"head": "wt/T-1", "base": "main", "title": "task T-1"})
	var pr struct {
		Number  int    `json:"number"`
		HTMLURL string `json:"html_url"`
	}
	if code != 201 || json.Unmarshal([]byte(body), &pr) != nil || pr.Number == 0 {
		t.Fatalf("open a pull request: %d %s", code, body)
	}

	out := run(repo, false, "wt-admin", "finish", "--task", "T-1", "--owner", "alice", "--archive")
	if !strings.Contains(out, "OPEN_PULL_REQUEST: finish would archive task T-1's work and delete its branch: branch wt/T-1 has an open pull request on the forge: #"+fmt.Sprint(pr.Number)+" "+pr.HTMLURL) {
		t.Fatalf("finish --archive with a pull request open:\n%s", out)
	}
	// A token Gitea refuses: not taken for "nothing open".
	os.WriteFile(tokenFile, []byte("not-a-token\n"), 0o600)
	if out := run(repo, false, "wt-admin", "finish", "--task", "T-1", "--owner", "alice", "--archive"); !strings.Contains(out, "FORGE_UNREACHABLE") {
		t.Fatalf("finish with a refused token:\n%s", out)
	}
	os.WriteFile(tokenFile, []byte(tok.Sha1+"\n"), 0o600)
	// A lease left by a dead holder of another client: its abandon, not
	// the operator's, needs the proof too.
	run(w, false, "wt-exec", "--client-id", "agent-1", "--", "sh", "-c", "kill -9 $PPID")
	out = run(repo, false, "wt-admin", "lease", "abandon", w, "--client-id", "someone-else", "--reason", "its agent is gone")
	if !strings.Contains(out, "OPEN_PULL_REQUEST: lease abandon would end the lease of") {
		t.Fatalf("lease abandon with a pull request open:\n%s", out)
	}

	if code, body := g.api("PATCH", fmt.Sprintf("/repos/%s/app/pulls/%d", g.user, pr.Number), map[string]any{"state": "closed"}); code != 201 {
		t.Fatalf("close the pull request: %d %s", code, body)
	}
	if out := run(repo, false, "wt-admin", "lease", "abandon", w, "--client-id", "someone-else", "--reason", "its agent is gone"); strings.Contains(out, "OPEN_PULL_REQUEST") {
		t.Fatalf("lease abandon after the pull request was closed:\n%s", out)
	}
	run(repo, true, "wt-admin", "lease", "abandon", w, "--operator", "--reason", "its agent was killed")
	out = run(repo, true, "wt-admin", "finish", "--task", "T-1", "--owner", "alice", "--archive")
	plan := ""
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "plan_id "); ok {
			plan = v
		}
	}
	out = run(repo, true, "wt-admin", "finish", "--task", "T-1", "--owner", "alice", "--apply", plan)
	if !strings.Contains(out, "remote origin: deleted: deleted wt/T-1 on origin") {
		t.Fatalf("finish did not delete wt/T-1 on Gitea:\n%s", out)
	}
	if code, body := g.api("GET", "/repos/"+g.user+"/app/branches/wt%2FT-1", nil); code != 404 {
		t.Fatalf("Gitea still has wt/T-1: %d %s", code, body)
	}
}

// TestGiteaServerRoot: wt-hook install --server --server-root on Gitea's
// repository root fences the repositories Gitea has, and, with the
// template it writes set as init.templateDir in the git configuration
// Gitea's git reads (its own HOME), the repositories Gitea creates later:
// Gitea rewrites its hooks in the new repository and leaves wt's in
// pre-receive.d/, whose configuration came from the template.
func TestGiteaServerRoot(t *testing.T) {
	env, run := wtTools(t)
	top := t.TempDir()
	g := startGitea(t, env)
	if code, body := g.api("POST", "/user/repos", map[string]any{"name": "old", "default_branch": "main"}); code != 201 {
		t.Fatalf("create old: %d %s", code, body)
	}
	out := run(top, true, "wt-hook", "install", "--server", "--server-root", g.repos)
	if !strings.Contains(out, "1 repositories fenced") {
		t.Fatalf("install --server --server-root:\n%s", out)
	}
	tpl := filepath.Join(g.repos, ".wt-fence-template")
	// install found Gitea, and names the configuration Gitea's git reads.
	home := filepath.Join(g.dir, "data", "home")
	if !strings.Contains(out, "git config --file '"+filepath.Join(home, ".gitconfig")+"' init.templateDir") {
		t.Fatalf("install --server --server-root does not name Gitea's git home %s:\n%s", home, out)
	}
	run(top, true, "git", "config", "--file", filepath.Join(home, ".gitconfig"), "init.templateDir", tpl)
	if code, body := g.api("POST", "/user/repos", map[string]any{"name": "new", "default_branch": "main"}); code != 201 {
		t.Fatalf("create new: %d %s", code, body)
	}
	repo := filepath.Join(top, "repo")
	run(top, true, "git", "init", "-q", "-b", "main", repo)
	run(repo, true, "git", "commit", "-q", "--allow-empty", "-m", "init")
	for _, name := range []string{"old", "new"} {
		url := g.cloneURL(name)
		run(repo, true, "git", "push", "-q", url, "main")
		if out := run(repo, false, "git", "-c", "core.hooksPath=/dev/null", "push", url, "HEAD:refs/heads/wt/T-1"); !strings.Contains(out, "FLEET_FENCED") {
			t.Fatalf("%s: a task branch push without the token:\n%s", name, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(g.repos, g.user, "new.git", "hooks", "pre-receive")); !strings.Contains(string(b), "GITEA") {
		t.Fatalf("Gitea's dispatcher is not in the new repository's pre-receive:\n%s", b)
	}
}

// BenchmarkGiteaPush: a push over HTTP to a real Gitea, into a repository
// with wt's fence (a task branch, with the holder's token) and into one
// without it (a plain push of the same kind), one after the other in the
// same run; each iteration pushes one new commit to each. Reported:
// median ms of each and their ratio.
func BenchmarkGiteaPush(b *testing.B) {
	env, runOK := wtTools(b)
	run := func(dir string, name string, args ...string) string { return runOK(dir, true, name, args...) }
	top := b.TempDir()
	g := startGitea(b, env)
	for _, name := range []string{"fenced", "plain", "protected"} {
		if code, body := g.api("POST", "/user/repos", map[string]any{"name": name, "default_branch": "main"}); code != 201 {
			b.Fatalf("create %s: %d %s", name, code, body)
		}
	}
	run(filepath.Join(g.repos, g.user, "fenced.git"), "wt-hook", "install", "--server")
	// The workaround for what the fence cannot see (Gitea's API writes):
	// Gitea's own protection on wt/*, fenced too. Its cost is the
	// protected push against the fenced one.
	run(filepath.Join(g.repos, g.user, "protected.git"), "wt-hook", "install", "--server")
	if code, body := g.api("POST", "/repos/"+g.user+"/protected/branch_protections", map[string]any{"rule_name": "wt/*", "enable_push": true}); code != 201 {
		b.Fatalf("protect wt/*: %d %s", code, body)
	}
	repo := filepath.Join(top, "repo")
	run(top, "git", "init", "-q", "-b", "main", repo)
	run(repo, "git", "commit", "-q", "--allow-empty", "-m", "init")
	run(repo, "git", "remote", "add", "origin", g.cloneURL("fenced"))
	run(repo, "git", "remote", "add", "plain", g.cloneURL("plain"))
	run(repo, "git", "remote", "add", "protected", g.cloneURL("protected"))
	run(repo, "git", "push", "-q", "origin", "main")
	run(repo, "git", "push", "-q", "plain", "main")
	run(repo, "git", "push", "-q", "protected", "main")
	run(repo, "wt-admin", "init")
	run(repo, "wt-admin", "policy", "--fleet-server-fence", "on")
	w := filepath.Join(top, "w1")
	run(repo, "wt-admin", "allocate", "--task", "T-1", "--owner", "alice", w)
	// One wt-exec run pushes, timing each push itself, so that the
	// figure is the push's and not wt-exec's start.
	script := `i=0; while [ $i -lt "$1" ]; do i=$((i+1))
git commit -q --allow-empty -m "c$i"
s=$(date +%s%N); git push -q origin HEAD:refs/heads/wt/T-1; e=$(date +%s%N); echo "fenced $(( (e-s)/1000 ))"
s=$(date +%s%N); git push -q plain HEAD:refs/heads/wt/T-1; e=$(date +%s%N); echo "plain $(( (e-s)/1000 ))"
s=$(date +%s%N); git push -q protected HEAD:refs/heads/wt/T-1; e=$(date +%s%N); echo "protected $(( (e-s)/1000 ))"
done`
	b.ResetTimer()
	out := run(w, "wt-exec", "--", "sh", "-c", script, "sh", fmt.Sprint(b.N))
	b.StopTimer()
	times := map[string][]float64{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var kind string
		var us float64
		if _, err := fmt.Sscanf(line, "%s %f", &kind, &us); err == nil {
			times[kind] = append(times[kind], us/1000)
		}
	}
	median := func(v []float64) float64 {
		if len(v) == 0 {
			return 0
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	f, p, pr := median(times["fenced"]), median(times["plain"]), median(times["protected"])
	b.ReportMetric(f, "fenced-ms")
	b.ReportMetric(p, "plain-ms")
	b.ReportMetric(pr, "fenced+protected-ms")
	if p > 0 && f > 0 {
		b.ReportMetric(f/p, "ratio")
		b.ReportMetric(pr/f, "protection-ratio")
	}
}
