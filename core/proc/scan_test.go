package proc

import (
	"os"
	"testing"
)

// TestNewScanOf: a partial reading holds the processes its filter takes
// and no others; LastPID is at or past every pid handed out so far.
func TestNewScanOf(t *testing.T) {
	self := os.Getpid()
	last, err := LastPID()
	if err != nil {
		t.Skip("no ns_last_pid:", err)
	}
	if last < self && last > 300 {
		t.Logf("pids wrapped since this test started (last %d, self %d)", last, self)
	}
	s, err := NewScanOf(func(pid int) bool { return pid == self || pid == 1 })
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Process(self); !ok || s.Len() > 2 {
		t.Fatalf("the partial reading holds %d processes, self %v", s.Len(), ok)
	}
	if _, ok := s.Process(os.Getppid()); ok && os.Getppid() != 1 {
		t.Fatal("the partial reading holds a process its filter refused")
	}
}
