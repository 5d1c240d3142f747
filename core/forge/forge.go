// Package forge asks the forge a repository's remote is on whether a
// task's branch has an open pull request: the proof ("no open PR") that a
// task's work may be archived, its registration pruned or its lease taken
// over by someone else (docs/design.md, "The publication lease"). Gitea
// and Forgejo are asked through their REST API with a token from a file
// (policy --forge gitea --forge-token-file FILE); GitHub through the gh
// command, which holds its own credentials (policy --forge github). A
// forge that cannot be asked is no evidence that nothing is open: the
// caller refuses (FORGE_UNREACHABLE). It runs no git but `git remote
// get-url`, and never under wt's store lock.
package forge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"time"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/store"
)

// PR is an open pull request.
type PR struct {
	Number int    `json:"number"`
	URL    string `json:"url"`
	Title  string `json:"title"`
}

// Timeout bounds one question to the forge.
const Timeout = 15 * time.Second

// Repo is where a remote URL points on its forge.
type Repo struct {
	// Base is the forge's base URL (scheme, host, port, path prefix).
	Base        string
	Host        string
	Owner, Name string
}

// ParseRemote reads a remote URL (http(s)://, ssh://, or scp-like
// user@host:path) as a forge repository: its last two path components
// are owner and name (".git" dropped). base, when given, is the forge's
// base URL; else it is the URL's scheme and host (https for ssh).
func ParseRemote(raw, base string) (Repo, error) {
	var host, path, scheme string
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && u.Host != "" {
		scheme, host, path = u.Scheme, u.Host, u.Path
		if scheme == "ssh" || scheme == "git" {
			scheme, host = "https", u.Hostname()
		}
	} else if at, rest, ok := strings.Cut(raw, ":"); ok && !strings.Contains(at, "/") {
		// scp-like: [user@]host:owner/name
		if _, h, found := strings.Cut(at, "@"); found {
			at = h
		}
		scheme, host, path = "https", at, rest
	} else {
		return Repo{}, fmt.Errorf("%q is not a URL of a forge's repository", raw)
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) < 2 || parts[len(parts)-2] == "" || parts[len(parts)-1] == "" {
		return Repo{}, fmt.Errorf("%q names no OWNER/REPOSITORY", raw)
	}
	r := Repo{Host: host, Owner: parts[len(parts)-2], Name: strings.TrimSuffix(parts[len(parts)-1], ".git")}
	if base != "" {
		r.Base = strings.TrimRight(base, "/")
	} else {
		r.Base = scheme + "://" + host
	}
	return r, nil
}

// OpenPRs are the open pull requests whose head is branch of the
// repository's own remote on the forge pol names (none when pol names no
// forge). An error means the forge could not be asked: FORGE_UNREACHABLE,
// with what to fix.
func OpenPRs(ctx context.Context, g *gitrepo.Repo, pol store.Policy, branch string) ([]PR, error) {
	if pol.Forge == "" {
		return nil, nil
	}
	remote := pol.ForgeRemote
	if remote == "" {
		remote = "origin"
	}
	top := shell.Word(g.TopLevel)
	out, err := g.Git(ctx, true, "remote", "get-url", "--end-of-options", remote)
	if err != nil {
		return nil, decision.SayWrap(decision.ForgeUnreachable, err, "forge-remote", remote).
			WithHint("name the remote on the forge: wt-admin --repo %s policy --forge-remote NAME", top)
	}
	repo, err := ParseRemote(strings.TrimSpace(string(out)), pol.ForgeURL)
	if err != nil {
		return nil, decision.SayWrap(decision.ForgeUnreachable, err, "remote", remote).
			WithHint("name the remote on the forge: wt-admin --repo %s policy --forge-remote NAME", top)
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	switch pol.Forge {
	case store.ForgeGitea:
		prs, err := giteaOpen(ctx, repo, pol.ForgeTokenFile, branch)
		if err != nil {
			return nil, decision.SayWrap(decision.ForgeUnreachable, err, "ask-open", repo.Base, repo.Owner, repo.Name).
				WithHint("check the forge, its URL and the token (wt-admin --repo %s policy shows them), or stop asking it: wt-admin --repo %s policy --forge none", top, top)
		}
		return prs, nil
	case store.ForgeGitHub:
		prs, err := githubOpen(ctx, repo, branch)
		if err != nil {
			return nil, decision.SayWrap(decision.ForgeUnreachable, err, "ask-github", repo.Owner, repo.Name).
				WithHint("install gh and log in (gh auth login), or stop asking: wt-admin --repo %s policy --forge none", top)
		}
		return prs, nil
	}
	return nil, decision.Say(decision.InvalidPolicy, "forge-not", pol.Forge).
		WithHint("wt-admin --repo %s policy --forge none", top)
}

// Refuse is OPEN_PULL_REQUEST when branch has an open pull request on the
// forge (what says what would have been done), the forge's refusal when
// it cannot be asked, nil when nothing is open.
func Refuse(ctx context.Context, g *gitrepo.Repo, pol store.Policy, branch, what string) error {
	if pol.Forge == "" || branch == "" {
		return nil
	}
	prs, err := OpenPRs(ctx, g, pol, branch)
	if err != nil {
		return err
	}
	if len(prs) == 0 {
		return nil
	}
	var names []string
	for _, p := range prs {
		names = append(names, fmt.Sprintf("#%d %s (%s)", p.Number, p.URL, p.Title))
	}
	return decision.Say(decision.OpenPullRequest, "branch-has", what, branch, strings.Join(names, "; ")).
		WithHint("merge or close it first (%s), then run this again", prs[0].URL).
		WithFact("pull_requests", prs)
}

// giteaPull is what Gitea's and Forgejo's API says of a pull request.
type giteaPull struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
	Title   string `json:"title"`
	Head    struct {
		Ref  string `json:"ref"`
		Repo *struct {
			FullName string `json:"full_name"`
		} `json:"repo"`
	} `json:"head"`
}

// giteaOpen lists the repository's open pull requests from branch, page
// by page (GET /api/v1/repos/{owner}/{repo}/pulls?state=open).
func giteaOpen(ctx context.Context, r Repo, tokenFile, branch string) ([]PR, error) {
	b, err := safefile.Read(tokenFile, 4096, safefile.Follows)
	if err != nil {
		return nil, fmt.Errorf("read the token file: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return nil, fmt.Errorf("the token file %s is empty", tokenFile)
	}
	full := r.Owner + "/" + r.Name
	var out []PR
	const limit = 50
	for page := 1; page <= 100; page++ {
		u := fmt.Sprintf("%s/api/v1/repos/%s/%s/pulls?state=open&limit=%d&page=%d", r.Base, url.PathEscape(r.Owner), url.PathEscape(r.Name), limit, page)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "token "+token)
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s answered %s: %s", u, resp.Status, strings.TrimSpace(string(body)))
		}
		var pulls []giteaPull
		if err := json.Unmarshal(body, &pulls); err != nil {
			return nil, fmt.Errorf("%s: not a list of pull requests: %w", u, err)
		}
		for _, p := range pulls {
			if p.Head.Ref == branch && (p.Head.Repo == nil || strings.EqualFold(p.Head.Repo.FullName, full)) {
				out = append(out, PR{Number: p.Number, URL: p.HTMLURL, Title: p.Title})
			}
		}
		if len(pulls) < limit {
			return out, nil
		}
	}
	return nil, errors.New("more than 5,000 open pull requests: not read to the end")
}

// githubOpen asks gh for the open pull requests from branch (gh pr list
// --head, in the repository itself, not a fork).
func githubOpen(ctx context.Context, r Repo, branch string) ([]PR, error) {
	gh, err := exec.LookPath("gh")
	if err != nil {
		return nil, errors.New("the gh command is not on PATH")
	}
	repo := r.Owner + "/" + r.Name
	if r.Host != "" && r.Host != "github.com" {
		repo = r.Host + "/" + repo
	}
	cmd := exec.CommandContext(ctx, gh, "pr", "list", "--repo", repo, "--head", branch, "--state", "open", "--json", "number,url,title,isCrossRepository")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("gh pr list: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var pulls []struct {
		Number int    `json:"number"`
		URL    string `json:"url"`
		Title  string `json:"title"`
		Cross  bool   `json:"isCrossRepository"`
	}
	if err := json.Unmarshal(out, &pulls); err != nil {
		return nil, fmt.Errorf("gh pr list: not a list of pull requests: %w", err)
	}
	var prs []PR
	for _, p := range pulls {
		if !p.Cross {
			prs = append(prs, PR{Number: p.Number, URL: p.URL, Title: p.Title})
		}
	}
	return prs, nil
}
