package textout

import (
	"fmt"
	"strings"
)

// DidYouMean is " (did you mean PREFIX+NAME?)" for the one of names closest
// to what was typed, when it is close (an edit or two, fewer for a short
// word, or typed is the start of it), else "".
func DidYouMean(typed string, names []string, prefix string) string {
	best, bestD := "", len(typed)
	for _, n := range names {
		if len(n) < 2 || n == typed {
			continue
		}
		d := distance(typed, n)
		if len(typed) >= 3 && strings.HasPrefix(n, typed) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" || bestD > min(2, max(1, len(typed)/3)) {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s%s?)", prefix, best)
}

// distance is the Levenshtein distance between a and b (bytes: command
// and flag names are ASCII).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
