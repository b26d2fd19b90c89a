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
	draw(&u)
	pool.Unlock()
	return u.String()
}

// Pair returns two new random UUIDs, as New does, in one allocation: for
// two ids made together that live as long as each other (a task's id and
// its context's).
func Pair() (string, string) {
	var u, v uuid.UUID
	pool.Lock()
	draw(&u)
	draw(&v)
	pool.Unlock()
	var b [2 * 36]byte
	encode(b[:36], &u)
	encode(b[36:], &v)
	s := string(b[:])
	return s[:36], s[36:]
}

// draw sets u to the next 16 random bytes, made a version 4 UUID. Called
// with pool held.
func draw(u *uuid.UUID) {
	if pool.pos == len(pool.buf) {
		// crypto/rand.Read does not fail (Go 1.24 and later).
		_, _ = rand.Read(pool.buf[:])
		pool.pos = 0
	}
	copy(u[:], pool.buf[pool.pos:pool.pos+16])
	clear(pool.buf[pool.pos : pool.pos+16])
	pool.pos += 16
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // variant 10 (RFC 9562)
}

// encode writes u into dst (36 bytes) in its canonical text form, as
// uuid.UUID.String makes it.
func encode(dst []byte, u *uuid.UUID) {
	const digits = "0123456789abcdef"
	j := 0
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst[j] = '-'
			j++
		}
		dst[j], dst[j+1] = digits[c>>4], digits[c&0xf]
		j += 2
	}
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
