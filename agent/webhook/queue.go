package webhook

import "github.com/a2abind/a2abind/generated/a2a"

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

// item is one queued notification: the update as the runtime handed it
// (never changed after Notify, agent.Notifier), encoded by the worker that
// delivers it, and the webhook it goes to. Queues hold items by value.
type item struct {
	ev       *a2a.StreamResponse
	target   *target
	terminal bool
}

// maxScratch bounds the encoding buffer a worker keeps between deliveries:
// a rare huge update does not pin its memory.
const maxScratch = 64 << 10
