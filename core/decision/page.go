package decision

import (
	"fmt"
	"strings"
)

// Described is one code of the table as wt-admin version --json lists it
// (decision_table).
type Described struct {
	Code    string `json:"code"`
	Section string `json:"section"`
	Kind    string `json:"kind"`
	// Exit is wt-admin's, wt-hook's and wt-gate's exit status when the
	// code is the outcome, ExecExit wt-exec's (-1: never an exit).
	Exit     int    `json:"exit"`
	ExecExit int    `json:"exec_exit"`
	Meaning  string `json:"meaning"`
	Words    []Form `json:"words"`
}

// Describe is the table, code by code, in its order.
func Describe() []Described {
	var out []Described
	for _, sec := range Table {
		for _, s := range sec.Codes {
			words := s.Words
			if words == nil {
				words = []Form{}
			}
			out = append(out, Described{Code: s.Code, Section: sec.Title, Kind: s.Kind.String(), Exit: s.Exit(), ExecExit: s.ExecExit(), Meaning: s.Meaning, Words: words})
		}
	}
	return out
}

const pageHead = `# Decision codes

<!-- Generated from core/decision/table.go: go test ./core/decision -run TestDecisionCodesPage -update -->

Every refusal and every outcome of wt carries one of these codes: on stderr as ` + "`CODE: message`" + `
(with a ` + "`hint:`" + ` line naming the command to run), and in ` + "`--json`" + ` output as ` + "`code`" + `. Codes are
API: scripts branch on them, and a code is never renamed. ` + "`wt-admin version --json`" + ` lists the
codes a binary knows (` + "`decision_codes`" + `) and this table (` + "`decision_table`" + `).

Exit statuses: wt-admin, wt-hook and wt-gate exit 0 on success, 1 on a refusal, 2 on a usage error.
wt-exec exits with its command's status (dying by the command's signal), 125 when it refused
or failed before the command started, 126 when the command cannot be run, 127 when it is not
found. A *notice* is said on the way and the command goes on; a *finding* is reported inside
another outcome (status, doctor, audit, a plan's blockers).

Each code's messages are listed under it: the words, with ` + "`%s`" + `, ` + "`%d`" + ` and the like where a value goes,
and the key a package raises them by, then the forms of the hints it is raised with: a hint is
written where the refusal is raised (it is the command to run for that place), and this page
gathers them from there. A message that meets a refusal on the way to something else puts it in
a context (the last section).
`

// Page is docs/decision-codes.md: the table in Markdown, with the hints
// each code is raised with (hints, by code: written where they are
// raised, gathered from the sources by the page's test).
func Page(hints map[string][]string) string {
	var b strings.Builder
	b.WriteString(pageHead)
	for _, sec := range Table {
		title := sec.Title
		if sec.Note != "" {
			title += " (" + sec.Note + ")"
		}
		fmt.Fprintf(&b, "\n## %s\n\n| code | exit | meaning |\n|---|---|---|\n", title)
		for _, s := range sec.Codes {
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", s.Code, exitCell(s), s.Meaning)
		}
		for _, s := range sec.Codes {
			if len(s.Words) == 0 && len(hints[s.Code]) == 0 {
				continue
			}
			fmt.Fprintf(&b, "\n`%s`:\n\n", s.Code)
			for _, f := range s.Words {
				fmt.Fprintf(&b, "- `%s`: %s\n", f.Key, mdWords(f.Words))
			}
			for _, h := range hints[s.Code] {
				fmt.Fprintf(&b, "- hint: %s\n", mdWords(h))
			}
		}
	}
	b.WriteString("\n## Shared words\n\nWords that several codes say alike (the code tells them apart):\n\n")
	for _, f := range Shared {
		fmt.Fprintf(&b, "- `%s`: %s\n", f.Key, mdWords(f.Words))
	}
	b.WriteString("\n## Contexts\n\nA refusal met on the way to something else, in the words of its context (its own words at the end):\n\n")
	for _, f := range Contexts {
		fmt.Fprintf(&b, "- `%s`: %s\n", f.Key, mdWords(f.Words))
	}
	return b.String()
}

func exitCell(s Spec) string {
	switch s.Kind {
	case Notice, Finding:
		return s.Kind.String()
	}
	if s.Code == Interrupted {
		return fmt.Sprintf("%d (wt-exec 128+N for signal N)", s.Exit())
	}
	if x := s.ExecExit(); x >= 0 {
		return fmt.Sprintf("%d (wt-exec %d)", s.Exit(), x)
	}
	return fmt.Sprint(s.Exit())
}

// mdWords is a form's words as Markdown code, safe in a list item.
func mdWords(w string) string {
	if strings.Contains(w, "`") {
		return "`` " + w + " ``"
	}
	return "`" + w + "`"
}
