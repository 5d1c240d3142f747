//go:build wt_network

package interop_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSharedRepositoryTwoUsers: two server users push one group-shared
// repository (git init --shared=group) with wt's local fence, each under
// its own wt-exec (tasks T-a and T-b). The second user's push used to be
// refused for good (FLEET_UNREACHABLE, permission denied): the fence's
// record directory was made 0755 by the first. It follows
// core.sharedRepository now, so both land. Real users, real pushes
// (receive-pack runs as the pushing user, as over ssh).
func TestSharedRepositoryTwoUsers(t *testing.T) {
	top, bin, run := serverBins(t, "wt-shared-")
	sh := func(wantOK bool, name string, args ...string) string { return run("/", wantOK, nil, name, args...) }
	const group = "wt-interop-share"
	users := []string{"wt-interop-a", "wt-interop-b"}
	sharingGroup(run, group, users...)
	remote := filepath.Join(top, "srv", "app.git")
	sh(true, "git", "init", "-q", "--bare", "--shared=group", "-b", "main", remote)
	sh(true, "chgrp", "-R", group, filepath.Dir(remote))
	sh(true, "chmod", "g+ws", filepath.Dir(remote))
	c := exec.Command(filepath.Join(bin, "wt-hook"), "install", "--server")
	c.Dir = remote
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("install --server: %v\n%s", err, out)
	}
	for _, u := range users {
		task := "T-" + u[len(u)-1:]
		script := fmt.Sprintf(`set -e
export PATH=%[1]s:$PATH GIT_AUTHOR_NAME=%[2]s GIT_AUTHOR_EMAIL=%[2]s@wt.invalid GIT_COMMITTER_NAME=%[2]s GIT_COMMITTER_EMAIL=%[2]s@wt.invalid
git config --global safe.directory '*'
rm -rf c w
git init -q -b main c && git -C c commit -q --allow-empty -m init
wt-admin --repo c init >/dev/null && wt-admin --repo c policy --fleet-server-fence on >/dev/null
wt-admin --repo c allocate --task %[3]s --owner %[2]s w >/dev/null
wt-exec -C w -- sh -c 'git commit -q --allow-empty -m "from %[2]s" && git push -q %[4]s HEAD:refs/heads/wt/%[3]s'
`, bin, u, task, remote)
		out, err := exec.Command("su", "-", u, "-c", script).CombinedOutput()
		if err != nil {
			t.Fatalf("%s's push of %s: %v\n%s", u, task, err, out)
		}
		got, _ := exec.Command("git", "--git-dir", remote, "log", "-1", "--format=%s", "wt/"+task).Output()
		if strings.TrimSpace(string(got)) != "from "+u {
			t.Fatalf("wt/%s on the remote is at %q", task, got)
		}
	}
	st, err := os.Stat(filepath.Join(remote, "wt-fence"))
	if err != nil || st.Mode()&0o070 != 0o070 {
		t.Fatalf("the fence record directory is not the group's: %v %v", st.Mode(), err)
	}
}
