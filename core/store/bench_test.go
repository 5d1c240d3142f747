package store

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/wt-tool/wt/core/ids"
)

// BenchmarkReadOneAllocation reads one allocation, its binding, its
// registration and the registration marker, in a store holding n allocations.
// The cost must not grow with n (docs/format.md: a constant number of files per operation).
func BenchmarkReadOneAllocation(b *testing.B) {
	for _, n := range []int{10, 10000} {
		s, err := Create(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		// Fixtures are written without fsync (10,000 synced writes would take
		// minutes); the benchmark measures reads only.
		var key string
		meta := Meta{SchemaVersion: SchemaVersion, RecordVersion: 1}
		for i := 0; i < n; i++ {
			key = fmt.Sprintf("w%d", i)
			a := Allocation{Meta: meta, AllocationID: ids.New(), TaskKey: key, Owner: "o", Role: RoleFeature,
				Lifecycle: Active, WorktreePath: "/w/" + key, WorktreeKey: key, BaseCommit: "c", ExternalBindings: []string{}}
			reg := Registration{Meta: meta, Contract: RegistrationContract, RegistrationID: ids.New(), WorktreeKey: key,
				WorktreePath: a.WorktreePath, AllocationID: a.AllocationID, CreatedAt: "t"}
			regJSON := mustIndent(b, reg)
			os.MkdirAll(filepath.Join(s.CommonDir(), "worktrees", key), 0o755)
			for path, data := range map[string][]byte{
				filepath.Join(s.Root(), allocationsDir, a.AllocationID+".json"): mustIndent(b, a),
				filepath.Join(s.Root(), bindingsDir, key+".json"):               mustIndent(b, Binding{Meta: meta, WorktreeKey: key, AllocationID: a.AllocationID}),
				filepath.Join(s.Root(), registrationsDir, key+".json"):          regJSON,
				filepath.Join(s.CommonDir(), "worktrees", key, MarkerName):      regJSON,
			} {
				if err := os.WriteFile(path, data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.Run(fmt.Sprintf("allocations=%d", n), func(b *testing.B) {
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				err := s.Read(func(tx *Tx) error {
					bnd, ok, err := tx.Binding(key)
					if err != nil || !ok {
						return fmt.Errorf("binding: %v", err)
					}
					if _, ok, err := tx.Registered(key); err != nil || !ok {
						return fmt.Errorf("registration: %v", err)
					}
					_, err = tx.Allocation(bnd.AllocationID)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func mustIndent(b *testing.B, v any) []byte {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	return append(data, '\n')
}
