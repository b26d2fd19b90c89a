package mqtt

import (
	"bufio"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// readBufferSize is the size of a connection's read buffer: a typical A2A
// request or reply, with its fixed header, fits in one read.
const readBufferSize = 8 << 10

// bufferedTCP is a TCP connection whose reads go through a buffer. paho
// reads a packet in several small reads (the first byte, the length one
// byte at a time, then the rest), each a system call on a bare connection;
// through the buffer a packet that arrived whole costs one. Writes are the
// TCP connection's own: the embedded *net.TCPConn keeps the vectored write
// paho's net.Buffers rely on (one writev per packet).
type bufferedTCP struct {
	*net.TCPConn
	r *bufio.Reader
	lingering
}

// newBufferedTCP wraps c. graceful says when Close follows a DISCONNECT
// (nil: never; see lingering).
func newBufferedTCP(c *net.TCPConn, graceful *atomic.Bool) *bufferedTCP {
	return &bufferedTCP{TCPConn: c, r: bufio.NewReaderSize(c, readBufferSize), lingering: newLingering(graceful)}
}

// Read reads from the buffer, refilling it from the connection when empty.
func (c *bufferedTCP) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.sawRead(err)
	return n, err
}

// Close closes the connection, after the broker when it follows a
// DISCONNECT (lingering).
func (c *bufferedTCP) Close() error {
	c.linger(c.TCPConn)
	return c.TCPConn.Close()
}

// lingeringConn is a connection (TLS) whose Close waits for the broker
// after a DISCONNECT, as bufferedTCP's does.
type lingeringConn struct {
	net.Conn
	lingering
}

func (c *lingeringConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.sawRead(err)
	return n, err
}

func (c *lingeringConn) Close() error {
	c.linger(c.Conn)
	return c.Conn.Close()
}

// lingering makes a connection's Close, after a normal DISCONNECT, first
// close the writing side and wait, at most disconnectLinger, for the
// broker to close the connection, which it does once it has read the
// DISCONNECT. Closing at once could reach a broker that serves
// connections on their own goroutines (the embedded one) before it read
// the DISCONNECT; a new connection with the same client id, taking the
// session over, then made it publish the Will of a client that had left
// normally.
type lingering struct {
	// graceful is set once a normal DISCONNECT is sent (nil: never).
	graceful *atomic.Bool
	ended    chan struct{} // closed when a read fails: the broker closed
	endOnce  *sync.Once
}

func newLingering(graceful *atomic.Bool) lingering {
	return lingering{graceful: graceful, ended: make(chan struct{}), endOnce: new(sync.Once)}
}

// sawRead notes a read's error: the connection's reading has ended.
func (l lingering) sawRead(err error) {
	if err != nil {
		l.endOnce.Do(func() { close(l.ended) })
	}
}

// linger closes the writing side of c and waits for the reading side to
// end, when a DISCONNECT was sent.
func (l lingering) linger(c net.Conn) {
	if l.graceful == nil || !l.graceful.Load() {
		return
	}
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	t := time.NewTimer(disconnectLinger)
	defer t.Stop()
	select {
	case <-l.ended:
	case <-t.C:
	}
}

// disconnectLinger bounds how long Close waits for the broker to close
// the connection after a DISCONNECT.
const disconnectLinger = time.Second
