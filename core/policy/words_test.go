package policy

import "testing"

// TestWords: OnOff, flagName and maxActiveText say what status and
// the policy command print.
func TestWords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ got, want string }{
		{OnOff(true), "on"},
		{OnOff(false), "off"},
		{flagName("etcd_cacert"), "etcd-cacert"},
		{flagName("max_active"), "max-active"},
		{flagName("confine"), "confine"},
		{maxActiveText(nil), "unlimited"},
		{maxActiveText(ptr(3)), "3"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
