package http

import (
	"math/bits"
	"sync"
)

/*
Large bodies (a request body on the server, a reply body on the client,
past the 64 KiB the small pools keep) are read into buffers taken from
size classes: eight per doubling from 64 KiB to 16 MiB, so a buffer is at
most an eighth larger than the body it was taken for, and bodies of about
the same size share buffers. The classes are sync.Pools: what they hold is
released by the garbage collector within two cycles, so they keep no more
than recent traffic had in use at once. Bodies past 16 MiB get a buffer of
their own.
*/

const (
	// bigMinShift and bigMaxShift bound the pooled capacities: above
	// 1<<bigMinShift and at most 1<<bigMaxShift bytes.
	bigMinShift = 16
	bigMaxShift = 24
	// bigSteps is the number of classes per doubling (a power of two).
	bigSteps = 8
)

var bigPools [(bigMaxShift - bigMinShift) * bigSteps]sync.Pool

// bigClass returns the class of a buffer of at least n bytes (64 KiB < n
// <= 16 MiB) and its capacity.
func bigClass(n int) (class, size int) {
	k := bits.Len(uint(n-1)) - 1 // 2^k < n <= 2^(k+1)
	step := 1 << k / bigSteps
	j := (n - 1 - 1<<k) / step // 0 <= j < bigSteps
	return (k-bigMinShift)*bigSteps + j, 1<<k + (j+1)*step
}

// getBig returns an empty buffer with room for at least n bytes; n must be
// more than 64 KiB.
func getBig(n int) []byte {
	if n > 1<<bigMaxShift {
		return make([]byte, 0, n)
	}
	c, size := bigClass(n)
	if p, _ := bigPools[c].Get().(*[]byte); p != nil {
		return (*p)[:0]
	}
	return make([]byte, 0, size)
}

// putBig returns a buffer taken from getBig; others are left to the
// garbage collector.
func putBig(b []byte) {
	n := cap(b)
	if n <= 1<<bigMinShift || n > 1<<bigMaxShift {
		return
	}
	c, size := bigClass(n)
	if size != n {
		return
	}
	b = b[:0]
	bigPools[c].Put(&b)
}

// bodyBuffer returns an empty buffer with room for n bytes: from the large
// buffers' classes past maxPooledBody.
func bodyBuffer(n int) []byte {
	if n > maxPooledBody {
		return getBig(n)
	}
	return make([]byte, 0, n)
}

// growBody returns b's bytes in a buffer of twice b's capacity, at least
// least bytes and at most most (a body's limit plus the byte that shows it
// is passed): a body of unknown length costs about twice its size in
// allocations, not five times as append's growth of large slices would,
// and never a buffer past its limit. A large b goes back to its class
// (nothing else may hold it).
func growBody(b []byte, least, most int) []byte {
	nb := append(bodyBuffer(min(max(2*cap(b), least), most)), b...)
	if cap(b) > maxPooledBody {
		putBig(b)
	}
	return nb
}
