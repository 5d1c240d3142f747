package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedIsCurrent: each generated file is what the generator writes
// for the record types as they are now (run go run -tags wt_genfastjson ./scripts/genfastjson
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
			t.Errorf("%s is not what the generator writes now: run go run -tags wt_genfastjson ./scripts/genfastjson", path)
		}
	}
}

// TestBuildsWithStaleFiles: with its tag, the generator builds while the
// generated files do not (here replaced, by an overlay, with one that
// names a field no record has).
func TestBuildsWithStaleFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build")
	}
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.go")
	src := "//go:build !" + Tag + "\n\npackage store\n\nfunc (x *Lease) DecodeFastJSON() { _ = x.NoSuchField }\n"
	if err := os.WriteFile(stale, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	target, err := filepath.Abs(filepath.Join("..", "..", "core", "store", FileName))
	if err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(dir, "overlay.json")
	b, _ := json.Marshal(map[string]any{"Replace": map[string]string{target: stale}})
	os.WriteFile(overlay, b, 0o644)
	if out, err := exec.Command("go", "build", "-overlay", overlay, "-o", os.DevNull, ".").CombinedOutput(); err == nil {
		t.Fatalf("without its tag the generator built against a broken generated file:\n%s", out)
	}
	if out, err := exec.Command("go", "build", "-tags", Tag, "-overlay", overlay, "-o", os.DevNull, ".").CombinedOutput(); err != nil {
		t.Fatalf("with its tag the generator does not build beside a stale generated file: %v\n%s", err, out)
	}
}
