package gitversion

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]Version{
		"git version 2.39.5\n":               {2, 39},
		"git version 2.55.0":                 {2, 55},
		"git version 2.39.5.windows.1":       {2, 39},
		"git version 2.50.1 (Apple Git-155)": {2, 50},
		"git version 3.0.0-rc1":              {3, 0},
		"git version 2.54rc0":                {2, 54},
	} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "git version", "git version x.y", "version 2.39.1"} {
		if v, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", bad, v)
		}
	}
	if !(Version{2, 54}).ConfigHooks() || (Version{2, 53}).ConfigHooks() || !(Version{3, 0}).AtLeast(2, 54) {
		t.Error("AtLeast is wrong")
	}
}
