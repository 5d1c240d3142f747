// Package ids makes and checks the random identifiers of wt's records
// (allocations, leases, registrations, transactions, repositories): RFC
// 9562 version 4 UUIDs in their canonical 36-character form.
//
// It stands in for github.com/google/uuid, which links net, crypto and
// database/sql/driver (their package initialisation, about 0.1 ms, paid at
// every start of every binary, wt-hook's at every commit) for two
// functions that need neither: the random bytes come from getrandom(2).
package ids

import (
	"errors"

	"golang.org/x/sys/unix"
)

const hexDigits = "0123456789abcdef"

// New returns a new random (version 4) UUID, lower case. It panics when the
// kernel gives no random bytes, as google/uuid's New does: getrandom(2)
// fails only on a kernel too old to run wt at all.
func New() string {
	var b [16]byte
	for n := 0; n < len(b); {
		m, err := unix.Getrandom(b[n:], 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			panic("ids: getrandom: " + err.Error())
		}
		n += m
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	out := make([]byte, 0, 36)
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hexDigits[c>>4], hexDigits[c&0x0f])
	}
	return string(out)
}

// Valid reports whether s is a UUID in the canonical form: 36 characters,
// hex digits (either case) in groups of 8, 4, 4, 4 and 12 joined by dashes.
// Version and variant are not checked: a boot id is one too.
func Valid(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}
