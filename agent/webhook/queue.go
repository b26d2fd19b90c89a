package webhook

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
)

// ring is a FIFO queue in a circular buffer that grows by doubling.
type ring[T any] struct {
	buf  []T
	head int
	n    int
}

func (r *ring[T]) len() int { return r.n }

func (r *ring[T]) push(v T) {
	if r.n == len(r.buf) {
		nb := make([]T, max(4, 2*len(r.buf)))
		for i := range r.n {
			nb[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.n)%len(r.buf)] = v
	r.n++
}

// at returns the i-th oldest element (0 is the head).
func (r *ring[T]) at(i int) T { return r.buf[(r.head+i)%len(r.buf)] }

func (r *ring[T]) pop() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	if r.n == 0 {
		r.head = 0
		if len(r.buf) > 64 {
			r.buf = nil // a drained long queue gives its memory back
		}
	}
	return v
}

// removeAt removes and returns the i-th oldest element, moving the i older
// ones up by one: O(i), and i is 0 but for terminal updates at the head.
func (r *ring[T]) removeAt(i int) T {
	v := r.at(i)
	for j := i; j > 0; j-- {
		r.buf[(r.head+j)%len(r.buf)] = r.buf[(r.head+j-1)%len(r.buf)]
	}
	r.pop()
	return v
}

// item is one encoded notification. Its buffer is recycled when the last of
// its holders lets it go: the queue or the worker delivering it, and every
// request body made from it, which net/http may still be reading after the
// response came back (http.RoundTripper: the body is closed, possibly
// later, by the transport).
type item struct {
	buf      []byte
	terminal bool
	target   *target
	refs     atomic.Int32
}

var items = sync.Pool{New: func() any { return new(item) }}

// maxPooled bounds the buffers kept for reuse: a rare huge update does not
// pin its memory.
const maxPooled = 64 << 10

func newItem() *item {
	it := items.Get().(*item)
	it.refs.Store(1)
	return it
}

// release lets go of one hold on it.
func (it *item) release() {
	if it.refs.Add(-1) != 0 {
		return
	}
	it.target, it.terminal = nil, false
	if cap(it.buf) > maxPooled {
		it.buf = nil
	}
	it.buf = it.buf[:0]
	items.Put(it)
}

// open is the retryablehttp.ReaderFunc of the item: a new hold on it, let
// go when the transport closes the body.
func (it *item) open() (io.Reader, error) {
	it.refs.Add(1)
	b := &body{it: it}
	b.Reset(it.buf)
	return b, nil
}

// body is one request body over an item's buffer; Len gives retryablehttp
// the Content-Length.
type body struct {
	bytes.Reader
	it     *item
	closed atomic.Bool
}

func (b *body) Close() error {
	if b.closed.CompareAndSwap(false, true) {
		b.it.release()
	}
	return nil
}
