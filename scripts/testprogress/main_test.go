package main

import (
	"strings"
	"testing"
)

// TestRun: progress lines as events end, the output of what failed, and
// the exit status.
func TestRun(t *testing.T) {
	stream := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestA","Elapsed":1.5}`,
		`{"Action":"output","Package":"p","Test":"TestB/sub","Output":"    b_test.go:9: boom\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestB/sub","Elapsed":0.1}`,
		`{"Action":"fail","Package":"p","Test":"TestB","Elapsed":0.1}`,
		`{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:3: no landlock here\n"}`,
		`{"Action":"output","Package":"p","Test":"TestC","Output":"--- SKIP: TestC (0.00s)\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestC","Elapsed":0}`,
		`{"Action":"fail","Package":"p","Elapsed":2}`,
		`{"Action":"pass","Package":"q","Elapsed":0.2}`,
	}, "\n")
	var out strings.Builder
	if code := run(strings.NewReader(stream), &out); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"  ok   p TestA (1.5s)", "  FAIL p TestB/sub (0.1s)", "    |     b_test.go:9: boom",
		"  SKIP p TestC (0.0s): c_test.go:3: no landlock here", "FAIL p (2.0s", "ok   q (0.2s", "FAILED:\n  p\n  p TestB\n  p TestB/sub",
		"2 packages in "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// The last line is the plain counts, a failure's too.
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); lines[len(lines)-1] != "1 passed, 2 failed, 1 skipped" {
		t.Errorf("the last line is %q, want the counts alone", lines[len(lines)-1])
	}
	out.Reset()
	if code := run(strings.NewReader(`{"Action":"pass","Package":"q","Elapsed":0.2}`), &out); code != 0 {
		t.Errorf("all passed: exit %d\n%s", code, out.String())
	}
	if code := run(strings.NewReader("go: no Go files\n"), &out); code != 1 {
		t.Errorf("no package result: exit %d, want 1", code)
	}
	if code := run(strings.NewReader(`{"ImportPath":"r","Action":"build-fail"}`+"\n"+`{"Action":"pass","Package":"q"}`), &out); code != 1 {
		t.Errorf("build failure: exit %d, want 1", code)
	}
}

// TestRunHang: a test the timeout broke never ends; the package's
// failure carries its output (where it stood), and it counts as failed.
func TestRunHang(t *testing.T) {
	stream := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"pass","Package":"p","Test":"TestA","Elapsed":1}`,
		`{"Action":"run","Package":"p","Test":"TestStuck"}`,
		`{"Action":"output","Package":"p","Test":"TestStuck","Output":"=== RUN   TestStuck\n"}`,
		`{"Action":"output","Package":"p","Test":"TestStuck","Output":"goroutine 7 [chan receive, 29 minutes]:\n"}`,
		`{"Action":"output","Package":"p","Output":"panic: test timed out after 30m0s\n"}`,
		`{"Action":"fail","Package":"p","Elapsed":1800}`,
	}, "\n")
	var out strings.Builder
	if code := run(strings.NewReader(stream), &out); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"panic: test timed out", "p TestStuck never ended", "    | goroutine 7 [chan receive, 29 minutes]:", "  p TestStuck (never ended)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); lines[len(lines)-1] != "1 passed, 1 failed, 0 skipped" {
		t.Errorf("the last line is %q", lines[len(lines)-1])
	}
}
