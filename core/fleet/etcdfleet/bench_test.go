package etcdfleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/fleet"
	"github.com/wt-tool/wt/core/fleet/etcdfleet"
	"github.com/wt-tool/wt/core/fleet/etcdtest"
	"github.com/wt-tool/wt/core/store"
)

// BenchmarkAcquireRelease is one fleet lease taken (grant + create-if-absent
// transaction + keep-alive started) and released (revoke), against an
// etcd server in a separate process (WAL fsync on). Each op is one acquire
// and one release.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, where := range []string{"separate-process"} {
		b.Run(where, func(b *testing.B) {
			ep := etcdtest.Start(b)
			co, err := etcdfleet.New([]string{ep}, store.EtcdAuth{}, 0)
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
