package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedIsCurrent: each generated file is what the generator writes
// for the record types as they are now (run go run ./scripts/genfastjson
// after changing one).
func TestGeneratedIsCurrent(t *testing.T) {
	for _, tg := range Targets() {
		want, err := Generate(tg)
		if err != nil {
			t.Fatalf("%s: %v", tg.Dir, err)
		}
		path := filepath.Join("..", "..", tg.Dir, FileName)
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what the generator writes now: run go run ./scripts/genfastjson", path)
		}
	}
}
