package proc

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	tail := " S 1 100 100 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 1000 200 18446744073709551615\n"
	tests := []struct {
		name    string
		line    string
		comm    string
		ppid    int
		pgrp    int
		ticks   uint64
		wantErr bool
	}{
		{name: "plain", line: "42 (sleep)" + tail, comm: "sleep", ppid: 1, pgrp: 100, ticks: 98765},
		{name: "spaces", line: "42 (my prog)" + tail, comm: "my prog", ppid: 1, pgrp: 100, ticks: 98765},
		{name: "parens", line: "42 (a) (b) c))" + tail, comm: "a) (b) c)", ppid: 1, pgrp: 100, ticks: 98765},
		{name: "fake fields in comm", line: "42 (x) R 9 9 9 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 7)" + tail, comm: "x) R 9 9 9 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 7", ppid: 1, pgrp: 100, ticks: 98765},
		{name: "empty comm", line: "42 ()" + tail, comm: "", ppid: 1, pgrp: 100, ticks: 98765},
		{name: "truncated", line: "42 (sleep) S 1 100 100 0", wantErr: true},
		{name: "no parens", line: "42 sleep S 1", wantErr: true},
		{name: "bad pid", line: "x (sleep)" + tail, wantErr: true},
		{name: "bad ticks", line: "42 (sleep) S 1 100 100 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 -5 1000\n", wantErr: true},
		{name: "empty", line: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := ParseStat([]byte(tt.line))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseStat(%q) = %+v, want error", tt.line, st)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.PID != 42 || st.Comm != tt.comm || st.PPID != tt.ppid || st.PGRP != tt.pgrp || st.StartTicks != tt.ticks || st.State != 'S' {
				t.Fatalf("ParseStat(%q) = %+v", tt.line, st)
			}
		})
	}
}

func TestReadStatSelf(t *testing.T) {
	st, err := ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.PID != os.Getpid() || st.PPID != os.Getppid() || st.StartTicks == 0 {
		t.Fatalf("ReadStat(self) = %+v (ppid %d)", st, os.Getppid())
	}
	if _, err := ReadStat(1 << 30); err != ErrNoProcess {
		t.Fatalf("ReadStat(absent) err = %v, want ErrNoProcess", err)
	}
}

// FuzzParseStat checks that the parser never panics and that whatever it
// accepts is consistent with the text: the comm is what lies between the
// first '(' and the last ')'.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0\n"))
	f.Add([]byte("42 (a) (b) c)) S 1 100 100 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 1000\n"))
	f.Add([]byte("7 ()) R 1 1 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ParseStat(b)
		if err != nil {
			return
		}
		if st.PID < 1 {
			t.Fatalf("accepted pid %d", st.PID)
		}
		open, closing := -1, -1
		for i, c := range b {
			if c == '(' && open < 0 {
				open = i
			}
			if c == ')' {
				closing = i
			}
		}
		if st.Comm != string(b[open+1:closing]) {
			t.Fatalf("comm %q is not the text between the first '(' and the last ')'", st.Comm)
		}
	})
}
