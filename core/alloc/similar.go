package alloc

import (
	"strings"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/store"
)

// checkSimilarKey refuses a new task key that is close to the key of a
// live (ACTIVE or RETAINED) task: a typo that would silently start a second
// task. TASK_KEY_SIMILAR names the task meant; --new-task says the key is
// meant as it is.
func checkSimilarKey(tx *store.Tx, task string) error {
	all, err := tx.Allocations()
	if err != nil {
		return err
	}
	for _, a := range all {
		if a.Lifecycle != store.Active && a.Lifecycle != store.Retained || a.TaskKey == task || !SimilarKeys(a.TaskKey, task) {
			continue
		}
		return decision.Say(decision.TaskKeySimilar, "task-key", task, a.TaskKey, a.Lifecycle, a.WorktreePath, a.TaskKey).
			WithFact("similar_task", a.TaskKey).
			WithHint("for task %s, use --task %s; if %s is a new task, say so: add --new-task", a.TaskKey, a.TaskKey, task)
	}
	return nil
}

// SimilarKeys reports whether two different task keys are close enough to
// be one typed wrongly: the same but for case, separators (- _ . /), the
// zero padding of numbers (t-1, T1, T-01 for T-1) and characters that look
// alike (l and 1, o and 0: T-l2 for T-12); or, for keys of five characters
// or more, one edit apart where the edit is not of a digit: a letter
// inserted, dropped, replaced, or two neighbours swapped (fix-logn,
// feature-lgoin for fix-login, feature-login); or, for keys of ten or
// more, two letters dropped (featur-logn for feature-login; not one dropped
// and one added: fix-auth-bug and fix-path-bug are two tasks).
// T-1 and T-2, T-12 or R-1 are different tasks.
func SimilarKeys(a, b string) bool {
	if a == b {
		return false
	}
	a, b = strings.ToLower(a), strings.ToLower(b)
	if lookAlike(unpadded(noSeparators(a))) == lookAlike(unpadded(noSeparators(b))) {
		return true
	}
	// One slip in a word: keys of a few characters (R-1, T-1) differ by
	// one on purpose.
	short := min(len(a), len(b))
	return short >= 5 && editDistance(a, b, true) <= 1 ||
		short >= 10 && (len(a)-len(b) == 2 || len(b)-len(a) == 2) && editDistance(a, b, false) == 2
}

// lookAlike writes the characters that look alike in a key one way (l as
// 1, o as 0), after unpadded: T-l2 and T-12 are one key typed two ways.
func lookAlike(s string) string {
	return unpadded(strings.Map(func(r rune) rune {
		switch r {
		case 'l':
			return '1'
		case 'o':
			return '0'
		}
		return r
	}, s))
}

// editDistance is the number of edits that make b of a, none of them of a
// digit (a digit changed is another task: T-1, T-2): with all set, a byte
// inserted, deleted or replaced, or two neighbours swapped; else inserted
// or deleted only. More than a few is reported as a large number.
func editDistance(a, b string, all bool) int {
	const far = 1 << 20
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
	}
	cost := func(c byte) int {
		if isDigit(c) {
			return far
		}
		return 1
	}
	for i := 1; i <= len(a); i++ {
		d[i][0] = min(d[i-1][0]+cost(a[i-1]), far)
	}
	for j := 1; j <= len(b); j++ {
		d[0][j] = min(d[0][j-1]+cost(b[j-1]), far)
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			best := min(d[i-1][j]+cost(a[i-1]), d[i][j-1]+cost(b[j-1]))
			if a[i-1] == b[j-1] {
				best = min(best, d[i-1][j-1])
			} else if all && !isDigit(a[i-1]) && !isDigit(b[j-1]) {
				best = min(best, d[i-1][j-1]+1)
			}
			if all && i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] && a[i-1] != a[i-2] && !isDigit(a[i-1]) && !isDigit(a[i-2]) {
				best = min(best, d[i-2][j-2]+1)
			}
			d[i][j] = min(best, far)
		}
	}
	return d[len(a)][len(b)]
}

// noSeparators drops the separators a key may be written with or without.
func noSeparators(s string) string {
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune("-_./", r) {
			return -1
		}
		return r
	}, s)
}

// unpadded drops the leading zeros of every run of digits (keeping one
// digit).
func unpadded(s string) string {
	var out strings.Builder
	for i := 0; i < len(s); {
		if !isDigit(s[i]) {
			out.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		run := strings.TrimLeft(s[i:j], "0")
		if run == "" {
			run = "0"
		}
		out.WriteString(run)
		i = j
	}
	return out.String()
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
