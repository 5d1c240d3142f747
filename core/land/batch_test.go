package land

import (
	"slices"
	"testing"
)

// chainOf is a chain of n links whose tests say st ('.' not tested, '+'
// passed, '-' failed), one rune a link.
func chainOf(st string) []*link {
	var c []*link
	for _, r := range st {
		l := &link{}
		switch r {
		case '+':
			l.tested = 1
		case '-':
			l.tested = -1
		}
		c = append(c, l)
	}
	return c
}

func TestEndpoints(t *testing.T) {
	for _, c := range []struct {
		chain       string
		batch, jobs int
		want        []int
	}{
		{"..........", 10, 1, []int{10}},           // the whole batch, once
		{"..........", 10, 2, []int{5, 10}},        // and the half a failure tests next
		{"..........", 3, 2, []int{3, 6}},          // speculation: the next batches
		{"..........", 3, 4, []int{3, 6, 9, 10}},   // every batch, the last one short
		{".........-", 10, 1, []int{5}},            // bisection
		{".........-", 10, 2, []int{4, 7}},         // J points at a time
		{"....-....-", 10, 2, []int{2, 4}},         // within the shortest failure
		{"..+.-.....", 10, 1, []int{4}},            // between what passed and what failed
		{"..+-......", 10, 2, []int{}},             // nothing between: the next one is the culprit
		{"...", 1, 2, []int{1, 2}},                 // --batch 1 with two jobs
		{"+.........", 10, 1, []int{10}},           // after what passed, the batch's end
		{"..........", 10, 10, []int{1, 2, 5, 10}}, // never the same prefix twice
		{"-", 1, 1, []int{}},                       // nothing left to test
		{"-.........", 10, 2, []int{}},             // the first alone failed
		{"..-", 3, 3, []int{1, 2}},                 // fewer points than jobs
		{"++++++++++", 10, 2, []int{}},             // all known
		{"....+....-", 10, 2, []int{7, 9}},         // lo 5, hi 10
		{".-.-.-.-.-", 10, 1, []int{1}},            // the first failure bounds it
		{"..........", 4, 1, []int{4}},             // the first batch alone
		{"....+.....", 4, 1, []int{9}},             // past what passed, the next batch
		{".........", 20, 3, []int{2, 4, 9}},       // batch beyond the chain
	} {
		got := endpoints(chainOf(c.chain), c.batch, c.jobs)
		if !slices.Equal(got, c.want) {
			t.Errorf("endpoints(%q, batch %d, jobs %d) = %v, want %v", c.chain, c.batch, c.jobs, got, c.want)
		}
		if len(got) > c.jobs {
			t.Errorf("endpoints(%q, batch %d, jobs %d): %d points, more than the jobs", c.chain, c.batch, c.jobs, len(got))
		}
	}
}

func TestLongestPassed(t *testing.T) {
	for st, want := range map[string]int{"": 0, "...": 0, "+..": 1, "-.+": 3, "++-": 2, "+-+-": 3} {
		if got := longestPassed(chainOf(st)); got != want {
			t.Errorf("longestPassed(%q) = %d, want %d", st, got, want)
		}
	}
}
