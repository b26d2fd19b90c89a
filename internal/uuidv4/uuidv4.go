// Package uuidv4 makes random (version 4) UUIDs for identifiers the
// requester makes on every call (Task.id, messageId, Correlation Data). It
// reads the system's random source in blocks of 256 UUIDs instead of once
// per UUID, without changing any setting of github.com/google/uuid that an
// application may rely on.
package uuidv4

import (
	"crypto/rand"
	"sync"

	"github.com/google/uuid"
)

// perRead is how many UUIDs one read of the random source serves.
const perRead = 256

var pool struct {
	sync.Mutex
	buf [16 * perRead]byte
	pos int // next unused byte of buf; len(buf) when used up
}

func init() { pool.pos = len(pool.buf) }

// New returns a new random UUID (RFC 9562 version 4) in its canonical
// text form, such as "0b6cf2a1-4f1e-4d7b-9a55-3f1c2d9e8a77".
func New() string {
	var u uuid.UUID
	pool.Lock()
	if pool.pos == len(pool.buf) {
		// crypto/rand.Read does not fail (Go 1.24 and later).
		_, _ = rand.Read(pool.buf[:])
		pool.pos = 0
	}
	copy(u[:], pool.buf[pool.pos:pool.pos+16])
	clear(pool.buf[pool.pos : pool.pos+16])
	pool.pos += 16
	pool.Unlock()
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // variant 10 (RFC 9562)
	return u.String()
}

// WellFormed reports whether s is a UUID in its canonical text form: 36
// characters, hexadecimal digits (either case) in groups of 8-4-4-4-12
// separated by hyphens. Any RFC 9562 version is accepted: peers may mint
// version 7 ids where this package mints version 4.
func WellFormed(s string) bool {
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
