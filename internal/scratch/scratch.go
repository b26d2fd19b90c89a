// Package scratch lends buffers to encode small values into before they
// are copied out at their exact size (a task the store keeps, a reply):
// the encoding needs no size estimate and leaves no slack behind.
package scratch

import "sync"

// Keep bounds the buffers the pool keeps: one that grew past it (a value
// larger than its encoder thought) is let go with its encoding.
const Keep = 64 << 10

var pool = sync.Pool{New: func() any { return new([]byte) }}

// Get returns an empty buffer to encode into; give it back with Put.
func Get() *[]byte {
	p := pool.Get().(*[]byte)
	*p = (*p)[:0]
	return p
}

// Put gives back p, whose buffer is now b (what encoding into it
// returned): kept for the next Get up to Keep bytes. Nothing of b may be
// used after Put.
func Put(p *[]byte, b []byte) {
	if cap(b) <= Keep {
		*p = b[:0]
	} else {
		*p = nil
	}
	pool.Put(p)
}
