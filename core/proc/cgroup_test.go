package proc

import "testing"

// TestCgroup2MountAgrees: the statfs of the usual places finds the same
// cgroup2 mount as /proc/self/mountinfo does.
func TestCgroup2MountAgrees(t *testing.T) {
	want, err := cgroup2FromMountinfo()
	if err != nil {
		t.Skipf("no cgroup2 here: %v", err)
	}
	got, err := cgroup2Mount()
	if err != nil || got != want {
		t.Fatalf("cgroup2Mount() = %q, %v; mountinfo says %q", got, err, want)
	}
}
