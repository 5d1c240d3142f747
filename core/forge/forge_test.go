package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/store"
	"github.com/wt-tool/wt/internal/gittest"
)

func TestMain(m *testing.M) {
	gittest.Setenv()
	os.Exit(m.Run())
}

func TestParseRemote(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		raw, base string
		want      Repo
	}{
		{"https://git.example.com/team/app.git", "", Repo{Base: "https://git.example.com", Host: "git.example.com", Owner: "team", Name: "app"}},
		{"http://user:pw@127.0.0.1:3000/wt-admin/app.git", "", Repo{Base: "http://127.0.0.1:3000", Host: "127.0.0.1:3000", Owner: "wt-admin", Name: "app"}},
		{"https://host/gitea/team/app", "https://host/gitea/", Repo{Base: "https://host/gitea", Host: "host", Owner: "team", Name: "app"}},
		{"ssh://git@host:2222/team/app.git", "", Repo{Base: "https://host", Host: "host", Owner: "team", Name: "app"}},
		{"git@github.com:team/app.git", "", Repo{Base: "https://github.com", Host: "github.com", Owner: "team", Name: "app"}},
	} {
		got, err := ParseRemote(c.raw, c.base)
		if err != nil || got != c.want {
			t.Errorf("ParseRemote(%q, %q) = %+v, %v; want %+v", c.raw, c.base, got, err, c.want)
		}
	}
	for _, bad := range []string{"/srv/git/app.git", "https://host/app", "app"} {
		if _, err := ParseRemote(bad, ""); err == nil {
			t.Errorf("ParseRemote(%q) took it for a forge's repository", bad)
		}
	}
}

// fakeGitea serves what Gitea's API answers for the open pull requests of
// team/app, with the token it wants; it counts the pages asked.
type fakeGitea struct {
	token string
	pulls []giteaPull
	pages int
}

func (f *fakeGitea) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/repos/team/app/pulls" || r.URL.Query().Get("state") != "open" {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("Authorization") != "token "+f.token {
		http.Error(w, `{"message":"token is required"}`, http.StatusUnauthorized)
		return
	}
	f.pages++
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	from := min((page-1)*limit, len(f.pulls))
	to := min(from+limit, len(f.pulls))
	json.NewEncoder(w).Encode(f.pulls[from:to])
}

func pull(n int, ref, repo string) giteaPull {
	p := giteaPull{Number: n, HTMLURL: fmt.Sprintf("http://forge/team/app/pulls/%d", n), Title: fmt.Sprintf("pr %d", n)}
	p.Head.Ref = ref
	if repo != "" {
		p.Head.Repo = &struct {
			FullName string `json:"full_name"`
		}{repo}
	}
	return p
}

// repoWith is a repository whose origin is url.
func repoWith(t *testing.T, url string) *gitrepo.Repo {
	t.Helper()
	_, dir, _ := gittest.Repo(t)
	gittest.Git(t, dir, "remote", "add", "origin", url)
	return &gitrepo.Repo{TopLevel: dir}
}

func TestGiteaOpenPRs(t *testing.T) {
	t.Parallel()
	f := &fakeGitea{token: "s3cret"}
	// 60 open pull requests (two pages): one from wt/T-1 of the
	// repository itself, one from a fork's wt/T-1, the rest elsewhere.
	for i := 1; i <= 60; i++ {
		switch i {
		case 57:
			f.pulls = append(f.pulls, pull(i, "wt/T-1", "Team/App"))
		case 58:
			f.pulls = append(f.pulls, pull(i, "wt/T-1", "someone/app"))
		default:
			f.pulls = append(f.pulls, pull(i, fmt.Sprintf("wt/T-%d", 100+i), "team/app"))
		}
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	token := filepath.Join(t.TempDir(), "token")
	os.WriteFile(token, []byte("s3cret\n"), 0o600)
	g := repoWith(t, srv.URL+"/team/app.git")
	pol := store.Policy{Forge: store.ForgeGitea, ForgeTokenFile: token}
	ctx := context.Background()

	prs, err := OpenPRs(ctx, g, pol, "wt/T-1")
	if err != nil || len(prs) != 1 || prs[0].Number != 57 || f.pages != 2 {
		t.Fatalf("OpenPRs = %+v, %v (after %d pages); want #57 alone, two pages", prs, err, f.pages)
	}
	err = Refuse(ctx, g, pol, "wt/T-1", "finish would archive task T-1's work")
	if d, _ := decision.As(err); d == nil || d.Code != decision.OpenPullRequest || !strings.Contains(d.Message, "#57 http://forge/team/app/pulls/57 (pr 57)") || !strings.Contains(d.Hint, "pulls/57") {
		t.Errorf("Refuse with #57 open: %v", err)
	}
	if err := Refuse(ctx, g, pol, "wt/T-2", "x"); err != nil {
		t.Errorf("nothing open from wt/T-2: %v", err)
	}

	// A token the forge refuses, a token file that is empty, a forge that
	// does not answer: never taken for "nothing open".
	os.WriteFile(token, []byte("wrong\n"), 0o600)
	if err := Refuse(ctx, g, pol, "wt/T-2", "x"); decision.CodeOf(err) != decision.ForgeUnreachable || !strings.Contains(err.Error(), "401") {
		t.Errorf("a refused token: %v", err)
	}
	os.WriteFile(token, nil, 0o600)
	if err := Refuse(ctx, g, pol, "wt/T-2", "x"); decision.CodeOf(err) != decision.ForgeUnreachable {
		t.Errorf("an empty token file: %v", err)
	}
	srv.Close()
	os.WriteFile(token, []byte("s3cret\n"), 0o600)
	if err := Refuse(ctx, g, pol, "wt/T-2", "x"); decision.CodeOf(err) != decision.ForgeUnreachable {
		t.Errorf("a forge that does not answer: %v", err)
	}
	// No forge: nothing asked.
	if err := Refuse(ctx, g, store.Policy{}, "wt/T-1", "x"); err != nil {
		t.Errorf("no forge: %v", err)
	}
}

// TestGitHubOpenPRs runs gh as GitHub's client would be run: a gh that
// answers as gh pr list --json does (a script; the real gh needs GitHub).
func TestGitHubOpenPRs(t *testing.T) {
	bin := t.TempDir()
	args := filepath.Join(bin, "args")
	os.WriteFile(filepath.Join(bin, "gh"), []byte(`#!/bin/sh
echo "$@" > `+args+`
echo '[{"number":7,"url":"https://github.com/team/app/pull/7","title":"seven","isCrossRepository":false},{"number":8,"url":"https://github.com/team/app/pull/8","title":"fork","isCrossRepository":true}]'
`), 0o755)
	t.Setenv("PATH", bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	g := repoWith(t, "git@github.com:team/app.git")
	prs, err := OpenPRs(context.Background(), g, store.Policy{Forge: store.ForgeGitHub}, "wt/T-1")
	if err != nil || len(prs) != 1 || prs[0].Number != 7 {
		t.Fatalf("OpenPRs = %+v, %v; want #7 alone (not the fork's)", prs, err)
	}
	if b, _ := os.ReadFile(args); strings.TrimSpace(string(b)) != "pr list --repo team/app --head wt/T-1 --state open --json number,url,title,isCrossRepository" {
		t.Errorf("gh was asked: %s", b)
	}
	os.WriteFile(filepath.Join(bin, "gh"), []byte("#!/bin/sh\necho 'gh: not logged in' >&2; exit 4\n"), 0o755)
	if _, err := OpenPRs(context.Background(), g, store.Policy{Forge: store.ForgeGitHub}, "wt/T-1"); decision.CodeOf(err) != decision.ForgeUnreachable || !strings.Contains(err.Error(), "not logged in") {
		t.Errorf("gh failing: %v", err)
	}
}
