package store

import (
	"golang.org/x/sys/unix"

	"os"
	"strings"
	"testing"
)

const (
	oidA = "1111111111111111111111111111111111111111"
	oidB = "2222222222222222222222222222222222222222"
	oidC = "3333333333333333333333333333333333333333"
	zero = "0000000000000000000000000000000000000000"
)

// TestLedger: lines append whole, are read per ref, and what the ledger
// accounts for is its recorded tip, or for a move recorded last (before
// git makes it) the value before it; a birth accounts only for itself.
func TestLedger(t *testing.T) {
	root := t.TempDir()
	const ref = "refs/heads/wt/T-1"
	led, err := ReadLedger(root, "a", ref)
	if err != nil || led.Exists || led.Tip() != "" || led.Accounts(oidA) {
		t.Fatalf("no ledger: %+v %v", led, err)
	}
	must := func(l LedgerLine) {
		t.Helper()
		if err := AppendLedger(root, "a", l); err != nil {
			t.Fatal(err)
		}
	}
	must(LedgerLine{Via: ViaAllocate, Ref: ref, New: oidA})
	led, _ = ReadLedger(root, "a", ref)
	if !led.Accounts(oidA) || led.Accounts(oidB) || led.Accounts("") {
		t.Fatalf("after the birth: %+v", led)
	}
	must(LedgerLine{Via: ViaGate, Ref: ref, Old: oidA, New: oidB, LeaseID: "L"})
	must(LedgerLine{Via: ViaGate, Ref: "refs/heads/other", Old: oidB, New: oidC})
	led, _ = ReadLedger(root, "a", ref)
	if len(led.Lines) != 2 || led.Tip() != oidB || !led.Accounts(oidB) || !led.Accounts(oidA) || led.Accounts(oidC) {
		t.Fatalf("after a move: %+v", led)
	}
	if led.Lines[0].When().IsZero() {
		t.Fatal("a line wt writes has its time")
	}
	// A line the shim wrote (no time, "-" for no lease), a torn last line,
	// a line that is not JSON: the first read, the others counted, never
	// trusted.
	f, _ := os.OpenFile(LedgerPath(root, "a"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"via":"pass","ref":"` + ref + `","old":"` + oidB + `","new":"` + oidC + `","lease_id":"-","generation":0,"client_id":"-"}` + "\n")
	f.WriteString("not json\n")
	f.WriteString(`{"via":"gate","ref":"` + ref + `","old":"` + oidC + `","new":"` + oidA)
	f.Close()
	led, _ = ReadLedger(root, "a", ref)
	if led.Tip() != oidC || led.Bad != 2 || led.Lines[2].LeaseID != "" || !led.Lines[2].When().IsZero() {
		t.Fatalf("with the shim's line and bad ones: %+v", led)
	}
	// A deletion wt made: the branch's absence is accounted for, and the
	// last tip it had is still known.
	os.WriteFile(LedgerPath(root, "a"), nil, 0o644)
	must(LedgerLine{Via: ViaAllocate, Ref: ref, New: oidA})
	must(LedgerLine{Via: ViaFinish, Ref: ref, Old: oidA})
	led, _ = ReadLedger(root, "a", ref)
	if !led.Deleted() || led.LastExisting() != oidA || !led.Accounts("") || !led.Accounts(zero) {
		t.Fatalf("after finish: %+v", led)
	}
}

// TestLedgerTail: the tail reader reads the end of a long ledger whole
// lines only, and its tip is the full reader's.
func TestLedgerTail(t *testing.T) {
	root := t.TempDir()
	const ref = "refs/heads/wt/T-1"
	var b strings.Builder
	for i := 0; i < 3000; i++ {
		old, new := oidA, oidB
		if i%2 == 1 {
			old, new = oidB, oidA
		}
		b.WriteString(`{"t":1,"via":"gate","ref":"` + ref + `","old":"` + old + `","new":"` + new + `","lease_id":"L"}` + "\n")
	}
	os.MkdirAll(root+"/ledger", 0o755)
	os.WriteFile(LedgerPath(root, "a"), []byte(b.String()), 0o644)
	full, err := ReadLedger(root, "a", ref)
	if err != nil || len(full.Lines) != 3000 {
		t.Fatalf("full: %d lines, %v", len(full.Lines), err)
	}
	tail, err := ReadLedgerTail(root, "a", ref)
	if err != nil || tail.Bad != 0 || len(tail.Lines) == 0 || len(tail.Lines) >= 3000 || tail.Tip() != full.Tip() {
		t.Fatalf("tail: %d lines, %d bad, tip %s (full %s), %v", len(tail.Lines), tail.Bad, tail.Tip(), full.Tip(), err)
	}
}

// TestLedgerNotRegular: a FIFO or a symlink planted as a ledger is not
// read (nothing blocks) and not appended to.
func TestLedgerNotRegular(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(root+"/ledger", 0o755)
	if err := mkfifo(LedgerPath(root, "a")); err != nil {
		t.Skip(err)
	}
	if _, err := ReadLedger(root, "a", "refs/heads/x"); err == nil {
		t.Fatal("a FIFO read as a ledger")
	}
	if err := AppendLedger(root, "a", LedgerLine{Via: ViaGate, Ref: "refs/heads/x", New: oidA}); err == nil {
		t.Fatal("a FIFO appended to as a ledger")
	}
	os.Symlink(t.TempDir()+"/elsewhere", LedgerPath(root, "b"))
	if err := AppendLedger(root, "b", LedgerLine{Via: ViaGate, Ref: "refs/heads/x", New: oidA}); err == nil {
		t.Fatal("a symlink followed")
	}
}

func mkfifo(p string) error { return unix.Mkfifo(p, 0o644) }
