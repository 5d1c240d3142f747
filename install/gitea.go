package install

import (
	"bufio"
	"bytes"
	"cmp"
	"os"
	"path/filepath"
	"strings"

	"github.com/wt-tool/wt/core/safefile"
)

// GiteaGitHome reports whether the repository hooks dir hooksDir is in
// Gitea's (or Forgejo's) layout, its pre-receive a name dispatcher
// (NameDispatcher), and the home Gitea runs git with there: the
// configuration Gitea's git reads (init.templateDir included) is
// home/.gitconfig, not the git user's own. home is [git] HOME_PATH of the
// app.ini that pre-receive.d/gitea names (`APP hook --config=APP_INI
// pre-receive`), relative to [server] APP_DATA_PATH, itself relative to
// WORK_PATH (else $GITEA_WORK_DIR, else APP's directory), with Gitea's
// defaults "home" and "data"; "" when that app.ini cannot be read.
func GiteaGitHome(hooksDir string) (home string, gitea bool) {
	p := filepath.Join(hooksDir, "pre-receive")
	if b, err := safefile.Read(p, 1<<20, safefile.Follows); err != nil || !NameDispatcher(b) {
		return "", false
	}
	b, err := safefile.Read(filepath.Join(p+".d", "gitea"), 1<<20, safefile.Follows)
	if err != nil {
		return "", true
	}
	app, conf := giteaHookCommand(b)
	if !filepath.IsAbs(conf) {
		return "", true
	}
	ini, err := safefile.Read(conf, 1<<20, safefile.Follows)
	if err != nil {
		return "", true
	}
	v := iniValues(ini)
	work := cmp.Or(v["WORK_PATH"], os.Getenv("GITEA_WORK_DIR"))
	if work == "" && filepath.IsAbs(app) {
		work = filepath.Dir(app)
	}
	data := under(work, cmp.Or(v["server.APP_DATA_PATH"], "data"))
	if home = under(data, cmp.Or(v["git.HOME_PATH"], "home")); !filepath.IsAbs(home) {
		return "", true
	}
	return home, true
}

// under is p, or p under dir when p is relative.
func under(dir, p string) string {
	if filepath.IsAbs(p) || dir == "" {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// giteaHookCommand reads Gitea's pre-receive.d/gitea, whose command is
// `APP hook --config=APP_INI pre-receive`, and returns APP and APP_INI.
func giteaHookCommand(script []byte) (app, conf string) {
	for _, line := range strings.Split(string(script), "\n") {
		if before, after, ok := strings.Cut(line, " hook --config="); ok {
			conf, _ = strings.CutSuffix(strings.TrimSpace(after), " pre-receive")
			return unquoteGitea(strings.TrimSpace(before)), unquoteGitea(conf)
		}
	}
	return "", ""
}

// unquoteGitea undoes Gitea's util.ShellEscape of a path: none, or double
// quotes (with \ before $ ` " \\), or single quotes.
func unquoteGitea(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return strings.NewReplacer(`\$`, `$`, "\\`", "`", `\"`, `"`, `\\`, `\`).Replace(s[1 : len(s)-1])
	}
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], `'\''`, `'`)
	}
	return s
}

// iniValues reads an app.ini as Gitea does for the few keys wt asks: KEY
// = VALUE lines, "section.KEY" after a [section] line, quotes around a
// value taken off.
func iniValues(b []byte) map[string]string {
	v := map[string]string{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == ';' || line[0] == '#' {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = strings.TrimSpace(line[1 : len(line)-1])
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if len(val) >= 2 && (val[0] == '"' || val[0] == '`') && val[len(val)-1] == val[0] {
			val = val[1 : len(val)-1]
		}
		if section != "" && section != "DEFAULT" {
			key = section + "." + key
		}
		v[key] = val
	}
	return v
}
