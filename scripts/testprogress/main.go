// Command testprogress reads `go test -json` on stdin and prints progress as
// it comes: a line for every test and first-level subtest that ends (the
// end-to-end package runs for a minute or more, and go test alone prints
// nothing until a package is done), a line for every package, the whole
// output of whatever failed, and a summary of how many passed, failed and
// were skipped. It exits 1 when anything failed, or when the stream shows
// no package result at all.
//
// gotestsum does this and more; this stays because it is a hundred lines
// of the standard library against a dependency (and its own dependencies)
// that make test would have to fetch or vendor, for one output format.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output and build-fail events
	Test       string
	Elapsed    float64
	Output     string
}

type key struct{ pkg, test string }

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}

func run(in io.Reader, out io.Writer) int {
	start := time.Now()
	output := map[key][]string{} // until the test (or package) ends
	var failed []string
	var packages, passed, failedTests, skipped int
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			fmt.Fprintln(out, sc.Text()) // not an event: go's own message, a build error
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "build-fail":
			failed = append(failed, e.ImportPath+" (build)")
		case "output":
			output[k] = append(output[k], e.Output)
		case "pass", "fail", "skip":
			lines := output[k]
			delete(output, k)
			if e.Test == "" {
				packages++
				if e.Action == "skip" {
					fmt.Fprintf(out, "--   %s (no tests)\n", e.Package)
					continue
				}
				fmt.Fprintf(out, "%-4s %s (%.1fs, %s since start)\n", word(e.Action), e.Package, e.Elapsed, time.Since(start).Round(time.Second))
				if e.Action == "fail" {
					failed = append(failed, e.Package)
					fmt.Fprint(out, indent(lines))
					// Tests that never ended (a hang the timeout broke, a
					// crash): their output is what says where they stood.
					for _, t := range unfinished(output, e.Package) {
						fmt.Fprintf(out, "  ---- %s %s never ended; its output:\n", path.Base(e.Package), t)
						fmt.Fprint(out, indent(output[key{e.Package, t}]))
						failed = append(failed, e.Package+" "+t+" (never ended)")
						failedTests++
						delete(output, key{e.Package, t})
					}
				}
				continue
			}
			switch e.Action {
			case "skip":
				skipped++
			case "pass":
				passed++
			default:
				failedTests++
			}
			if strings.Count(e.Test, "/") > 1 && e.Action != "fail" {
				continue // deeper subtests: their parent's line says it
			}
			fmt.Fprintf(out, "  %-4s %s %s (%.1fs)%s\n", word(e.Action), path.Base(e.Package), e.Test, e.Elapsed, skipReason(e.Action, lines))
			if e.Action == "fail" {
				failed = append(failed, e.Package+" "+e.Test)
				fmt.Fprint(out, indent(lines))
			}
		}
	}
	sort.Strings(failed)
	if len(failed) > 0 {
		fmt.Fprintf(out, "FAILED:\n  %s\n", strings.Join(failed, "\n  "))
	}
	if packages == 0 {
		fmt.Fprintln(out, "testprogress: no package result in the stream (did go test start?)")
	}
	// The last line is the counts alone, as test-result readers expect
	// it, whatever failed: what failed is listed above it.
	fmt.Fprintf(out, "%d packages in %s\n", packages, time.Since(start).Round(time.Second))
	fmt.Fprintf(out, "%d passed, %d failed, %d skipped\n", passed, failedTests, skipped)
	if len(failed) > 0 || packages == 0 {
		return 1
	}
	return 0
}

func word(action string) string {
	return map[string]string{"pass": "ok", "fail": "FAIL", "skip": "SKIP"}[action]
}

// skipReason is the last line a skipped test printed (t.Skip's message).
func skipReason(action string, lines []string) string {
	if action != "skip" {
		return ""
	}
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l != "" && !strings.HasPrefix(l, "--- SKIP") && !strings.HasPrefix(l, "=== ") {
			return ": " + l
		}
	}
	return ""
}

func indent(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("    | " + l)
		if !strings.HasSuffix(l, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// unfinished lists, sorted, the tests of pkg that have output but never
// ended.
func unfinished(output map[key][]string, pkg string) []string {
	var ts []string
	for k := range output {
		if k.pkg == pkg && k.test != "" {
			ts = append(ts, k.test)
		}
	}
	sort.Strings(ts)
	return ts
}
