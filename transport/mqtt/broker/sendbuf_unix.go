//go:build unix

package broker

import "syscall"

// canWriteNow: the socket can be written to without waiting.
const canWriteNow = true

// writeNow writes what of p the socket takes without waiting (it is
// non-blocking, as Go's network sockets are): n is what was written, and
// err a failure of the connection (a full socket is none).
func writeNow(raw syscall.RawConn, p []byte) (n int, err error) {
	rerr := raw.Write(func(fd uintptr) bool {
		for n < len(p) {
			m, e := syscall.Write(int(fd), p[n:])
			if e == syscall.EINTR {
				continue
			}
			if e != nil {
				if e != syscall.EAGAIN {
					err = e
				}
				break
			}
			if m <= 0 {
				break
			}
			n += m
		}
		return true // never wait: the writer takes the rest
	})
	if err == nil {
		err = rerr
	}
	return n, err
}
