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
		return decision.New(decision.TaskKeySimilar, "task key %s is close to task %s's (%s at %s): did you mean %s?", task, a.TaskKey, a.Lifecycle, a.WorktreePath, a.TaskKey).
			WithFact("similar_task", a.TaskKey).
			WithHint("for task %s, use --task %s; if %s is a new task, say so: add --new-task", a.TaskKey, a.TaskKey, task)
	}
	return nil
}

// SimilarKeys reports whether two different task keys are close enough to
// be one typed wrongly: the same but for case, separators (- _ . /) and
// the zero padding of numbers (t-1, T1, T-01 for T-1), or, for keys of five
// characters or more, one edit apart where the edit is not of a digit
// (fix-logn for fix-login). T-1 and T-2, T-12 or R-1 are different tasks.
func SimilarKeys(a, b string) bool {
	if a == b {
		return false
	}
	a, b = strings.ToLower(a), strings.ToLower(b)
	if unpadded(noSeparators(a)) == unpadded(noSeparators(b)) {
		return true
	}
	// One slip in a word: keys of a few characters (R-1, T-1) differ by
	// one on purpose.
	return min(len(a), len(b)) >= 5 && oneNonDigitEdit(a, b)
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

// oneNonDigitEdit reports whether b is a with one byte inserted, deleted
// or replaced, none of the bytes involved a digit.
func oneNonDigitEdit(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(b)-len(a) > 1 || len(a) < 2 {
		return false
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	if len(a) == len(b) {
		return a[i+1:] == b[i+1:] && !isDigit(a[i]) && !isDigit(b[i])
	}
	return a[i:] == b[i+1:] && !isDigit(b[i])
}
