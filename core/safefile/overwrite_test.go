package safefile

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestOverwrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	os.WriteFile(p, []byte(`{"a":"longer value"}`+"\n"), 0o644)
	var before unix.Stat_t
	unix.Stat(p, &before)
	if !Overwrite(p, []byte(`{"a":"b"}`+"\n")) {
		t.Fatal("Overwrite of a small regular file refused")
	}
	got, _ := os.ReadFile(p)
	if want := `{"a":"b"}` + "\n" + strings.Repeat(" ", 11); string(got) != want {
		t.Fatalf("read %q, want %q (the new record, then spaces to the old length)", got, want)
	}
	var after unix.Stat_t
	unix.Stat(p, &after)
	if after.Ino != before.Ino {
		t.Fatal("not written in place")
	}
	if !Overwrite(p, []byte(`{"a":"a longer one than before"}`+"\n")) {
		t.Fatal("Overwrite with longer data refused")
	}
	if got, _ := os.ReadFile(p); string(got) != `{"a":"a longer one than before"}`+"\n" {
		t.Fatalf("read %q", got)
	}

	// Refused, and nothing changed: no file, a symlink, a FIFO (without
	// hanging), a directory, a file or data larger than a page.
	os.Symlink(p, filepath.Join(dir, "link"))
	unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644)
	os.Mkdir(filepath.Join(dir, "dir"), 0o755)
	big := filepath.Join(dir, "big")
	os.WriteFile(big, bytes.Repeat([]byte("x"), os.Getpagesize()+1), 0o644)
	for _, name := range []string{"missing", "link", "fifo", "dir", "big"} {
		if Overwrite(filepath.Join(dir, name), []byte("{}\n")) {
			t.Errorf("Overwrite(%s) wrote", name)
		}
	}
	if Overwrite(p, bytes.Repeat([]byte(" "), os.Getpagesize()+1)) {
		t.Error("Overwrite of more than a page wrote")
	}
	if got, _ := os.ReadFile(p); string(got) != `{"a":"a longer one than before"}`+"\n" {
		t.Fatalf("a refused Overwrite changed the file: %q", got)
	}
}

// TestOverwriteKilled: a process SIGKILLed while it rewrites a file in
// place, over and over with two records of different lengths, leaves one
// of them whole every time.
func TestOverwriteKilled(t *testing.T) {
	if os.Getenv("WT_OVERWRITE_LOOP") != "" {
		p := os.Getenv("WT_OVERWRITE_LOOP")
		a, b := []byte(overwriteA), []byte(overwriteB)
		os.Stdout.WriteString("ready\n")
		for {
			Overwrite(p, a)
			Overwrite(p, b)
		}
	}
	dir := t.TempDir()
	for i := range 20 {
		p := filepath.Join(dir, "r.json")
		os.WriteFile(p, []byte(overwriteA), 0o644)
		cmd := exec.Command(os.Args[0], "-test.run=^TestOverwriteKilled$")
		cmd.Env = append(os.Environ(), "WT_OVERWRITE_LOOP="+p)
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		// The kill lands at a different moment of the loop each round
		// (a delay, not a wait for an event: any moment is the point).
		time.Sleep(time.Duration(i%5) * 300 * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		got, _ := os.ReadFile(p)
		trimmed := strings.TrimRight(string(got), " ")
		if trimmed != overwriteA && trimmed != overwriteB {
			t.Fatalf("after SIGKILL the file reads %q", got)
		}
	}
}

const (
	overwriteA = `{"schema_version":1,"record_version":7,"lease_generation":12}` + "\n"
	overwriteB = `{"schema_version":1,"record_version":8,"runtime_bindings":["a much longer value here"],"lease_generation":13}` + "\n"
)
