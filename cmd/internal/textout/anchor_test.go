package textout

import "testing"

// TestAnchor: a command line that names no repository gets the one its
// hint was printed in; one that names it, a version or help request, and
// prose are left as they are; the directory is quoted for the shell.
func TestAnchor(t *testing.T) {
	const dir = "/srv/a repo"
	for _, c := range []struct{ in, want string }{
		{"wt-admin lease list --all", "wt-admin --repo '/srv/a repo' lease list --all"},
		{"see it with wt-admin ps /w1; then wt-exec --wait -- true", "see it with wt-admin --repo '/srv/a repo' ps /w1; then wt-exec -C '/srv/a repo' --wait -- true"},
		{"wt-admin --repo /r status", "wt-admin --repo /r status"},
		{"wt-admin -C /r status", "wt-admin -C /r status"},
		{"wt-exec -C /w -- make", "wt-exec -C /w -- make"},
		{"wait: wt-exec --wait -C /w -- COMMAND (in line)", "wait: wt-exec --wait -C /w -- COMMAND (in line)"},
		{"wt-exec --wait -- wt-admin status", "wt-exec -C '/srv/a repo' --wait -- wt-admin --repo '/srv/a repo' status"},
		{"wt-hook install", "wt-hook -C '/srv/a repo' install"},
		{"wt-hook -C /w check", "wt-hook -C /w check"},
		{"wt-admin version", "wt-admin version"},
		{"register it: wt-admin backfill, then wt-admin --repo /r backfill --apply ID", "register it: wt-admin --repo '/srv/a repo' backfill, then wt-admin --repo /r backfill --apply ID"},
		{"wt-exec --version", "wt-exec --version"},
		{"the wt-exec of client a is gone", "the wt-exec of client a is gone"},
		{"wt-admin pid 12 still runs it", "wt-admin pid 12 still runs it"},
		{"reinstall bin/wt-admin status", "reinstall bin/wt-admin status"},
		{"no command here", "no command here"},
		{"run wt-hook install --server inside the remote repository", "run wt-hook install --server inside the remote repository"},
		{"(cd /top && wt-hook install)", "(cd /top && wt-hook install)"},
		{"cd '/a b' && wt-admin status", "cd '/a b' && wt-admin status"},
	} {
		if got := Anchor(c.in, dir); got != c.want {
			t.Errorf("Anchor(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Anchor("wt-admin status", ""); got != "wt-admin status" {
		t.Errorf("with no directory: %q", got)
	}
}
