//go:build unix

package broker

import "syscall"

// canWriteNow: the socket can be written to without waiting.
const canWriteNow = true

// rawWrite is the write of writeNow, kept with its connection so that a
// write allocates nothing (a closure handed to RawConn.Write would).
type rawWrite struct {
	p   []byte
	n   int
	err error
	fn  func(fd uintptr) bool // do, bound once
}

// do writes what of w.p the socket takes without waiting (Go's network
// sockets are non-blocking).
func (w *rawWrite) do(fd uintptr) bool {
	for w.n < len(w.p) {
		m, e := syscall.Write(int(fd), w.p[w.n:])
		if e == syscall.EINTR {
			continue
		}
		if e != nil {
			if e != syscall.EAGAIN {
				w.err = e
			}
			break
		}
		if m <= 0 {
			break
		}
		w.n += m
	}
	return true // never wait: the writer takes the rest
}

// writeNow writes what of p the socket takes without waiting: n is what
// was written, and err a failure of the connection (a full socket is
// none). Calls are serialised by the caller (sendQueue.mu).
func writeNow(raw syscall.RawConn, w *rawWrite, p []byte) (n int, err error) {
	if w.fn == nil {
		w.fn = w.do
	}
	w.p, w.n, w.err = p, 0, nil
	rerr := raw.Write(w.fn)
	n, err = w.n, w.err
	w.p, w.err = nil, nil
	if err == nil {
		err = rerr
	}
	return n, err
}
