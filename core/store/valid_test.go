package store

import (
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
)

// TestValidNames: roles, task keys and owners have their character sets
// (a letter or digit first, 128 bytes at most), and free text holds no
// control character; each refusal has its code.
func TestValidNames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 128)
	for _, c := range []struct {
		what string
		err  error
		want string // "" for accepted
	}{
		{"role feature", ValidRole(RoleFeature), ""},
		{"role audit", ValidRole(RoleAudit), ""},
		{"role integration", ValidRole(RoleIntegration), ""},
		{"role recovery", ValidRole(RoleRecovery), ""},
		{"role boss", ValidRole("boss"), decision.InvalidRole},
		{"role empty", ValidRole(""), decision.InvalidRole},
		{"role in capitals", ValidRole("FEATURE"), decision.InvalidRole},

		{"key T-12", ValidTaskKey("T-12"), ""},
		{"key with a slash, a dot, an underscore", ValidTaskKey("team/fix_1.2"), ""},
		{"key of 128 bytes", ValidTaskKey(long), ""},
		{"key of 129 bytes", ValidTaskKey(long + "a"), decision.InvalidTaskKey},
		{"key empty", ValidTaskKey(""), decision.InvalidTaskKey},
		{"key starting with a dash", ValidTaskKey("-T"), decision.InvalidTaskKey},
		{"key starting with a slash", ValidTaskKey("/T"), decision.InvalidTaskKey},
		{"key with a space", ValidTaskKey("T 1"), decision.InvalidTaskKey},
		{"key with an @", ValidTaskKey("T@1"), decision.InvalidTaskKey},
		{"key with a newline", ValidTaskKey("T\n1"), decision.InvalidTaskKey},
		{"key not ASCII", ValidTaskKey("Tü"), decision.InvalidTaskKey},

		{"owner alice", ValidOwner("alice"), ""},
		{"owner an address", ValidOwner("alice+ci@example.org"), ""},
		{"owner of 128 bytes", ValidOwner(long), ""},
		{"owner of 129 bytes", ValidOwner(long + "a"), decision.InvalidOwner},
		{"owner empty", ValidOwner(""), decision.InvalidOwner},
		{"owner with a slash", ValidOwner("team/alice"), decision.InvalidOwner},
		{"owner starting with an @", ValidOwner("@alice"), decision.InvalidOwner},
		{"owner with a semicolon", ValidOwner("alice;rm"), decision.InvalidOwner},

		{"text a path", ValidText("path", "/tmp/a b/ü"), ""},
		{"text empty", ValidText("path", ""), ""},
		{"text a newline", ValidText("path", "/tmp/a\nb"), decision.Usage},
		{"text an escape", ValidText("reason", "\x1b[31mred"), decision.Usage},
		{"text a DEL", ValidText("reason", "a\x7f"), decision.Usage},
		{"text invalid UTF-8", ValidText("path", "/tmp/\xff"), decision.Usage},
	} {
		if got := decision.CodeOf(c.err); got != c.want {
			t.Errorf("%s: got %q (%v), want %q", c.what, got, c.err, c.want)
		}
	}
	// A refusal's message shows what was given quoted, control characters
	// escaped, and its hint the flag to pass.
	err := ValidTaskKey("T\x1b1")
	d, _ := decision.As(err)
	if !strings.Contains(d.Message, `"T\x1b1"`) || d.Hint != "pass --task KEY, e.g. --task T-12" {
		t.Errorf("ValidTaskKey: %+v", d)
	}
}
