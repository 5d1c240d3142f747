package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/store"
)

// TestHolderValueRoundTrip: a process's identity survives the push
// option, and anything but BOOT.PID.START with a positive pid is refused.
func TestHolderValueRoundTrip(t *testing.T) {
	t.Parallel()
	id := proc.Identity{BootID: "3f1c-boot", PID: 4242, StartTicks: 123456789}
	v := HolderValue(id)
	if v != "3f1c-boot.4242.123456789" {
		t.Errorf("HolderValue: %q", v)
	}
	got, err := ParseHolderValue(v)
	if err != nil || got != id {
		t.Errorf("ParseHolderValue(%q) = %+v, %v", v, got, err)
	}
	for _, bad := range []string{"", "b.1", "b.1.2.3", ".1.2", "b.x.2", "b.1.x", "b.0.2", "b.-1.2", "b.1.-2"} {
		if got, err := ParseHolderValue(bad); err == nil || got != (proc.Identity{}) {
			t.Errorf("ParseHolderValue(%q) = %+v, %v; want a refusal", bad, got, err)
		}
	}
}

// TestFenceTokenRoundTrip: a token names its task (which may hold an
// "@"), its epoch and its secret; an old token without a secret, a
// secret not of 32 lower-case hex digits, or an epoch that is not
// positive is refused.
func TestFenceTokenRoundTrip(t *testing.T) {
	t.Parallel()
	secret, err := NewFenceSecret()
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range []string{"T-1", "team@T-2"} {
		tok := FenceToken(task, 77, secret)
		v, ok := strings.CutPrefix(tok, FenceOption+"=")
		if !ok {
			t.Fatalf("FenceToken: %q does not start with the option", tok)
		}
		gt, ge, gs, err := ParseFenceToken(v)
		if err != nil || gt != task || ge != 77 || gs != secret {
			t.Errorf("ParseFenceToken(%q) = %q %d %q %v", v, gt, ge, gs, err)
		}
	}
	hex32 := strings.Repeat("0123456789abcdef", 2)
	for _, bad := range []string{
		"", "T-1", "@5." + hex32, "T-1@5", "T-1@0." + hex32, "T-1@-5." + hex32, "T-1@x." + hex32,
		"T-1@5." + hex32[:31], "T-1@5." + hex32 + "0", "T-1@5." + strings.ToUpper(hex32), "T-1@5." + strings.Repeat("g", 32),
	} {
		if task, epoch, sec, err := ParseFenceToken(bad); err == nil {
			t.Errorf("ParseFenceToken(%q) = %q %d %q; want a refusal", bad, task, epoch, sec)
		}
	}
}

// TestFenceSecretAndHash: secrets are 128 bits of hex, never the same
// twice; the hash is SHA-256 of the secret, which it does not reveal.
func TestFenceSecretAndHash(t *testing.T) {
	t.Parallel()
	a, err1 := NewFenceSecret()
	b, err2 := NewFenceSecret()
	if err1 != nil || err2 != nil || len(a) != 32 || a == b || strings.Trim(a, "0123456789abcdef") != "" {
		t.Fatalf("secrets %q %q (%v %v)", a, b, err1, err2)
	}
	sum := sha256.Sum256([]byte(a))
	if h := FenceHash(a); h != hex.EncodeToString(sum[:]) || strings.Contains(h, a) || FenceHash(b) == h {
		t.Errorf("FenceHash(%q) = %q", a, h)
	}
	if FenceHash("") != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("FenceHash of nothing: %q", FenceHash(""))
	}
}

// TestKeySpaceOfKeys: a task key names its space; the publication key is
// outside every task prefix; anything else has no space.
func TestKeySpaceOfKeys(t *testing.T) {
	t.Parallel()
	if got := SpaceOfKey(Key("abc123", "T-1")); got != "abc123" {
		t.Errorf("SpaceOfKey of a task key: %q", got)
	}
	pub := PublicationKey("abc123")
	if strings.HasPrefix(pub, Prefix("abc123")) || SpaceOfKey(pub) != "" {
		t.Errorf("the publication key %q is inside the task prefix", pub)
	}
	for _, k := range []string{"", "abc/tasks/T-1", "wt/abc", "x/wt/abc/tasks/T-1"} {
		if got := SpaceOfKey(k); got != "" {
			t.Errorf("SpaceOfKey(%q) = %q", k, got)
		}
	}
}

// TestHolderOfNamesThisMachine: the holder record carries the process's
// identity, the local lease and task, this host and this machine's id.
func TestHolderOfNamesThisMachine(t *testing.T) {
	t.Parallel()
	h := proc.Holder{ClientID: "c1", PID: 99, BootID: "boot", StartTicks: 5}
	got := HolderOf(h, "lease-1", "T-9")
	host, _ := os.Hostname()
	machine, _ := os.ReadFile("/etc/machine-id")
	if got.Host != host || got.MachineID != strings.TrimSpace(string(machine)) || got.BootID != "boot" || got.PID != 99 ||
		got.StartTicks != 5 || got.ClientID != "c1" || got.LeaseID != "lease-1" || got.TaskKey != "T-9" || got.Since == "" || got.FenceHash != "" {
		t.Errorf("HolderOf: %+v", got)
	}
	if d := got.Describe(); d != "client c1 on host "+host+" (pid 99, since "+got.Since+")" {
		t.Errorf("Describe: %q", d)
	}
}

// TestResponseCarriesTheDecision: a refusal crosses the helper's pipe and
// comes back as the same decision, holder and revision included; an error
// of no decision crosses as FLEET_UNREACHABLE.
func TestResponseCarriesTheDecision(t *testing.T) {
	t.Parallel()
	if err := (Response{OK: true, Code: "ignored"}).Err(); err != nil {
		t.Errorf("an OK response's error: %v", err)
	}
	h := Holder{Host: "b7", ClientID: "c", PID: 3, TaskKey: "T-1"}
	d := decision.Relay(decision.FleetLeaseHeld, "held by "+h.Describe()).WithHint("wait").
		WithFact("fleet_holder", h).WithFact("fleet_revision", int64(12))
	r := Refusal(d)
	if r.OK || r.Code != decision.FleetLeaseHeld || r.Message != d.Message || r.Hint != "wait" || r.Holder == nil || *r.Holder != h || r.Revision != 12 {
		t.Fatalf("Refusal: %+v", r)
	}
	back, ok := decision.As(r.Err())
	if !ok || back.Code != d.Code || back.Message != d.Message || back.Hint != d.Hint ||
		back.Facts["fleet_holder"] != h || back.Facts["fleet_revision"] != int64(12) {
		t.Errorf("back from the pipe: %+v", back)
	}

	r = Refusal(decision.Relay(decision.FleetFenced, "fenced"))
	if r.Holder != nil || r.Hint != "" {
		t.Errorf("a refusal without holder or hint: %+v", r)
	}
	if back, _ := decision.As(r.Err()); back.Hint != "" || back.Facts != nil {
		t.Errorf("back: %+v", back)
	}

	r = Refusal(os.ErrDeadlineExceeded)
	if r.Code != decision.FleetUnreachable || !strings.Contains(r.Message, os.ErrDeadlineExceeded.Error()) {
		t.Errorf("an error of no decision: %+v", r)
	}
}

// TestDescribeAuthNamesFilesNeverSecrets: each credential is named by its
// file; the password by its file or the variable that holds it.
func TestDescribeAuthNamesFilesNeverSecrets(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a    store.EtcdAuth
		want string
	}{
		{store.EtcdAuth{}, ""},
		{store.EtcdAuth{Cert: "/c.pem", Key: "/k.pem"}, "client certificate /c.pem (key /k.pem)"},
		{store.EtcdAuth{CACert: "/ca.pem"}, "CA /ca.pem"},
		{store.EtcdAuth{User: "wt"}, "user wt (password in $" + PasswordEnv + ")"},
		{store.EtcdAuth{Cert: "/c", Key: "/k", CACert: "/ca", User: "wt", PasswordFile: "/pw"},
			"client certificate /c (key /k); CA /ca; user wt (password in /pw)"},
	} {
		if got := DescribeAuth(c.a); got != c.want {
			t.Errorf("DescribeAuth(%+v) = %q, want %q", c.a, got, c.want)
		}
	}
}
