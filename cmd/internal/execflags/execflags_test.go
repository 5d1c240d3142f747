package execflags

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestFlagNamesAreUnique: no two flags, and no flag and alias, share a
// name, and each name is a word the command line can spell.
func TestFlagNamesAreUnique(t *testing.T) {
	t.Parallel()
	word := regexp.MustCompile(`^([a-z][a-z-]*[a-z]|[A-Za-z])$`)
	seen := map[string]string{}
	for _, f := range Flags {
		for _, n := range append([]string{f.Name}, f.Aliases...) {
			if !word.MatchString(n) {
				t.Errorf("--%s: not a flag's name", n)
			}
			if other, ok := seen[n]; ok {
				t.Errorf("%q names both --%s and --%s", n, other, f.Name)
			}
			seen[n] = f.Name
		}
	}
	for name, alias := range map[string]string{"help": "h", "version": "v"} {
		if seen[alias] != name {
			t.Errorf("-%s is %q, want --%s", alias, seen[alias], name)
		}
	}
}

// TestFlagDefaults: a default is one its kind reads (a Duration's in
// time.ParseDuration's form), and an on/off flag has none; --kind and
// --grace default to DefaultKind and DefaultGrace.
func TestFlagDefaults(t *testing.T) {
	t.Parallel()
	defaults := map[string]string{}
	for _, f := range Flags {
		if f.Default == "" {
			continue
		}
		defaults[f.Name] = f.Default
		switch f.Kind {
		case Duration:
			if _, err := time.ParseDuration(f.Default); err != nil {
				t.Errorf("--%s: default %q: %v", f.Name, f.Default, err)
			}
		case Bool, StringSlice:
			t.Errorf("--%s: a %v flag with default %q", f.Name, f.Kind, f.Default)
		}
	}
	if defaults["kind"] != DefaultKind || defaults["grace"] != "10s" || len(defaults) != 2 {
		t.Errorf("defaults %v, want kind %s and grace 10s alone", defaults, DefaultKind)
	}
}

// TestFlagUsage: each usage says something, names at most one value in
// backquotes (the man pages' placeholder), and only for a flag that takes
// a value.
func TestFlagUsage(t *testing.T) {
	t.Parallel()
	for _, f := range Flags {
		if strings.TrimSpace(f.Usage) == "" {
			t.Errorf("--%s has no usage", f.Name)
			continue
		}
		switch n := strings.Count(f.Usage, "`"); {
		case n != 0 && n != 2:
			t.Errorf("--%s: %d backquotes in %q", f.Name, n, f.Usage)
		case n == 2 && f.Kind == Bool:
			t.Errorf("--%s is on or off, but its usage names a value: %q", f.Name, f.Usage)
		case n == 2:
			if p := strings.Split(f.Usage, "`")[1]; p == "" || strings.ToUpper(p) != p {
				t.Errorf("--%s: placeholder %q is not a capitalised word", f.Name, p)
			}
		}
	}
}

// TestSynopsisNamesTheTablesFlags: every flag the synopsis shows is one
// of the table's, with a value exactly when it takes one.
func TestSynopsisNamesTheTablesFlags(t *testing.T) {
	t.Parallel()
	byName := map[string]Flag{}
	for _, f := range Flags {
		byName[f.Name] = f
	}
	if !strings.HasPrefix(Synopsis, Bin+" ") || !strings.Contains(Synopsis, "-- COMMAND [ARG...]") {
		t.Errorf("synopsis %q", Synopsis)
	}
	shown := regexp.MustCompile(`(?:\[|\| )(--?[A-Za-z-]+)( [A-Z]+)?[ \]|]`).FindAllStringSubmatch(Synopsis, -1)
	if len(shown) < 20 {
		t.Fatalf("the synopsis shows %d flags: %q", len(shown), Synopsis)
	}
	for _, m := range shown {
		name := strings.TrimLeft(m[1], "-")
		f, ok := byName[name]
		if !ok {
			t.Errorf("the synopsis shows %s, which is no flag", m[1])
			continue
		}
		if takes := f.Kind != Bool; takes != (m[2] != "") {
			t.Errorf("the synopsis shows %s%s; the flag takes a value: %v", m[1], m[2], takes)
		}
	}
	if Summary == "" || strings.Contains(Summary, "\n") {
		t.Errorf("summary %q", Summary)
	}
}
