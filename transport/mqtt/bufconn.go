package mqtt

import (
	"bufio"
	"io"
	"net"
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
	// graceful, when set, makes Close wait for the broker (lingerClose).
	graceful *atomic.Bool
}

// newBufferedTCP wraps c. graceful says when Close follows a DISCONNECT
// (nil: never).
func newBufferedTCP(c *net.TCPConn, graceful *atomic.Bool) *bufferedTCP {
	return &bufferedTCP{TCPConn: c, r: bufio.NewReaderSize(c, readBufferSize), graceful: graceful}
}

// Read reads from the buffer, refilling it from the connection when empty.
func (c *bufferedTCP) Read(p []byte) (int, error) { return c.r.Read(p) }

// Close closes the connection, after the broker when it follows a
// DISCONNECT (lingerClose).
func (c *bufferedTCP) Close() error { return lingerClose(c.TCPConn, c.graceful) }

// lingeringConn is a connection (TLS) whose Close waits for the broker
// after a DISCONNECT, as bufferedTCP's does.
type lingeringConn struct {
	net.Conn
	graceful *atomic.Bool
}

func (c *lingeringConn) Close() error { return lingerClose(c.Conn, c.graceful) }

// lingerClose closes c. After a normal DISCONNECT (graceful set) it first
// closes the writing side and reads, discarding, until the broker closes
// the connection, which it does once it has read the DISCONNECT, or
// disconnectLinger passes. Closing at once could reach a broker that serves
// connections on their own goroutines (the embedded one) before it read
// the DISCONNECT; a new connection with the same client id, taking the
// session over, then made it publish the Will of a client that had left
// normally.
func lingerClose(c net.Conn, graceful *atomic.Bool) error {
	if graceful != nil && graceful.Load() {
		if cw, ok := c.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
			if c.SetReadDeadline(time.Now().Add(disconnectLinger)) == nil {
				_, _ = io.Copy(io.Discard, c)
			}
		}
	}
	return c.Close()
}

// disconnectLinger bounds how long Close waits for the broker to close
// the connection after a DISCONNECT.
const disconnectLinger = time.Second
