// Command benchmedian reads `go test -bench` output on stdin and prints the
// median of each benchmark's ns/op over its -count runs, and of every
// metric a benchmark reports itself (b.ReportMetric): units "ns/..." are
// times, others plain numbers.
package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

func main() {
	runs := map[string][]float64{}
	var order []string
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		for i := 2; i+1 < len(f); i += 2 {
			unit := f[i+1]
			if unit == "B/op" || unit == "allocs/op" || unit == "MB/s" {
				continue
			}
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			key := f[0]
			if unit != "ns/op" {
				key += " " + unit
			}
			if _, ok := runs[key]; !ok {
				order = append(order, key)
			}
			runs[key] = append(runs[key], v)
		}
	}
	for _, name := range order {
		v := runs[name]
		sort.Float64s(v)
		m := v[len(v)/2]
		if len(v)%2 == 0 {
			m = (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		value := fmt.Sprintf("%.2f", m)
		if fields := strings.Fields(name); len(fields) == 1 || strings.HasPrefix(fields[1], "ns/") {
			value = human(m)
		}
		fmt.Printf("%-60s median %12s  (n=%d)\n", name, value, len(v))
	}
}

func human(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}
