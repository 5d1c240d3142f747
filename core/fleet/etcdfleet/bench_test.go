package etcdfleet_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/fleet/etcdfleet"
	"github.com/wt-tool/wt/core/fleet/etcdtest"
)

// TestMain lets this test binary be a separate etcd server process: with
// WT_TEST_ETCD_SERVE=DIR:CLIENT_PORT:PEER_PORT it serves until SIGTERM.
func TestMain(m *testing.M) {
	if spec := os.Getenv("WT_TEST_ETCD_SERVE"); spec != "" {
		var dir string
		var cp, pp int
		if _, err := fmt.Sscanf(spec, "%d:%d:%s", &cp, &pp, &dir); err != nil {
			os.Exit(2)
		}
		if err := etcdtest.Serve(dir, cp, pp, func() { os.WriteFile(filepath.Join(dir, "..", "ready"), nil, 0o644) }); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// separateEtcd starts this binary as an etcd server process until the
// benchmark ends.
func separateEtcd(b *testing.B) string {
	cp, err := etcdtest.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	pp, err := etcdtest.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	top := b.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("WT_TEST_ETCD_SERVE=%d:%d:%s", cp, pp, filepath.Join(top, "data")))
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(top, "ready")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the etcd process did not become ready")
		}
	}
	return "http://127.0.0.1:" + strconv.Itoa(cp)
}

// BenchmarkAcquireRelease is one fleet lease taken (grant + create-if-absent
// transaction + keep-alive started) and released (revoke), against an
// etcd server in this process and against one in a separate process (each
// with its WAL fsync on). Each op is one acquire and one release.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, where := range []string{"embedded", "separate-process"} {
		b.Run(where, func(b *testing.B) {
			var ep string
			if where == "embedded" {
				ep = etcdtest.Start(b)
			} else {
				ep = separateEtcd(b)
			}
			co, err := etcdfleet.New([]string{ep}, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer co.Close()
			ctx := context.Background()
			h := holder("bench")
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s, err := co.Acquire(ctx, fleet.Key("bench", "T-1"), h, 10*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
