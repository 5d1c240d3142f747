package store

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/strictjson"
)

// coldRecords are eight records of the kinds a commit gate and a wt-exec
// run read at their start (repository, policy, allocation, registration,
// lease, runtime, binding, the runtime binding in the worktree), filled.
func coldRecords() []generatedPair {
	return []generatedPair{
		pair[Repository, plainRepository]("Repository"), pair[Policy, plainPolicy]("Policy"),
		pair[Allocation, plainAllocation]("Allocation"), pair[Registration, plainRegistration]("Registration"),
		pair[Lease, plainLease]("Lease"), pair[Runtime, plainRuntime]("Runtime"),
		pair[Binding, plainBinding]("Binding"), pair[proc.RuntimeBinding, plainRuntimeBinding]("RuntimeBinding"),
	}
}

// coldWays are the ways to read them: strictjson with the generated
// decoders; strictjson for a type without them (the strict check, then its
// standard-library path); encoding/json alone, which is not strict (the
// floor).
var coldWays = map[string]func(p generatedPair, data []byte) error{
	"generated":     func(p generatedPair, data []byte) error { return strictjson.Decode(data, p.rec()) },
	"strict-stdlib": func(p generatedPair, data []byte) error { return strictjson.Decode(data, p.plain()) },
	"encoding-json": func(p generatedPair, data []byte) error { return json.Unmarshal(data, p.rec()) },
}

const coldEnv = "WT_TEST_COLD_DECODE"

// TestMain is, with WT_TEST_COLD_DECODE=WAY set, BenchmarkColdDecode's new
// process: it reads the eight records (written by the parent into
// WT_TEST_COLD_DOCS) once, the first JSON this process decodes, prints how
// long that took in nanoseconds, and runs no test.
func TestMain(m *testing.M) {
	if way := os.Getenv(coldEnv); way != "" {
		os.Exit(coldDecode(way))
	}
	os.Exit(m.Run())
}

func coldDecode(way string) int {
	raw, err := os.ReadFile(os.Getenv("WT_TEST_COLD_DOCS"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	docs := strings.Split(string(raw), "\n\x00\n")
	recs := coldRecords()
	start := time.Now()
	for i, p := range recs {
		if err := coldWays[way](p, []byte(docs[i])); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", p.name, err)
			return 1
		}
	}
	fmt.Printf("cold-ns %d\n", time.Since(start).Nanoseconds())
	return 0
}

// BenchmarkColdDecode: what reading the first eight records costs a new
// process (a commit gate, a wt-exec run), each way: every iteration starts
// this test binary afresh, and the metric is the child's own time for the
// eight decodes (encoding/json's first-use analysis of each type
// included), not the process start.
func BenchmarkColdDecode(b *testing.B) {
	var docs []string
	for _, p := range coldRecords() {
		v := p.rec()
		fill(reflect.ValueOf(v).Elem(), 0)
		data, err := strictjson.MarshalIndent(v)
		if err != nil {
			b.Fatal(err)
		}
		docs = append(docs, string(data))
	}
	file := b.TempDir() + "/docs"
	if err := os.WriteFile(file, []byte(strings.Join(docs, "\n\x00\n")), 0o600); err != nil {
		b.Fatal(err)
	}
	for _, way := range []string{"generated", "strict-stdlib", "encoding-json"} {
		b.Run(way, func(b *testing.B) {
			var total int64
			for b.Loop() {
				cmd := exec.Command(os.Args[0])
				cmd.Env = append(os.Environ(), coldEnv+"="+way, "WT_TEST_COLD_DOCS="+file)
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				_, after, ok := strings.Cut(string(out), "cold-ns ")
				line, _, _ := strings.Cut(after, "\n")
				n, err := strconv.ParseInt(line, 10, 64)
				if !ok || err != nil {
					b.Fatalf("no time in %q", out)
				}
				total += n
			}
			b.ReportMetric(float64(total)/float64(b.N)/1e3, "cold-µs/8-records")
		})
	}
}
